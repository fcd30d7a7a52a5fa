"""tokenizer.json: the Oniguruma pattern translation, and importing byte-level BPE files.

* Translated patterns split like Python's ``regex`` in the ``tokenizers`` library (Oniguruma):
  hypothesis texts built from the characters that matter, adversarial strings, and every
  codepoint assigned in this Python's Unicode database; the reverse translation likewise.
* Files built with the ``tokenizers`` API itself import with the same ids as ``tokenizers``
  encodes: GPT-2 style (ByteLevel regex), Llama-3 style (every split of every token as merges,
  ignore_merges=True, Split(Regex)), a file with transformers' raw tiktoken pattern, and a
  normalizer file (Qwen2 style).
* ignore_merges on merges that do not rebuild every token imports as the engine's "ignore_merges"
  mode, with the same ids as tokenizers; the unsupported options raise.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

import conversion
from conversion import FormatError
from conversion.presets import PRESETS
from hf_bbpe import RegexTokenizer, Tokenizer
from hf_bbpe.engine.chunking.byte_unicode import token_to_unicode
from hf_bbpe.engine.chunking.patterns import SPLIT_PATTERNS, TIKTOKEN_CL100K_SPLIT_PATTERN
from hf_bbpe.engine.chunking.onig_regex import translate_pattern_for_onig, translate_pattern_from_onig
from hf_bbpe.hf.tokenizer_json_writer import tokenizer_json_dict
from tests.support.families import bpe_trainer_file
from tests.support.reference_bpe import isolated_chunks

DATA = Path(__file__).resolve().parents[1] / "data"
DOCS = (DATA / "text" / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n")

# constructs where Python's regex and Oniguruma differ or might (each in a small pattern)
PYTHON_PATTERNS = [
    *(SPLIT_PATTERNS[name] for name in ("gpt2", "gpt4", "o200k")),
    r"\p{N}{1,3}+|\p{L}{2}+|\s",
    r"\p{N}{2}?|\d{1,2}?|.",
    r"[^\s\p{L}]?+\p{L}*+\d++|\s++$|\s+(?!\S)|\s",
    r"^\s+|\s+$|\S+|\s",
    r"\s+\Z|\S+|\s",
    r"(?i:'s|'t|ll|k)|[[a]+|[&&x]+|.",
    r"(?P<word>\p{Lu}\p{Ll}+)|(?#comment)\U0001F600|\N{EM DASH}|\x41+|\u00e9|[\x00-\x1f]|.",
    r"(?<=a)b|(?<!c)d|(?=e)e|(?!f)g|(?>h+)h?|.",
    r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|\P{L}+",
]

ALPHABET = list("aAbBsStTkKlLdDeEmMvVrR'’ 0123456789\t\n\r\u00a0\u3000.,;!?-_/\\()[]{}&$#@%^*+=<>~`|\"é\u0301ßſ\u212a日本١٢😀\U0001F600—x")
TEXTS = st.text(alphabet=st.sampled_from(ALPHABET), max_size=60)


def onig_split(pattern: str, text: str) -> list[str]:
    return [piece for piece, _ in pre_tokenizers.Split(Regex(pattern), "isolated").pre_tokenize_str(text)]


ADVERSARIAL = [
    "1234567", "12345 6789012", "a1234b", "   x", "x   ", "  \n  \n", "\r\n\r\n  a", "a\r\n \r\nb",
    "I'M HE'LL ſ 'Ś 'K", "don't\n\n", "\n", "", " ", "ab\n", "ab\n\n", "ab \n", "[[a]]&&x",
    "\U0001F600\U0001F600", "ééé", "AAAbbbCCC", "abc", "\u2014\u2014", "hhhh",
]


@pytest.mark.parametrize("pattern", PYTHON_PATTERNS)
def test_translation_splits_like_python_on_adversarial_strings(pattern):
    onig = translate_pattern_for_onig(pattern)
    for text in ADVERSARIAL + DOCS[:200]:
        assert onig_split(onig, text) == isolated_chunks(text, pattern), (pattern, onig, text[:60])


@pytest.mark.parametrize("pattern", PYTHON_PATTERNS)
@settings(max_examples=150, deadline=None)
@given(text=TEXTS)
def test_translation_splits_like_python_on_hypothesis_text(pattern, text):
    assert onig_split(translate_pattern_for_onig(pattern), text) == isolated_chunks(text, pattern)


def test_the_known_difference_is_real():
    """Untranslated, Oniguruma reads tiktoken's cl100k pattern differently (why we translate)."""
    raw = TIKTOKEN_CL100K_SPLIT_PATTERN
    assert onig_split(raw, "1234567") == ["1234567"]
    assert isolated_chunks("1234567", raw) == ["123", "456", "7"]
    assert onig_split(translate_pattern_for_onig(raw), "1234567") == ["123", "456", "7"]
    assert "(?>\\p{N}{1,3})" in translate_pattern_for_onig(raw)


ONIG_PATTERNS = [
    r"\p{N}{1,3}+|\s",
    r"\p{N}{2}?x|.",
    r"^\s+|\s+$|\S+|\s",
    r"\s+\Z|\s+\z|\S+|\s",
    r"\x{41}+|\p{^L}+|.",
    r"(?<n>\p{L}+)|.",
]


@pytest.mark.parametrize("onig", ONIG_PATTERNS)
@settings(max_examples=150, deadline=None)
@given(text=TEXTS)
def test_reverse_translation_splits_like_oniguruma(onig, text):
    assert isolated_chunks(text, translate_pattern_from_onig(onig)) == onig_split(onig, text)


@pytest.mark.parametrize("bad", [r"(a)\1", r"(?<=\bx)y", r"[\B]", r"(?m:^a)", r"(?x) a", r"\Ga", r"a\Kb", r"(?(1)a|b)", r"(?s:.)", "a\\"])
def test_untranslatable_constructs_raise(bad):
    with pytest.raises(ValueError, match="position"):
        translate_pattern_for_onig(bad)


CLASSES = [r"\p{L}", r"\p{N}", r"\s", r"\d", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}",
           r"[^\s\p{L}\p{N}]", r"[^\r\n\p{L}\p{N}]", r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
           r"(?i:[sdmtlvre])", r"."]


def test_every_assigned_codepoint_is_classified_alike():
    """Each character class of the registered patterns matches the same codepoints in both
    engines, over every codepoint that this Python's Unicode database (``unicodedata``) and the
    ``regex`` module's newer one classify alike. (Codepoints assigned or re-categorised in later
    Unicode versions differ: Oniguruma's tables are older than the ``regex`` module's; see the
    README.)"""
    chars = []
    for c in range(0x110000):
        if 0xD800 <= c < 0xE000:
            continue
        category = unicodedata.category(chr(c))
        if category != "Cn" and regex.fullmatch(rf"\p{{{category}}}", chr(c)):
            chars.append(chr(c))
    assert len(chars) > 280000
    text = "".join(chars)
    for cls in CLASSES:
        assert onig_split(translate_pattern_for_onig(cls), text) == isolated_chunks(text, cls), cls


# ------------------------------------------------------------------ importing files


def _save(tokenizer: HFTokenizer, tmp_path: Path, name: str = "tokenizer.json") -> Path:
    path = tmp_path / name
    tokenizer.save(str(path))
    return path


def _assert_same_ids(tok: Tokenizer, hf: HFTokenizer, texts: list[str]) -> None:
    for text in texts:
        assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, text[:80]


def test_gpt2_style_file_from_tokenizers(tmp_path):
    """models.BPE from GPT-2's files + ByteLevel (its own regex) + <|endoftext|> added."""
    hf = HFTokenizer(models.BPE.from_file(str(DATA / "gpt2" / "encoder.json"), str(DATA / "gpt2" / "vocab.bpe")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False)])
    tok = conversion.from_tokenizer_json(_save(hf, tmp_path))
    gpt2 = conversion.from_gpt2_files(DATA / "gpt2" / "encoder.json", DATA / "gpt2" / "vocab.bpe")
    assert tok.merges == gpt2.merges and tok.byte_ids == gpt2.byte_ids
    assert tok.special_tokens == {"<|endoftext|>": 50256}
    assert tok.pattern == PRESETS["gpt2"].pattern
    _assert_same_ids(tok, hf, DOCS + ADVERSARIAL + ["a<|endoftext|>b <|endoftext|>"])


def _every_split_merges(ranks: dict[bytes, int]) -> list[tuple[str, str]]:
    """transformers' TikTokenConverter's merge list: every split of every token into two tokens,
    sorted by the merged token's rank (then the halves' ranks)."""
    found = []
    for token, rank in ranks.items():
        for i in range(1, len(token)):
            left, right = token[:i], token[i:]
            if left in ranks and right in ranks:
                found.append((rank, ranks[left], ranks[right], left, right))
    found.sort()
    return [(token_to_unicode(left), token_to_unicode(right)) for *_, left, right in found]


LLAMA3_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


@pytest.fixture(scope="module")
def cl100k_ranks():
    import tiktoken_ext
    from tiktoken.load import load_tiktoken_bpe

    return load_tiktoken_bpe(str(Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"))


@pytest.fixture(scope="module")
def cl100k_every_split(cl100k_ranks):
    return _every_split_merges(cl100k_ranks)


def _llama3_style(ranks: dict[bytes, int], merges: list[tuple[str, str]], pattern: str) -> HFTokenizer:
    vocab = {token_to_unicode(token): rank for token, rank in ranks.items()}
    hf = HFTokenizer(models.BPE(vocab, merges, ignore_merges=True))
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    hf.decoder = decoders.ByteLevel()
    first = max(ranks.values()) + 1
    hf.add_special_tokens([AddedToken(f"<|reserved_{i}|>", special=True, normalized=False) for i in range(4)])
    assert hf.token_to_id("<|reserved_0|>") == first
    return hf


def test_llama3_style_file_with_every_split_and_ignore_merges(tmp_path, cl100k_ranks, cl100k_every_split):
    hf = _llama3_style(cl100k_ranks, cl100k_every_split, LLAMA3_PATTERN)
    tok = conversion.from_tokenizer_json(_save(hf, tmp_path))
    cl100k = conversion.from_tiktoken(_cl100k_path())
    assert tok.merges == cl100k.merges and tok.byte_ids == cl100k.byte_ids  # ids read as ranks
    assert tok.pattern == LLAMA3_PATTERN
    assert tok.special_tokens == {f"<|reserved_{i}|>": 100256 + i for i in range(4)}
    _assert_same_ids(tok, hf, DOCS + ADVERSARIAL + ["<|reserved_0|>x<|reserved_3|> y"])


def _cl100k_path() -> Path:
    import tiktoken_ext

    return Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"


def test_raw_tiktoken_pattern_in_a_file_keeps_the_files_meaning(tmp_path, cl100k_ranks, cl100k_every_split):
    """transformers' TikTokenConverter writes tiktoken's pattern unchanged; Oniguruma reads its
    ``\\p{N}{1,3}+`` as runs of any length. Importing keeps what the file does (its ids), and
    that differs from tiktoken on digit runs: the bug our export avoids."""
    import tiktoken

    hf = _llama3_style(cl100k_ranks, cl100k_every_split, TIKTOKEN_CL100K_SPLIT_PATTERN)
    tok = conversion.from_tokenizer_json(_save(hf, tmp_path))
    assert "(?:\\p{N}{1,3})+" in tok.pattern
    _assert_same_ids(tok, hf, DOCS + ADVERSARIAL)
    enc = tiktoken.Encoding("cl100k", pat_str=TIKTOKEN_CL100K_SPLIT_PATTERN, mergeable_ranks=cl100k_ranks,
                            special_tokens={})
    differ = sum(hf.encode(doc, add_special_tokens=False).ids != enc.encode_ordinary(doc) for doc in DOCS)
    assert differ > 0
    assert hf.encode("1234567", add_special_tokens=False).ids != enc.encode_ordinary("1234567")


def test_unsupported_normalizer_is_refused_unless_not_strict(tmp_path):
    tok = RegexTokenizer("gpt4")
    tok.train(DOCS[:200], 600, progress=False)
    data = tokenizer_json_dict(tok)
    data["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match=r"tokenizer.json: normalizer 'Lowercase' is not supported"):
        conversion.from_tokenizer_json(path)
    with pytest.warns(UserWarning, match="dropped"):
        loose = conversion.from_tokenizer_json(path, strict=False)
    assert loose.normalizer is None
    hf = HFTokenizer.from_file(str(path))
    _assert_same_ids(loose, hf, [unicodedata.normalize("NFC", doc).lower() for doc in DOCS[:300]])


def _tiny_file(tmp_path: Path, ignore_merges: bool) -> tuple[Path, HFTokenizer]:
    """Merges b+c, a+b, ab+c: the word "abc" comes out of the merges as [a, bc]."""
    symbols = {token_to_unicode(bytes([b])): i for i, b in enumerate(range(256))}
    vocab = dict(symbols, bc=256, ab=257, abc=258)
    hf = HFTokenizer(models.BPE(vocab, [("b", "c"), ("a", "b"), ("ab", "c")], ignore_merges=ignore_merges))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    return _save(hf, tmp_path), hf


def test_ignore_merges_that_changes_a_word_is_honoured(tmp_path):
    """ignore_merges=true: a word that is a token is that token, even when the merges spell it otherwise."""
    path, hf = _tiny_file(tmp_path, ignore_merges=True)
    assert hf.encode("abc").ids == [258]  # the whole word is looked up
    tok = conversion.from_tokenizer_json(path)
    assert tok.mode == "ignore_merges"
    assert tok.encode("abc") == [258] and tok.encode_single_piece("abc") == [258]
    _assert_same_ids(tok, hf, ["abcabc", "aabbcc", "cab", "abc abc", "abc"])
    conversion.to_tokenizer_json(tok, tmp_path / "again.json")
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert again["model"]["ignore_merges"] is True
    _assert_same_ids(tok, HFTokenizer.from_file(str(tmp_path / "again.json")), ["abcabc", "abc", "cab abc"])


def test_same_merges_without_ignore_merges_import(tmp_path):
    path, hf = _tiny_file(tmp_path, ignore_merges=False)
    tok = conversion.from_tokenizer_json(path)
    assert hf.encode("abc").ids == tok.encode("abc") == [97, 256]
    assert tok.pattern == ""
    _assert_same_ids(tok, hf, ["abcabc", "aabbcc", "cab", "abc abc"])


@pytest.mark.parametrize("edit,message", [
    (lambda d: d["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Whitespace"}),
     "tokenizer.json: pre_tokenizer 'Whitespace' is not supported"),
    (lambda d: d["pre_tokenizer"]["pretokenizers"].pop(), "has no ByteLevel step"),
    (lambda d: d["added_tokens"][0].update(lstrip=True), "has lstrip=true"),
    (lambda d: d["model"].update(byte_fallback=True), "byte_fallback=true"),
    (lambda d: d["model"].update(dropout=0.1), "dropout=0.1"),
    (lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(behavior="Sideways"), "unknown split behavior 'Sideways'"),
    (lambda d: d["model"]["merges"].reverse(), "merge priority must follow the ids"),
])
def test_unsupported_options_are_refused(tmp_path, edit, message):
    tok = RegexTokenizer("gpt4")
    tok.train(DOCS[:100], 400, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 400})
    data = tokenizer_json_dict(tok)
    edit(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match=regex.escape(message)):
        conversion.from_tokenizer_json(path)


def test_export_import_round_trip_of_a_trained_tokenizer(tmp_path):
    tok = RegexTokenizer("o200k")
    tok.train(DOCS, 1000, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 1000, "<|im_start|>": 1005})
    conversion.to_tokenizer_json(tok, tmp_path / "tokenizer.json")
    back = conversion.from_tokenizer_json(tmp_path / "tokenizer.json")
    assert back.merges == tok.merges and back.pattern == tok.pattern
    assert back.special_tokens == tok.special_tokens and back.byte_ids == tok.byte_ids
    _assert_same_ids(back, HFTokenizer.from_file(str(tmp_path / "tokenizer.json")), DOCS[:300])


def test_bpe_trainer_file_without_the_bytes_utf8_never_uses(tmp_path):
    """A file from the real BpeTrainer given every byte but the 13 that UTF-8 never uses (0xC0,
    0xC1, 0xF5-0xFF), as a large corpus gives it and as the SuperBPE tokenizers have it, loads:
    tokenizers' ids on every document (multilingual text and code) and adversarial string, through
    the engine, its .model file, GPT-2 files, an extension, and the tokenizer.json written back
    (which lacks the same bytes); only raw bytes can ask for one of them."""
    from hf_bbpe import MissingByteError
    from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode
    from hf_bbpe.engine.encoding.encoder import NEVER_IN_UTF8

    never = sorted(NEVER_IN_UTF8)
    assert never == [0xC0, 0xC1, *range(0xF5, 0x100)]
    alphabet = [bytes_to_unicode()[b] for b in range(256) if b not in NEVER_IN_UTF8]
    docs = [doc for doc in DOCS if doc]
    hf = bpe_trainer_file(tmp_path / "tokenizer.json", alphabet, docs[::2])
    vocab = hf.get_vocab()
    assert [b for b in range(256) if bytes_to_unicode()[b] not in vocab] == never
    texts = docs + ADVERSARIAL + ["".join(map(chr, range(0x20, 0x800))), "\U0010FFFF\U0001F600\x00\x7f"]
    expected = [hf.encode(text, add_special_tokens=False).ids for text in texts]

    tok = conversion.load(tmp_path / "tokenizer.json")
    assert tok.mode == "merges" and [b for b in range(256) if tok.byte_ids[b] == -1] == never
    assert tok.n_vocab == hf.get_vocab_size() and len(tok.vocab) == len(vocab)
    assert [tok.encode_ordinary(text) for text in texts] == expected
    assert tok.encode_batch(texts, num_threads=2) == expected
    assert [tok.encode_to_numpy(text).tolist() for text in texts[:50]] == expected[:50]
    with pytest.raises(MissingByteError, match=r"b'\\xff' \(0xff\)"):
        tok.encode_single_piece(b"a\xff")
    conversion.to_minbpe(tok, tmp_path / "m")
    conversion.to_gpt2_files(tok, tmp_path / "g2")
    conversion.to_tokenizer_json(tok, tmp_path / "back.json")
    for path in (tmp_path / "m.model", tmp_path / "g2", tmp_path / "back.json"):
        back = conversion.load(path, **({"pattern": "gpt2"} if path.name == "g2" else {}))  # ByteLevel's split
        assert back.vocab == tok.vocab and [back.encode_ordinary(text) for text in texts] == expected, path
    written = HFTokenizer.from_file(str(tmp_path / "back.json"))
    assert written.get_vocab() == vocab
    assert [written.encode(text, add_special_tokens=False).ids for text in texts] == expected
    extended = tok.extend(docs[1::2], 30, progress=False)
    assert extended.byte_ids == tok.byte_ids and len(extended.merges) == len(tok.merges) + 30
    untouched = [t for t, ids in zip(texts, expected) if extended.encode_ordinary(t) == ids]
    assert len(untouched) > len(texts) // 3


def test_bpe_trainer_file_without_an_alphabet_loads_as_a_rank_file_missing_a_byte_does(tmp_path):
    """No alphabet: the file lacks every byte its training text lacked (control characters, rare
    lead bytes, ...). It loads; text whose bytes it has gets tokenizers' ids, and text that needs a
    missing byte raises MissingByteError naming it (tokenizers drops the character), as a rank file
    without a byte does."""
    from hf_bbpe import MissingByteError

    docs = [doc for doc in DOCS if doc]
    hf = bpe_trainer_file(tmp_path / "tokenizer.json", [], docs[::2])
    tok = conversion.load(tmp_path / "tokenizer.json")
    missing = [b for b in range(256) if tok.byte_ids[b] == -1]
    assert 13 < len(missing) < 128 and 0x00 in missing and ord("a") not in missing
    covered = [doc for doc in docs if not set(doc.encode("utf-8")) & set(missing)]
    assert len(covered) > len(docs) * 0.9
    assert [tok.encode_ordinary(doc) for doc in covered] == [hf.encode(doc, add_special_tokens=False).ids
                                                          for doc in covered]
    with pytest.raises(MissingByteError, match=r"b'\\x00' \(0x00\)"):
        tok.encode_ordinary("a\x00b")
    assert hf.encode("a\x00b", add_special_tokens=False).ids == [hf.token_to_id("a"), hf.token_to_id("b")]  # dropped
