"""Every kind of bad input raises conversion.FormatError naming the file and line or token, and a
failed conversion writes nothing."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

import conversion
from conversion import FormatError
from hf_bbpe import Tokenizer

DATA = Path(__file__).resolve().parents[1] / "data"
MIX_SAMPLE = DATA / "text" / "mix-sample.txt"
ENCODER = (DATA / "gpt2" / "encoder.json").read_text(encoding="utf-8")
VOCAB_BPE = (DATA / "gpt2" / "vocab.bpe").read_text(encoding="utf-8")


def _tiny_ranks() -> list[tuple[bytes, int]]:
    return [(bytes([b]), b) for b in range(256)] + [(b"ab", 256), (b"abc", 257)]


def _rank_file(path: Path, rows: list[tuple[bytes, int]]) -> Path:
    path.write_bytes(b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in rows))
    return path


def _gpt2_pair(tmp_path: Path, encoder: str = ENCODER, vocab_bpe: str = VOCAB_BPE) -> tuple[Path, Path]:
    (tmp_path / "encoder.json").write_text(encoder, encoding="utf-8")
    (tmp_path / "vocab.bpe").write_text(vocab_bpe, encoding="utf-8")
    return tmp_path / "encoder.json", tmp_path / "vocab.bpe"


# ------------------------------------------------------------------ GPT-2 files

def test_truncated_json(tmp_path):
    enc, bpe = _gpt2_pair(tmp_path, encoder=ENCODER[: len(ENCODER) // 2])
    with pytest.raises(FormatError, match=r"encoder.json:1: invalid JSON \(truncated\?\)"):
        conversion.from_gpt2_files(enc, bpe)


def test_non_object_json(tmp_path):
    enc, bpe = _gpt2_pair(tmp_path, encoder="[1, 2, 3]")
    with pytest.raises(FormatError, match=r"encoder.json:1: expected an object of token -> id, got a JSON list"):
        conversion.from_gpt2_files(enc, bpe)


def test_duplicate_ids_in_encoder(tmp_path):
    encoder = json.loads(ENCODER)
    encoder["Ġthe"] = encoder["Ġa"]
    enc, bpe = _gpt2_pair(tmp_path, encoder=json.dumps(encoder))
    with pytest.raises(FormatError, match=r"encoder.json: tokens 'Ġa' and 'Ġthe' have the same id 257"):
        conversion.from_gpt2_files(enc, bpe)


def test_duplicate_key_in_encoder(tmp_path):
    enc, bpe = _gpt2_pair(tmp_path, encoder=ENCODER[:-1] + ', "!": 0}')
    with pytest.raises(FormatError, match=r"encoder.json: key '!' appears twice"):
        conversion.from_gpt2_files(enc, bpe)


def test_missing_version_header(tmp_path):
    enc, bpe = _gpt2_pair(tmp_path, vocab_bpe=VOCAB_BPE.split("\n", 1)[1])
    with pytest.raises(FormatError, match=r"vocab.bpe:1: expected the header line '#version: 0.2', got 'Ġ t'"):
        conversion.from_gpt2_files(enc, bpe)


def test_unknown_symbol_in_vocab_bpe(tmp_path):
    lines = VOCAB_BPE.split("\n")
    lines[5] = "h ☺"
    enc, bpe = _gpt2_pair(tmp_path, vocab_bpe="\n".join(lines))
    with pytest.raises(FormatError, match=r"vocab.bpe:6: '☺' \(U\+263A\) in 'h ☺' is not a byte-level symbol"):
        conversion.from_gpt2_files(enc, bpe)


@pytest.mark.parametrize("line", ["h e r", "he", "h  e"])
def test_wrong_field_count_in_vocab_bpe(tmp_path, line):
    lines = VOCAB_BPE.split("\n")
    lines[7] = line
    enc, bpe = _gpt2_pair(tmp_path, vocab_bpe="\n".join(lines))
    with pytest.raises(FormatError, match=r"vocab.bpe, line 8: expected two tokens separated by one space"):
        conversion.from_gpt2_files(enc, bpe)


def test_merge_naming_a_missing_token(tmp_path):
    encoder = json.loads(ENCODER)
    del encoder["Ġthe"]  # built on some line, used by later ones
    enc, bpe = _gpt2_pair(tmp_path, encoder=json.dumps(encoder))
    with pytest.raises(FormatError, match=r"vocab.bpe, line \d+: the merged token 'Ġthe' is not in .*encoder.json"):
        conversion.from_gpt2_files(enc, bpe)


def test_merge_using_a_token_before_it_is_built(tmp_path):
    lines = VOCAB_BPE.split("\n")
    lines.insert(2, "Ġt he")  # after "Ġ t"; "he" is built on a later line
    enc, bpe = _gpt2_pair(tmp_path, vocab_bpe="\n".join(lines))
    with pytest.raises(FormatError, match=r"vocab.bpe, line 3: token 'he' is used before a merge makes it"):
        conversion.from_gpt2_files(enc, bpe)


def test_token_whose_merge_line_is_missing_loads_as_an_unmerged_token(tmp_path):
    """A vocab.json token that no merges.txt line builds loads as a normal token that the merges
    never produce (as tokenizers and GPT2Tokenizer treat it), not as a silent special token; a
    declared special token is special."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers

    lines = VOCAB_BPE.rstrip("\n").split("\n")
    last = lines.pop()
    enc, bpe = _gpt2_pair(tmp_path, vocab_bpe="\n".join(lines) + "\n")
    token = last.replace(" ", "")
    tok = conversion.from_gpt2_files(enc, bpe)
    assert tok.unmerged_tokens == {50255: tok.vocab[50255]} and tok.special_tokens == {"<|endoftext|>": 50256}
    hf = HFTokenizer(models.BPE.from_file(str(enc), str(bpe)))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    text = "commemoration " + tok.decode([50255]) * 3 + " Gazette"
    assert tok.encode_ordinary(text) == hf.encode(text).ids
    assert 50255 not in tok.encode_ordinary(text) and tok.decode([50255]) == tok.vocab[50255].decode()
    declared = conversion.from_gpt2_files(enc, bpe, special_tokens={token: 50255, "<|endoftext|>": 50256})
    assert declared.special_tokens[token] == 50255


def test_failed_gpt2_export_writes_nothing(tmp_path):
    dup = Tokenizer.from_merges({(97, 98): 256, (98, 99): 257, (256, 99): 258, (97, 257): 259})
    out = tmp_path / "out"
    with pytest.raises(FormatError, match="tokens 258 and 259 are the same bytes b'abc'"):
        conversion.to_gpt2_files(dup, out)
    assert not out.exists()


# ------------------------------------------------------------------ tiktoken files

@pytest.mark.parametrize("index, line, message", [
    (10, b"a$== 10", r"x.tiktoken:11: bad base64 b'a\$=='"),  # a character outside base64
    (3, b"YWJ 3", r"x.tiktoken:4: bad base64 b'YWJ'"),  # bad padding
], ids=["character", "padding"])
def test_bad_base64(tmp_path, index, line, message):
    path = _rank_file(tmp_path / "x.tiktoken", _tiny_ranks())
    lines = path.read_bytes().split(b"\n")
    lines[index] = line
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(FormatError, match=message):
        conversion.from_tiktoken(path)


@pytest.mark.parametrize("line,message", [
    (b"YQ== 97 extra", r"x.tiktoken:98: expected '<base64 token> <rank>', got 3 fields"),
    (b"YQ==", r"x.tiktoken:98: expected '<base64 token> <rank>', got 1 fields"),
    (b"  ", r"x.tiktoken:98: expected '<base64 token> <rank>', got 0 fields"),
    (b"YQ== -97", r"x.tiktoken:98: rank b'-97' is out of range 0 \.\. 4294967295"),
    (b"YQ== 97x", r"x.tiktoken:98: rank b'97x' is not an integer"),
    (b"YQ== 12345678901234567890123", r"x.tiktoken:98: rank b'12345678901234567890123' is out of range"),
])
def test_bad_rank_lines(tmp_path, line, message):
    path = _rank_file(tmp_path / "x.tiktoken", _tiny_ranks())
    lines = path.read_bytes().split(b"\n")
    lines[97] = line
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(FormatError, match=message):
        conversion.from_tiktoken(path)


def test_duplicate_rank(tmp_path):
    rows = _tiny_ranks()
    rows[-1] = (b"abc", 256)
    path = _rank_file(tmp_path / "x.tiktoken", rows)
    with pytest.raises(FormatError, match=r"x.tiktoken:258: rank 256 is already used on line 257"):
        conversion.from_tiktoken(path)


@pytest.mark.parametrize("layout", ["regular", "bom"])
def test_token_listed_twice_keeps_its_last_rank_as_tiktoken_does(tmp_path, layout):
    """load_tiktoken_bpe builds a dict: the last rank of a token listed twice wins and the first is
    a hole. Same ids as tiktoken on real text, the same n_vocab, and the hole decodes as no token."""
    rows = _tiny_ranks() + [(b"ab", 258), (b"x", 259)]  # "ab" listed again; the byte "x" too
    path = _rank_file(tmp_path / "x.tiktoken", rows)
    if layout == "bom":  # the line-by-line reader instead of the bulk one
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    reference = _tiktoken_encoding(path, r"\S+|\s+", special_tokens={"<|eot|>": 300})
    with pytest.warns(UserWarning, match=r"x.tiktoken:260: token b'x' is listed again \(rank 259; line 121 gave "
                                         r"it rank 120\).*id 120 is left unused \(2 such line"):
        tok = conversion.from_tiktoken(path, pattern=r"\S+|\s+", special_tokens={"<|eot|>": 300})
    assert tok.mergeable_ranks() == reference._mergeable_ranks
    assert tok.n_vocab == reference.n_vocab == 301
    text = MIX_SAMPLE.read_text(encoding="utf-8")[:20000] + " abc ab xab xyz"
    assert tok.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")
    assert tok.encode_ordinary("ab x") == reference.encode_ordinary("ab x") == [258, 32, 259]
    for hole in (256, 120):  # the first rank of "ab", and of the byte "x"
        with pytest.raises(KeyError):
            reference.decode([hole])
        with pytest.raises(ValueError, match=f"unknown token id {hole}"):
            tok.decode([hole])
    assert tok.decode([258, 259]) == reference.decode([258, 259]) == "abx"


def test_rank_freed_by_a_token_listed_again_may_be_reused(tmp_path):
    """tiktoken checks ranks for duplicates after the dict is built, so a rank that only a
    replaced line used is free; a rank two kept tokens share is refused, naming both lines."""
    rows = _tiny_ranks() + [(b"ab", 258), (b"xy", 256)]
    _check_repeat_read_as_tiktoken(_rank_file(tmp_path / "x.tiktoken", rows), "ab xy abc")
    path = _rank_file(tmp_path / "x.tiktoken", rows + [(b"zz", 258)])
    with pytest.warns(UserWarning), pytest.raises(FormatError, match=r"x.tiktoken:261: rank 258 is already used on "
                                                                     r"line 259"):
        conversion.from_tiktoken(path)


def test_token_listed_twice_with_ranks_past_the_line_count(tmp_path):
    """The bulk reader finds the repeat by ids, not line numbers: ranks far past the number of
    lines (up to 2**32 - 2) still fall back to tiktoken's dict reading, last rank kept."""
    rows = _tiny_ranks() + [(b"xyz", 2**32 - 2), (b"xy", 5000), (b"xyz", 70000)]
    _check_repeat_read_as_tiktoken(_rank_file(tmp_path / "x.tiktoken", rows), "xyz abc xyzab")


def _check_repeat_read_as_tiktoken(path: Path, text: str) -> None:
    """A file with a token listed again loads, with a warning, to tiktoken's ranks and ids."""
    reference = _tiktoken_encoding(path, r"\S+|\s+")
    with pytest.warns(UserWarning, match="is listed again"):
        tok = conversion.from_tiktoken(path, pattern=r"\S+|\s+")
    assert tok.mergeable_ranks() == reference._mergeable_ranks
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)


def test_special_token_colliding_with_a_normal_id(tmp_path):
    path = _rank_file(tmp_path / "x.tiktoken", _tiny_ranks())
    with pytest.raises(FormatError, match=r"x.tiktoken: special token '<\|eot\|>' has id 257, which is already a normal token"):
        conversion.from_tiktoken(path, special_tokens={"<|eot|>": 257})
    with pytest.raises(FormatError, match=r"special tokens '<\|a\|>' and '<\|b\|>' share the id 300"):
        conversion.from_tiktoken(path, special_tokens={"<|a|>": 300, "<|b|>": 300})


def test_unbuildable_token_in_rank_file_is_reached_as_tiktoken_reaches_it(tmp_path):
    """A token no merge of lower ranks builds loads (as tiktoken loads it) and encodes as tiktoken does."""
    rows = _tiny_ranks() + [(b"xyz", 258), (b"yz", 259)]
    path = _rank_file(tmp_path / "x.tiktoken", rows)
    tok = conversion.from_tiktoken(path, pattern=r"\S+|\s+")
    assert tok.mode == "ranks" and tok.unmerged_tokens == {258: b"xyz"}
    reference = _tiktoken_encoding(path, r"\S+|\s+")
    for text in ["xyz", "xyzxyz abc xyzab", "wxyz yz xy"]:
        assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert tok.encode_ordinary("xyz") == [258]


def _tiktoken_encoding(path: Path, pattern: str, special_tokens: dict | None = None):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    return tiktoken.Encoding("t", pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(str(path)),
                             special_tokens=special_tokens or {})


@pytest.mark.parametrize("edit", ["bom", "empty_token", "signed_and_underscored_ranks", "crlf", "junk_in_base64"])
def test_rank_files_tiktoken_accepts_load_with_its_ids(tmp_path, edit):
    """What tiktoken's load_tiktoken_bpe + Encoding accept loads here, with the same ranks and ids."""
    rows = _tiny_ranks() + [(b"xyz", 258)]
    path = _rank_file(tmp_path / "x.tiktoken", rows)
    data = path.read_bytes()
    if edit == "bom":
        data = b"\xef\xbb\xbf" + data
    elif edit == "empty_token":
        data += b"= 300\n"
    elif edit == "signed_and_underscored_ranks":
        data = data.replace(b" 257\n", b" +257\n").replace(b" 258\n", b" 2_5_8\n")
    elif edit == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif edit == "junk_in_base64":
        data = data.replace(b"YWJj 257", b"YW*Jj 257")
    path.write_bytes(data)
    reference = _tiktoken_encoding(path, r"\S+|\s+")
    if edit == "junk_in_base64":
        with pytest.warns(UserWarning, match=r"x.tiktoken:258: base64 with characters outside its alphabet"):
            tok = conversion.from_tiktoken(path, pattern=r"\S+|\s+")
    else:
        tok = conversion.from_tiktoken(path, pattern=r"\S+|\s+")
    assert tok.mergeable_ranks() == reference._mergeable_ranks
    for text in ["abc xyz ab", "xyzabc", ""]:
        assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    if edit == "empty_token":
        assert tok.decode_single_token_bytes(300) == b"" and tok.unmerged_tokens[300] == b""


def test_rank_too_large_for_tiktoken_is_a_format_error(tmp_path):
    """tiktoken itself raises a bare OverflowError building the Encoding; we name file and line."""
    path = _rank_file(tmp_path / "x.tiktoken", _tiny_ranks())
    path.write_bytes(path.read_bytes() + b"eHl6 12345678901234567890123\n")
    with pytest.raises(FormatError, match=r"x.tiktoken:259: rank b'12345678901234567890123' is out of range"):
        conversion.from_tiktoken(path)


def _cl100k_with_ranks(tmp_path: Path, moved: dict[bytes, int]) -> Path:
    """tiktoken's own cl100k_base rank file with the tokens of ``moved`` given those ranks."""
    import tiktoken_ext

    lines = (Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken").read_bytes().splitlines()
    wanted = {base64.b64encode(token): rank for token, rank in moved.items()}
    rows = [line.split() for line in lines]
    assert len(wanted.keys() & {b64 for b64, _ in rows}) == len(moved)
    path = tmp_path / "wide.tiktoken"
    path.write_bytes(b"".join(b64 + b" " + str(wanted.get(b64, int(r))).encode() + b"\n" for b64, r in rows))
    return path


@pytest.mark.parametrize("moved", [
    {b"ing": 2**31 - 1, b" the": 2**31, b" and": 2**32 - 2, b"er": 2**32 - 1},
    {b"ing": 2**32 - 2, b"e": 2**32 - 1},  # a single byte at tiktoken's "no rank" value
], ids=["merged_tokens", "single_byte"])
def test_every_rank_tiktoken_takes_gives_its_ids(tmp_path, moved):
    """tiktoken's ranks are u32, so every rank up to 2**32 - 1 loads and encodes with tiktoken's
    ids: cl100k with frequent tokens moved to 2**31 - 1, 2**31, 2**32 - 2 and 2**32 - 1, compared
    on the whole mixed sample through encode, batches (threads, numpy), decode, the pure-Python
    encoder and a pickled copy. tiktoken reads 2**32 - 1 as "no rank" in its merge loops, so that
    token is reached only as a whole chunk (or a single byte), never by a merge; so here too."""
    import pickle

    import regex

    from hf_bbpe import GPT4_SPLIT_PATTERN
    from hf_bbpe.engine.encoding.encoder import ChunkEncoder

    special = {"<|endoftext|>": 100257}
    path = _cl100k_with_ranks(tmp_path, moved)
    reference = _tiktoken_encoding(path, GPT4_SPLIT_PATTERN, special_tokens=special)
    tok = conversion.from_tiktoken(path, pattern="gpt4", special_tokens=special)
    text = MIX_SAMPLE.read_text(encoding="utf-8")
    docs = [doc for doc in text.split("\n\n") if doc] + ["er", "ering", " the<|endoftext|>e"]
    whole = text + "<|endoftext|>er ering" + text[:999]  # "er" as a whole chunk
    expected = reference.encode(whole, allowed_special="all")
    assert set(moved.values()) <= set(expected)  # each moved token is met
    assert tok.encode(whole, allowed_special="all") == expected
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert tok.encode_to_numpy(text, disallowed_special=()).tolist() == reference.encode_ordinary(text)
    long = text * (600_000 // len(text) + 1)  # past the size that a long text is cut on threads
    assert tok.encode_ordinary(long, num_threads=2) == reference.encode_ordinary(long)
    by_doc = reference.encode_batch(docs, allowed_special="all")
    assert tok.encode_batch(docs, num_threads=2, allowed_special="all") == by_doc
    ids, offsets = tok.encode_batch_to_numpy(docs, num_threads=2, allowed_special="all")
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == by_doc
    assert tok.decode_bytes(expected) == reference.decode_bytes(expected)
    for token, rank in moved.items():
        assert tok.decode_single_token_bytes(rank) == token and tok.encode_single_piece(token) == [rank]
    assert tok.n_vocab == reference.n_vocab == 2**32
    python = ChunkEncoder({}, tok.byte_ids, mode="ranks", vocab=tok.vocab, native=False)
    pieces = [piece.encode() for piece in regex.findall(GPT4_SPLIT_PATTERN, text)]
    assert [i for piece in pieces for i in python.encode_bytes(piece)] == reference.encode_ordinary(text)
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.encode_batch(docs, num_threads=2, allowed_special="all") == by_doc
    if b"er" in moved:  # reached whole, never merged: recovered as a token without a merge
        assert tok.unmerged_tokens[2**32 - 1] == b"er" and 2**32 - 1 not in tok.merges.values()


def test_tokenizer_json_carries_u32_ids(tmp_path):
    """``tokenizers``' ids are u32 too: the exported tokenizer.json runs in ``tokenizers`` with
    tiktoken's ids and reads back to them. It lists no merge into id 2**32 - 1 (tiktoken makes
    none); a file that does, read as ranks, would differ from ``tokenizers``, so it is refused."""
    from tokenizers import Tokenizer as HFTokenizer

    from hf_bbpe import GPT4_SPLIT_PATTERN

    path = _cl100k_with_ranks(tmp_path, {b" the": 2**31, b"ing": 2**32 - 2, b"er": 2**32 - 1})
    reference = _tiktoken_encoding(path, GPT4_SPLIT_PATTERN)
    text = MIX_SAMPLE.read_text(encoding="utf-8") + " er ering"
    expected = reference.encode_ordinary(text)
    out = tmp_path / "tokenizer.json"
    conversion.to_tokenizer_json(conversion.from_tiktoken(path, pattern="gpt4"), out)
    assert HFTokenizer.from_file(str(out)).encode(text).ids == expected
    assert conversion.load(out).encode_ordinary(text) == expected
    data = json.loads(out.read_text(encoding="utf-8"))
    data["model"]["merges"].append(["e", "r"])
    out.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match=r"tokenizer.json: model.merges merges b'e' \+ b'r' into b'er' \(id "
                                          r"4294967295\): tokenizers makes that token by a merge"):
        conversion.load(out)


def test_missing_byte_beside_rank_2_32_minus_1_is_named(tmp_path):
    """A rank file without "%" whose ranks reach 2**32 - 1: the byte's stand-in id lies past u32,
    and every path (list, threads, numpy) still raises MissingByteError naming the byte."""
    from hf_bbpe import GPT4_SPLIT_PATTERN, MissingByteError

    path = _cl100k_with_ranks(tmp_path, {b"er": 2**32 - 1})
    path.write_bytes(b"".join(line for line in path.read_bytes().splitlines(keepends=True)
                              if not line.startswith(b"JQ== ")))  # "%" is rank 4
    reference = _tiktoken_encoding(path, GPT4_SPLIT_PATTERN)
    tok = conversion.from_tiktoken(path, pattern="gpt4")
    docs = ["hello er ering 50%d", MIX_SAMPLE.read_text(encoding="utf-8")[:3000].replace("%", "")]
    assert tok.encode_batch(docs, num_threads=2) == reference.encode_ordinary_batch(docs)
    ids, offsets = tok.encode_batch_to_numpy(docs, num_threads=2)
    assert ids.tolist() == [i for doc in docs for i in reference.encode_ordinary(doc)]
    for encode in (tok.encode_ordinary, tok.encode_to_numpy, lambda text: tok.encode_batch(["x", text], num_threads=2),
                   lambda text: tok.encode_batch_to_numpy(["x", text], num_threads=2)):
        with pytest.raises(MissingByteError, match=r"cannot encode the byte b'%'"):
            encode("x%")


def test_rank_above_u32_is_refused_naming_the_line(tmp_path):
    """2**32 overflows tiktoken's u32 ranks (a bare OverflowError); we name the file, line and limit."""
    import tiktoken

    with pytest.raises(OverflowError):
        tiktoken.Encoding("t", pat_str=r"\S+", mergeable_ranks=dict(_tiny_ranks()) | {b"xyz": 2**32}, special_tokens={})
    path = _rank_file(tmp_path / "x.tiktoken", _tiny_ranks() + [(b"xyz", 2**32)])
    with pytest.raises(FormatError, match=r"x.tiktoken:259: rank b'4294967296' is out of range 0 \.\. 4294967295 "
                                          r"\(tiktoken's ranks are u32"):
        conversion.from_tiktoken(path)


def test_missing_file():
    with pytest.raises(FormatError, match=r"nope.tiktoken: cannot read"):
        conversion.from_tiktoken("/nonexistent/nope.tiktoken")


# ------------------------------------------------------------------ tokenizer.json and minbpe

def _tokenizer_json(tmp_path: Path, edit=None) -> Path:
    from hf_bbpe import RegexTokenizer
    from hf_bbpe.hf.tokenizer_json_writer import tokenizer_json_dict

    tok = RegexTokenizer("gpt4")
    tok.train("hello world, hello there, hello again", 270, progress=False)
    data = tokenizer_json_dict(tok)
    if edit:
        edit(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_tokenizer_json_truncated(tmp_path):
    path = _tokenizer_json(tmp_path)
    path.write_text(path.read_text()[:-40])
    with pytest.raises(FormatError, match=r"tokenizer.json:1: invalid JSON"):
        conversion.from_tokenizer_json(path)


def test_tokenizer_json_merge_naming_a_missing_token(tmp_path):
    def edit(data):
        data["model"]["merges"].append(["Ġhello", "Ġnowhere"])

    with pytest.raises(FormatError, match=r"model.merges\[\d+\] = 'Ġhello' 'Ġnowhere' names 'Ġnowhere', which is not in model.vocab"):
        conversion.from_tokenizer_json(_tokenizer_json(tmp_path, edit))


def test_tokenizer_json_bad_symbol(tmp_path):
    def edit(data):
        data["model"]["vocab"]["h☺"] = 999

    with pytest.raises(FormatError, match=r"model.vocab token '☺' \(U\+263A\) in 'h☺' is not a byte-level symbol"):
        conversion.from_tokenizer_json(_tokenizer_json(tmp_path, edit))


def test_tokenizer_json_wrong_model(tmp_path):
    def edit(data):
        data["model"]["type"] = "WordPiece"

    with pytest.raises(FormatError, match=r"tokenizer.json: model must be BPE, got 'WordPiece'"):
        conversion.from_tokenizer_json(_tokenizer_json(tmp_path, edit))


def test_bad_minbpe_model(tmp_path):
    path = tmp_path / "x.model"
    path.write_text("minbpe v1\n\n0\n97 98\n256 oops\n")
    with pytest.raises(FormatError, match=r"x.model:5: expected a merge"):
        conversion.from_minbpe(path)
    path.write_text("minbpe v2\n")
    with pytest.raises(FormatError, match=r"x.model:1: expected the header"):
        conversion.from_minbpe(path)


# ------------------------------------------------------------------ special-token ids, in every importer

FAR = 2_000_000_000  # an id that would make a two-billion-row embedding


def _added_token(content: str, idx: int) -> dict:
    return {"id": idx, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


@pytest.mark.parametrize("bad_id, problem", [(-1, "negative id -1"), (FAR, "more than 2**20 above")])
def test_every_importer_rejects_bad_special_ids(tmp_path, bad_id, problem):
    """The engine's one check runs for tiktoken files, tiktoken Encodings, GPT-2 files, GPT-2-style
    folders, tokenizer.json and .model files; each error names the file and the token."""
    import re

    import tiktoken

    def expect(call, source: str) -> None:
        with pytest.raises(FormatError, match=re.escape(problem)) as caught:
            call()
        assert source in str(caught.value) and "'<|bad|>'" in str(caught.value), str(caught.value)

    rank_file = _rank_file(tmp_path / "x.tiktoken", _tiny_ranks())
    expect(lambda: conversion.from_tiktoken(rank_file, special_tokens={"<|bad|>": bad_id}), "x.tiktoken")
    ranks = {token: rank for token, rank in _tiny_ranks()}
    if bad_id >= 0:  # tiktoken itself refuses negative ids
        encoding = tiktoken.Encoding("tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks,
                                     special_tokens={"<|bad|>": bad_id})
        expect(lambda: conversion.from_tiktoken(encoding), "'tiny'")

    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    enc, bpe = _gpt2_pair(gpt2)
    expect(lambda: conversion.from_gpt2_files(enc, bpe, special_tokens={"<|endoftext|>": 50256, "<|bad|>": bad_id}),
           "encoder.json")
    folder = tmp_path / "hf_folder"
    folder.mkdir()
    (folder / "vocab.json").write_text(ENCODER, encoding="utf-8")
    (folder / "merges.txt").write_text(VOCAB_BPE, encoding="utf-8")
    (folder / "added_tokens.json").write_text(json.dumps({"<|bad|>": bad_id}), encoding="utf-8")
    expect(lambda: conversion.from_transformers_gpt2(folder), "vocab.json")

    def add_bad(data):
        data["added_tokens"].append(_added_token("<|bad|>", bad_id))
        data["model"]["vocab"]["<|bad|>"] = bad_id

    if bad_id >= 0:  # a negative id in model.vocab is refused earlier, as a bad vocabulary id
        expect(lambda: conversion.from_tokenizer_json(_tokenizer_json(tmp_path, add_bad)), "tokenizer.json")
        model = tmp_path / "x.model"
        model.write_text(f"minbpe v1\n\n1\n<|bad|> {bad_id}\n97 98\n")
        expect(lambda: conversion.from_minbpe(model), "x.model")


def _panics(encode, text: str) -> list[int] | None:
    """``encode(text)``, or None where tiktoken's Rust core panics (a BaseException, not an Exception)."""
    try:
        return encode(text)
    except BaseException as exc:  # noqa: BLE001 - pyo3's PanicException
        if type(exc).__name__ != "PanicException":
            raise
        return None


def test_rank_file_without_a_single_byte_encodes_as_tiktoken_until_the_byte_is_needed(tmp_path):
    """cl100k without the byte "%": tiktoken loads it and panics on text whose encoding needs "%"
    on its own. We load it, give tiktoken's ids on every document where tiktoken succeeds and raise
    MissingByteError naming the byte exactly where it fails, through the C and pure-Python encoders."""
    import tiktoken_ext

    from hf_bbpe import GPT4_SPLIT_PATTERN, MissingByteError
    from hf_bbpe.engine.encoding.encoder import ChunkEncoder

    cl100k = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    lines = cl100k.read_bytes().splitlines(keepends=True)
    path = tmp_path / "no_percent.tiktoken"
    path.write_bytes(b"".join(line for line in lines if not line.startswith(b"JQ== ")))  # "%" is rank 4
    reference = _tiktoken_encoding(path, GPT4_SPLIT_PATTERN, special_tokens={"<|endoftext|>": 100257})
    tok = conversion.from_tiktoken(path, pattern="gpt4", special_tokens={"<|endoftext|>": 100257})
    assert tok.n_vocab == reference.n_vocab and tok.byte_ids[ord("%")] == -1
    docs = [doc for doc in MIX_SAMPLE.read_text(encoding="utf-8").split("\n\n") if doc] + ["50%", "%d", "a % b"]
    failing = []
    for doc in docs:
        expected = _panics(reference.encode_ordinary, doc)
        if expected is None:
            failing.append(doc)
            with pytest.raises(MissingByteError, match=r"cannot encode the byte b'%' \(0x25\)"):
                tok.encode_ordinary(doc)
        else:
            assert tok.encode_ordinary(doc) == expected
    assert 10 < len(failing) < len(docs) // 10 and "%d" not in failing  # "%d" is a token: no lone "%" needed
    ok = [doc for doc in docs if doc not in failing]
    assert tok.encode_batch(ok, num_threads=2) == reference.encode_ordinary_batch(ok)
    with pytest.raises(MissingByteError):
        tok.encode_batch(ok + failing[:1], num_threads=2)
    python = ChunkEncoder({}, tok.byte_ids, mode="ranks", vocab=tok.vocab, native=False)
    for chunk in (b"%d", b" %", b"xyz"):
        assert python.encode_bytes(chunk) == reference._encode_single_piece(chunk)
    with pytest.raises(MissingByteError, match="b'%'"):
        python.encode_bytes(b"%")
    with pytest.raises(ValueError, match=r"the single byte b'%' has no rank .*no merge list"):
        tok.merges  # noqa: B018 - saving, extending and converting need the merges
