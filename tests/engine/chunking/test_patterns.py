"""The C pre-tokenizer splits exactly like the regex module does with the same pattern and the
owners' character classes (``patterns.compile_pattern``, see test_owner_unicode.py)
(GPT-2, GPT-4, o200k and Llama 3), and the other spellings of those patterns that take the C
scanner (``patterns.EQUIVALENT_PATTERNS``) split like their own spelling in the regex module."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe.engine.chunking import patterns
from hf_bbpe.engine.chunking.patterns import (
    EQUIVALENT_PATTERNS,
    GPT4_SPLIT_PATTERN,
    LLAMA3_SPLIT_PATTERN,
    NATIVE_PATTERNS,
    chunk_splitter,
    native_scanner,
)
from tests.support.cpu import HAS_AVX512, needs_avx512

DATA = Path(__file__).resolve().parents[2] / "data" / "text"
NATIVE = list(NATIVE_PATTERNS.values())
IDS = list(NATIVE_PATTERNS)
EQUIVALENT = list(EQUIVALENT_PATTERNS)

# Characters at every decision of the patterns: contraction letters in both cases (and U+017F,
# which (?i) folds to s), each kind of space and line break, digits of several scripts, letters
# of each case class (Lu, Ll, Lt, Lm, Lo), marks, punctuation, "/", symbols, a lone surrogate.
TRICKY = list("aZ'sSdDmMtTlLvVeErRkK\u017f\u212a \t\n\r\x0b\x0c\x1c\x85\u00a0\u2028\u3000"
              "0123\u0663\u00bd\u2460.,!?-/_(\u00e9\u0301\u0903\u01c5\u02b0\u4f60\u597d"
              "\U0001f642\U0001d400") + ["\ud800"]


# CPython stores a str with 1, 2 or 4 bytes per code point, after its largest one, and the C
# scanner has an instance of each pattern for each of these kinds: TRICKY text of each kind.
KINDS = [1, 2, 4]
KIND_LIMITS = {1: 0x100, 2: 0x10000, 4: 0x110000}


def str_kind(text: str) -> int:
    """The bytes per code point CPython stores text with (1 for empty text)."""
    largest = max(map(ord, text), default=0)
    return next(kind for kind in KINDS if largest < KIND_LIMITS[kind])


def text_of_kind(kind: int, alphabet: list[str] = TRICKY, max_size: int = 30) -> st.SearchStrategy[str]:
    """Text of alphabet stored with kind bytes per code point: one character that needs the
    kind, among any that fit it."""
    fits = st.text(alphabet=st.sampled_from([c for c in alphabet if ord(c) < KIND_LIMITS[kind]]), max_size=max_size)
    if kind == 1:
        return fits
    needs = st.sampled_from([c for c in alphabet if str_kind(c) == kind])
    return st.builds(lambda before, char, after: before + char + after, fits, needs, fits)


def findall(pattern: str, text: str) -> list[str]:
    """The regex module's chunks, with the owners' character classes (``patterns.compile_pattern``)."""
    return patterns.compile_pattern(pattern).findall(text)


def ends_of(chunks: list[str]) -> list[int]:
    """The end position of each chunk of a text cut into chunks."""
    ends, end = [], 0
    for chunk in chunks:
        end += len(chunk)
        ends.append(end)
    return ends


def test_native_pretokenizer_is_built():
    """The C pre-tokenizer is part of the install: a missing build fails here instead of passing
    every comparison below vacuously."""
    assert patterns._native is not None, "hf_bbpe.engine.chunking._pretokenize is not built (pip install -e .)"


@pytest.mark.parametrize("pattern", NATIVE, ids=IDS)
@pytest.mark.parametrize("name", ["mix-sample.txt", "taylorswift.txt"])
def test_real_text_splits_alike(pattern, name):
    text = (DATA / name).read_text(encoding="utf-8")
    chunks = chunk_splitter(pattern)(text)
    assert chunk_splitter(pattern) is not patterns.compile_pattern(pattern).findall
    assert chunks == findall(pattern, text)


@pytest.mark.parametrize("pattern", NATIVE, ids=IDS)
@settings(max_examples=1500, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(TRICKY), max_size=40))
def test_tricky_text_splits_alike(pattern, text):
    assert chunk_splitter(pattern)(text) == findall(pattern, text)


@pytest.mark.parametrize("pattern", NATIVE, ids=IDS)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_tricky_text_of_each_kind_splits_alike(pattern, kind, data):
    """Each str kind's instance of the scanner splits like the regex module."""
    text = data.draw(text_of_kind(kind))
    assert str_kind(text) == kind
    assert chunk_splitter(pattern)(text) == findall(pattern, text)


# Mostly letters: ASCII of both cases, Latin-1 (lower, upper, and ª which is Lo), Cyrillic,
# CJK, Lt, Lm, a mark, and above the BMP Lu and Lo; long runs, whose ends the scanner finds 8
# or 16 characters at a time. With the characters next to the ASCII letters' ranges, in ASCII
# and in the low 7 bits of × and ÷, characters whose low byte is an ASCII letter (š Ł Ţ 聡 ａ ≡ 𝑡:
# 16-bit lanes must look at both bytes), and a few others.
WORDY = (list("abcdefghijklmnopqrstuvwxyzAZ") * 3
         + list("\u00e9\u00c0\u00aa\u00d7\u00f7@[`{'sS .\n1\u0436\u0416\u4f60\u01c5\u02b0\u0301\U0001d400\U00020000"
                "\u0161\u0141\u0162\u8061\uff41\u2261\U0001d461"))


@pytest.mark.parametrize("pattern", NATIVE, ids=IDS)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_long_words_split_alike(pattern, kind, data):
    text = data.draw(text_of_kind(kind, WORDY, max_size=60))
    assert str_kind(text) == kind
    assert chunk_splitter(pattern)(text) == findall(pattern, text)


@pytest.mark.parametrize("name", NATIVE_PATTERNS)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=300, deadline=None)
@given(data=st.data(), batch=st.sampled_from([1, 2, 3, 5, 64]))
def test_batch_of_chunks_is_repeated_chunk(name, kind, data, batch):
    """A scanner's chunks() (the chunk ends that _chunk_bpe asks for a batch at a time) gives
    the chunks of repeated chunk() calls, which are the regex module's, for each str kind."""
    text = data.draw(text_of_kind(kind))
    scanner = native_scanner(NATIVE_PATTERNS[name])
    expected = ends_of(findall(NATIVE_PATTERNS[name], text))
    assert patterns._native.chunk_ends(scanner, text, 0) == expected
    assert patterns._native.chunk_ends(scanner, text, batch) == expected


@pytest.mark.parametrize("name", NATIVE_PATTERNS)
def test_batch_of_chunks_on_real_paragraphs(name):
    """chunks() and chunk() on each paragraph of real multilingual text and code, whose
    paragraphs are of all three str kinds."""
    pattern = NATIVE_PATTERNS[name]
    scanner = native_scanner(pattern)
    paragraphs = (DATA / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n")
    assert {str_kind(paragraph) for paragraph in paragraphs} == set(KINDS)
    for paragraph in paragraphs:
        expected = ends_of(findall(pattern, paragraph))
        assert patterns._native.chunk_ends(scanner, paragraph, 0) == expected
        assert patterns._native.chunk_ends(scanner, paragraph, 7) == expected


# The UTF-8 instance's window scanners come in two builds: SSE2 (16 bytes a register) and AVX-512
# (64 bytes; the default where the CPU has it). Each UTF-8 test runs both.
WINDOW_BUILDS = ["sse2", pytest.param("avx512", marks=needs_avx512)]


@contextmanager
def window_build(build: str) -> Iterator[None]:
    """The UTF-8 instance with the window scanners of that build, then as it was."""
    before = patterns._native.wide_windows()
    assert patterns._native.wide_windows(build == "avx512") == (build == "avx512")
    try:
        yield
    finally:
        patterns._native.wide_windows(before)


def utf8_ends_of(chunks: list[str]) -> list[int]:
    """The end of each chunk of a text cut into chunks, in bytes of its UTF-8."""
    return ends_of([chunk.encode("utf-8") for chunk in chunks])


NO_SURROGATE = [c for c in TRICKY if not "\ud800" <= c <= "\udfff"]


@pytest.mark.parametrize("build", WINDOW_BUILDS)
@pytest.mark.parametrize("name", NATIVE_PATTERNS)
@settings(max_examples=600, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(NO_SURROGATE), max_size=40) | st.text(st.sampled_from(WORDY), max_size=60),
       batch=st.sampled_from([0, 1, 2, 3, 64]))
def test_utf8_instance_splits_alike(build, name, text, batch):
    """The scanners' UTF-8 instance (what the encoder splits: a str's UTF-8, positions in bytes)
    cuts tricky and wordy text where the regex module does, whatever the str's kind."""
    scanner = native_scanner(NATIVE_PATTERNS[name])
    with window_build(build):
        got = patterns._native.chunk_ends(scanner, text, batch, True)
    assert got == utf8_ends_of(findall(NATIVE_PATTERNS[name], text))


# Every decision of the GPT-2, GPT-4 and o200k patterns, for the window scanners (64 bytes at a
# time, letters outside ASCII included): contraction letters in both cases and U+017F (which (?i)
# takes for s), each kind of ASCII space and line break, digits, punctuation and o200k's slash,
# letters of 2, 3 and 4 bytes of each case (Ll, Lu, Lt, Lm, Lo: o200k cuts words at case), and
# characters outside ASCII that are no letter (where the window stops): × (Sm), a combining
# mark, a no-break and an ideographic space, an ideographic full stop, an Arabic-Indic digit.
WINDOW_CHARS = list("aZsSdDmMtTlLvVeErRxyABC") + list("0123") * 2 + ["'"] * 4 \
    + list(" " * 8 + "\t\n\r\x0b\x0c\x1c\x1f") + list(".,!-/(//") \
    + list("\u00e9\u00c0\u017f\u0436\u03a9\u01c5\u02b0\u4f60\u4e00\U0001d400") \
    + list("\u00d7\u0301\u00a0\u3000\u3002\u0663")


@pytest.mark.parametrize("build", WINDOW_BUILDS)
@pytest.mark.parametrize("name", NATIVE_PATTERNS)
@settings(max_examples=600, deadline=None)
@given(text=st.text(st.sampled_from(WINDOW_CHARS), min_size=60, max_size=400),
       words=st.lists(st.sampled_from(["don't", " it's", "'LL", " 're", "  ", "\n\n", ".\n\n ", "...", " (", "1234567",
                                       " \n x", "'s", "''", " '", "\t'", "x'y", "  \t", " .", "'\u017f", "'\u017fx", "x'\u017fz", " Straße",
                                       " жизнь", "你好", "\u00e9t\u00e9's", "McDONALD", "HTTPServer", "日本abc", "ABC日本",
                                       "日Ab", "don't's", "I'M", "we'LL", ";\r\n//", ".\n/x", "ǅx", "xʰY"]), max_size=30),
       batch=st.sampled_from([64, 100, 128]))
def test_utf8_windows_split_alike(build, name, text, words, batch):
    """Long ASCII stretches through the UTF-8 instance, many chunk ends at a time (where the
    scanners take 64 bytes at once): the regex module's chunks."""
    scanner = native_scanner(NATIVE_PATTERNS[name])
    for sample in (text, "".join(words) * 3, text[:70] + "".join(words) + text[70:]):
        expected = utf8_ends_of(findall(NATIVE_PATTERNS[name], sample))
        with window_build(build):
            got = patterns._native.chunk_ends(scanner, sample, batch, True)
        assert got == expected, sample


# How a text can end: the last 16 to 63 bytes of a text are read by a window over a padded copy,
# which must leave the last chunk (whose end only the end of the text decides) to the
# chunk-by-chunk scanner: whitespace runs (\s+$, \s+(?!\S), \s*[\r\n]), letters, digits,
# punctuation, contractions, case changes, characters outside ASCII.
TEXT_ENDS = ["", " ", "  ", "\n", "\n\n", " \n", "\t", "  \t ", "x", "xY", "abc", " abc", "1", "12", "1234", "!", " !!",
             "'", "'s", " '", "'ll", ".\n", ";\r\n", "é", " жизнь", "日本", "\u3000", "\u00a0 "]


@pytest.mark.parametrize("build", WINDOW_BUILDS)
@pytest.mark.parametrize("name", NATIVE_PATTERNS)
@settings(max_examples=800, deadline=None)
@given(text=st.text(st.sampled_from(WINDOW_CHARS), min_size=0, max_size=80), end=st.sampled_from(TEXT_ENDS))
def test_utf8_text_ends_split_alike(build, name, text, end):
    """Texts of up to a few windows, ending in every way: the regex module's chunks (a window
    that the text's end cuts tells nothing past it)."""
    scanner = native_scanner(NATIVE_PATTERNS[name])
    for sample in (text + end, "the quick brown fox jumps " + text[:20] + end):
        with window_build(build):
            got = patterns._native.chunk_ends(scanner, sample, 64, True)
        assert got == utf8_ends_of(findall(NATIVE_PATTERNS[name], sample)), sample


@pytest.mark.parametrize("build", WINDOW_BUILDS)
@pytest.mark.parametrize("name", NATIVE_PATTERNS)
def test_utf8_instance_on_real_text(build, name):
    """The UTF-8 instance on real multilingual text and code, whole and paragraph by paragraph."""
    pattern = NATIVE_PATTERNS[name]
    scanner = native_scanner(pattern)
    text = (DATA / "mix-sample.txt").read_text(encoding="utf-8")
    with window_build(build):
        assert patterns._native.chunk_ends(scanner, text, 64, True) == utf8_ends_of(findall(pattern, text))
        for paragraph in text.split("\n\n"):
            assert patterns._native.chunk_ends(scanner, paragraph, 7, True) == utf8_ends_of(findall(pattern, paragraph))


def test_wide_windows_switch():
    """wide_windows() says which build runs, and switching to AVX-512 holds only where the CPU has it."""
    before = patterns._native.wide_windows()
    try:
        assert patterns._native.wide_windows(False) is False
        assert patterns._native.wide_windows() is False
        assert patterns._native.wide_windows(True) is HAS_AVX512
    finally:
        patterns._native.wide_windows(before)
    assert patterns._native.wide_windows() is before


def test_chunk_ends_checks_its_arguments():
    scanner = native_scanner(GPT4_SPLIT_PATTERN)
    with pytest.raises(ValueError, match="max must be >= 0"):
        patterns._native.chunk_ends(scanner, "a b", -1)
    with pytest.raises(ValueError):
        patterns._native.chunk_ends(object(), "a b", 1)
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate has no UTF-8
        patterns._native.chunk_ends(scanner, "a \ud800", 1, True)


@pytest.mark.parametrize("pattern", NATIVE, ids=IDS)
@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=60))
def test_any_text_splits_alike(pattern, text):
    assert chunk_splitter(pattern)(text) == findall(pattern, text)


def test_every_code_point_alone_and_after_a_space():
    """Each code point's class as the scanner sees it equals the regex module's."""
    everything = "".join(map(chr, range(0x110000)))
    for pattern in NATIVE:
        split = chunk_splitter(pattern)
        for start in range(0, 0x110000, 0x10000):
            block = everything[start : start + 0x10000]
            text = " ".join(block) + "\n" + "x".join(block)
            assert split(text) == findall(pattern, text), hex(start)


def test_other_patterns_use_the_regex_module_holding_the_gil():
    split = chunk_splitter(r"\w+|\W")
    assert split.func == patterns.compile_pattern(r"\w+|\W").findall
    assert split.keywords == {"concurrent": False}
    assert split("héllo, wörld") == ["héllo", ",", " ", "wörld"]


@pytest.mark.parametrize("spelling", EQUIVALENT)
@settings(max_examples=1500, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(TRICKY), max_size=40))
def test_other_spellings_split_like_their_built_in_pattern(spelling, text):
    """Each other spelling cuts text as its built-in pattern does, in the regex module itself, so
    that giving it the C scanner changes no chunk; and it does take the C scanner."""
    built_in = NATIVE_PATTERNS[EQUIVALENT_PATTERNS[spelling]]
    assert findall(spelling, text) == findall(built_in, text) == chunk_splitter(spelling)(text)
    assert native_scanner(spelling) is native_scanner(built_in) is not None


def test_llama3_is_not_gpt4():
    """Llama 3's pattern is tiktoken's earlier cl100k one: the spaces after a text's last line
    break and a "\\s" run before a letter fall differently (why it has a scanner of its own)."""
    for text in ["a\n  ", "x\r\n\t\ny", "a \u2028 b"]:
        assert chunk_splitter(LLAMA3_SPLIT_PATTERN)(text) == findall(LLAMA3_SPLIT_PATTERN, text)
    assert findall(LLAMA3_SPLIT_PATTERN, "a\n  ") != findall(GPT4_SPLIT_PATTERN, "a\n  ")
