"""Every code point is classified as the owners' regex engines classify it (issue 36).

The built-in patterns' classes (\\p{L}, \\p{N}, \\s and o200k's two case sets) come from
``unicode_tables.py`` (Unicode ``CLASSES_UNICODE_VERSION``), not from the newer Unicode of the
``regex`` module, in the C scanners (both window builds) and in the ``regex`` module's twin:

* the tables are exactly tiktoken's (Rust regex) and ``tokenizers``' (Oniguruma), probed on every
  code point and class;
* the twin's classes (``patterns.owner_classes_pattern``) are exactly the tables;
* ids equal tiktoken's (GPT-2, cl100k, o200k), llama_models' (Llama 3), mistral_common's (Tekken)
  and ``tokenizers``' (our tokenizer.json, trained with Qwen2's pattern or converted from
  tiktoken), each code point in four contexts: where the ``regex`` module's classes differ and a
  sample of the rest here, every code point in the slow test; and the twin cuts those texts as
  the C scanners do.

Only the built-in patterns are rewritten: any other pattern means what it means in the ``regex``
module (its own Unicode), where ``tokenizers`` may read a code point assigned since Unicode 16
otherwise.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import regex

os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")  # read the vendored files themselves

import tiktoken  # noqa: E402
import tiktoken_ext  # noqa: E402
from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe  # noqa: E402
from tokenizers import Regex  # noqa: E402
from tokenizers import Tokenizer as HFTokenizer  # noqa: E402
from tokenizers import pre_tokenizers  # noqa: E402

import conversion  # noqa: E402
from conversion.presets import PRESETS  # noqa: E402
from hf_bbpe import RegexTokenizer
from hf_bbpe.engine.chunking import patterns
from hf_bbpe.engine.chunking import unicode_tables  # noqa: E402
from tests.support.cpu import HAS_AVX512, needs_avx512  # noqa: E402
from tests.support.families import LLAMA3_MODEL, TEKKEN_FILES, mix_documents, tiktoken_pattern  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
EVERYTHING = "".join(map(chr, CODE_POINTS))
CLASSES = dict(patterns._CLASS_SPELLINGS)  # unicode_tables' name -> how the patterns write it
BYTE_RANKS = {bytes([b]): b for b in range(256)}


def table_points(name: str) -> set[int]:
    return set(unicode_tables.code_points(name))


def tiktoken_class(spelling: str) -> set[int]:
    """The code points tiktoken's regex puts in ``spelling``: a pattern of that class alone keeps
    only what it matches (tiktoken drops the text between matches), one byte an id."""
    probe = tiktoken.Encoding("probe", pat_str=spelling, mergeable_ranks=BYTE_RANKS, special_tokens={})
    return set(map(ord, bytes(probe.encode_ordinary(EVERYTHING)).decode("utf-8")))


def oniguruma_class(spelling: str) -> set[int]:
    """The code points ``tokenizers``' Oniguruma puts in ``spelling``: what is left when a Split
    removes the runs outside it."""
    inner = spelling[1:-1] if spelling.startswith("[") else spelling
    split = pre_tokenizers.Split(Regex(f"[^{inner}]+"), behavior="removed")
    return {ord(ch) for piece, _ in split.pre_tokenize_str(EVERYTHING) for ch in piece}


def regex_module_class(spelling: str) -> set[int]:
    return {ord(ch) for run in regex.finditer(spelling + "+", EVERYTHING) for ch in run.group()}


@pytest.mark.parametrize("engine", ["tiktoken", pytest.param("tokenizers", marks=pytest.mark.slow)])
def test_class_tables_are_the_owners_engines(engine):
    """unicode_tables' classes are tiktoken's and tokenizers' own, on every code point (regenerate
    them with scripts/make_unicode_tables.py from the Unicode version the owners moved to)."""
    probe = tiktoken_class if engine == "tiktoken" else oniguruma_class
    for name, spelling in CLASSES.items():
        got, owner = table_points(name), probe(spelling)
        assert got == owner, (name, sorted(got - owner)[:10], sorted(owner - got)[:10])


def test_python_twin_classes_are_the_tables():
    """Each class as the twin writes it for the regex module is exactly the table's, whatever the
    regex module's own Unicode version; \\S is the complement of \\s."""
    for name, spelling in CLASSES.items():
        assert regex_module_class(patterns.owner_classes_pattern(spelling)) == table_points(name), name
    not_space = regex_module_class(patterns.owner_classes_pattern(r"\S"))
    assert not_space == set(CODE_POINTS) - table_points("SPACE")


# ---------------------------------------------------------------- ids on every code point

def differing_code_points() -> list[int]:
    """The code points whose class the regex module and the owners' tables disagree on."""
    found: set[int] = set()
    for name, spelling in CLASSES.items():
        found |= table_points(name) ^ regex_module_class(spelling)
    return sorted(found)


def sweep_texts(code_points: list[int], per_text: int = 2048) -> list[str]:
    """Each code point alone before "'s", between letters, after a space and between digits, one
    context a line, ``per_text`` code points a text."""
    texts = []
    for i in range(0, len(code_points), per_text):
        texts.append("\n".join(f"{c}'s\na{c}b\n {c}\n1{c}23" for c in map(chr, code_points[i : i + per_text])))
    return texts


@functools.cache
def differing() -> list[int]:
    """Where the classes differ (about 17,500 code points, with Unicode 17's regex module), and
    Latin up to U+02FF."""
    return sorted(set(differing_code_points()) | set(range(0x300)))


@functools.cache
def fast_sweep() -> list[int]:
    """:func:`differing`, and every 61st code point."""
    return sorted(set(differing()) | set(CODE_POINTS[::61]))

WINDOW_BUILDS = ["sse2", pytest.param("avx512", marks=needs_avx512)]


@contextmanager
def window_build(build: str) -> Iterator[None]:
    """The UTF-8 scanners with the window scanners of that build, then as they were."""
    before = patterns._native.wide_windows()
    assert patterns._native.wide_windows(build == "avx512") == (build == "avx512")
    try:
        yield
    finally:
        patterns._native.wide_windows(before)


OPENAI_FILES = {
    "gpt2": DATA / "gpt2",
    "cl100k_base": Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken",
    "o200k_base": DATA / "tiktoken" / "o200k_base.tiktoken",
}


def tiktoken_reference(name: str) -> tiktoken.Encoding:
    """tiktoken with its own spelling of the pattern, from the same files as ours."""
    if name == "gpt2":
        ranks = data_gym_to_mergeable_bpe_ranks(str(DATA / "gpt2" / "vocab.bpe"), str(DATA / "gpt2" / "encoder.json"))
    else:
        ranks = load_tiktoken_bpe(str(OPENAI_FILES[name]))
    pattern = tiktoken_pattern("r50k_base" if name == "gpt2" else name)
    specials = dict(PRESETS[name].special_tokens)
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)


@pytest.fixture(scope="module")
def openai_pairs() -> dict:
    return {name: (conversion.load_preset(name, path), tiktoken_reference(name)) for name, path in OPENAI_FILES.items()}


@pytest.mark.parametrize("path", ["C", "python"])
def test_issue_example_equals_tiktoken(openai_pairs, path):
    """U+0558 (Armenian, assigned in Unicode 17) is no letter to tiktoken: cl100k cuts "\\u0558'" and "s"."""
    ours, reference = openai_pairs["cl100k_base"]
    assert reference.encode_ordinary("\u0558's") == [145, 246, 6, 82]
    if path == "C":
        assert ours.encode_ordinary("\u0558's") == [145, 246, 6, 82]
    else:
        assert patterns.compile_pattern(patterns.GPT4_SPLIT_PATTERN).findall("\u0558's") == ["\u0558'", "s"]


@pytest.mark.parametrize("build", WINDOW_BUILDS)
@pytest.mark.parametrize("name", list(OPENAI_FILES))
def test_sweep_ids_equal_tiktoken(openai_pairs, name, build):
    ours, reference = openai_pairs[name]
    texts = sweep_texts(fast_sweep())
    expected = reference.encode_ordinary_batch(texts)
    with window_build(build):
        got = ours.encode_batch(texts, num_workers=1, disallowed_special=())
    for text, want, have in zip(texts, expected, got):
        assert have == want, first_difference(text, want, have, reference)


def first_difference(text: str, want: list[int], have: list[int], reference) -> str:
    """Where two id sequences of text part, as text: which context to look at."""
    i = next((i for i, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
    at = len(reference.decode_bytes(want[:i]).decode("utf-8", "replace"))
    return repr(text[max(0, at - 12) : at + 12])


def test_sweep_ids_equal_llama3_and_tekken():
    """Llama 3 through llama_models' own Tokenizer, Tekken through mistral_common's Tekkenizer
    (both tiktoken underneath), where the classes differ."""
    from llama_models.llama3.tokenizer import Tokenizer as Llama3Reference
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    path = TEKKEN_FILES["tekken_240911"]
    for ours, reference in ((conversion.load(LLAMA3_MODEL), Llama3Reference(LLAMA3_MODEL)),
                            (conversion.load(path), Tekkenizer.from_file(path))):
        for text in sweep_texts(differing(), per_text=512):
            assert ours.encode_ordinary(text) == reference.encode(text, bos=False, eos=False)


@pytest.mark.parametrize("name", [*patterns.NATIVE_PATTERNS, *patterns.ISOLATED_PATTERNS])
def test_python_twin_cuts_the_sweep_as_the_c_scanner(name):
    """The regex module's twin of each built-in pattern cuts the sweep's texts as its C scanner
    does (the C scanner's ids are the owners', above)."""
    pattern = {**patterns.NATIVE_PATTERNS, **patterns.ISOLATED_PATTERNS}[name]
    twin = patterns.compile_pattern(pattern)
    for text in sweep_texts(fast_sweep(), per_text=8192):
        if name in patterns.ISOLATED_PATTERNS:
            from hf_bbpe.engine.chunking.pre_tokenizers import isolated_split

            assert isolated_split(twin, text) == patterns.native_isolated_splitter(pattern)(text)
        else:
            assert twin.findall(text) == patterns.chunk_splitter(pattern)(text)


@pytest.fixture(scope="module")
def qwen2_trained(tmp_path_factory) -> tuple[RegexTokenizer, HFTokenizer]:
    """A tokenizer trained here with Qwen2's pattern, and its tokenizer.json run by tokenizers."""
    tok = RegexTokenizer(pattern="qwen2")
    # "'s" and digits merged: the sweep's contexts then show where chunks end
    tok.train(mix_documents() + ["it's John's cat's 123 456"] * 100, vocab_size=600)
    path = tmp_path_factory.mktemp("qwen2") / "tokenizer.json"
    conversion.to_tokenizer_json(tok, path)
    return tok, HFTokenizer.from_file(str(path))


def test_sweep_our_trained_tokenizer_json_in_tokenizers(qwen2_trained):
    """Our tokenizer.json of a tokenizer trained with Qwen2's pattern, run by tokenizers
    (Oniguruma's classes), gives our engine's ids where the classes differ."""
    ours, hf = qwen2_trained
    texts = sweep_texts(differing())
    expected = [encoding.ids for encoding in hf.encode_batch(texts, add_special_tokens=False)]
    assert ours.encode_batch(texts, num_workers=1, disallowed_special=()) == expected


@pytest.mark.slow
def test_sweep_converted_tokenizer_json_in_tokenizers(openai_pairs, tmp_path):
    """The same for cl100k and o200k converted to tokenizer.json (GPT-2 has cl100k's classes)."""
    texts = sweep_texts(differing())
    for name in ("cl100k_base", "o200k_base"):
        ours = openai_pairs[name][0]
        conversion.to_tokenizer_json(ours, tmp_path / f"{name}.json")
        hf = HFTokenizer.from_file(str(tmp_path / f"{name}.json"))
        expected = [encoding.ids for encoding in hf.encode_batch(texts, add_special_tokens=False)]
        assert ours.encode_batch(texts, num_workers=1, disallowed_special=()) == expected, name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_full_sweep_ids_equal_tiktoken(openai_pairs, name):
    """Every code point (less surrogates), four contexts each, both window builds: tiktoken's ids.
    (GPT-2 uses cl100k's classes; the fast sweep and the table probes cover it.)"""
    ours, reference = openai_pairs[name]
    texts = sweep_texts(CODE_POINTS, per_text=4096)
    expected = reference.encode_ordinary_batch(texts)
    for build in ("sse2", "avx512") if HAS_AVX512 else ("sse2",):
        with window_build(build):
            got = ours.encode_batch(texts, num_workers=1, disallowed_special=())
        for text, want, have in zip(texts, expected, got):
            assert have == want, (build, first_difference(text, want, have, reference))
