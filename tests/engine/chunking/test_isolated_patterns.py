"""The C scanners of the isolated patterns (``patterns.ISOLATED_PATTERNS``: SuperBPE's stage 2) cut
text as ``tokenizers``' ``Split(pattern, "isolated")`` does: the matches and the text between them.

The references: ``pre_tokenizers.isolated_split`` with the regex module (hypothesis, every str
kind, both UTF-8 window builds), and ``tokenizers`` itself on real text. (SuperBPE's stage-1
pattern matches every character, so it is one of ``NATIVE_PATTERNS``, which test_patterns.py
holds to the regex module.)
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex, pre_tokenizers

from hf_bbpe import RegexTokenizer
from hf_bbpe.engine.chunking import patterns
from hf_bbpe.engine.chunking.patterns import ISOLATED_PATTERNS, SUPERBPE_STAGE2_SPLIT_PATTERN, native_isolated_splitter, native_scanner
from hf_bbpe.engine.chunking.pre_tokenizers import ByteLevel, Sequence, Split, isolated_split
from tests.engine.chunking.test_patterns import (
    DATA, KINDS, NO_SURROGATE, TEXT_ENDS, TRICKY, WINDOW_BUILDS, WINDOW_CHARS, WORDY, ends_of, str_kind, text_of_kind,
    utf8_ends_of, window_build,
)

NAMES = list(ISOLATED_PATTERNS)


def reference(name: str, text: str) -> list[str]:
    return isolated_split(patterns.compile_pattern(ISOLATED_PATTERNS[name]), text)


def tokenizers_pieces(name: str, text: str) -> list[str]:
    split = pre_tokenizers.Split(Regex(ISOLATED_PATTERNS[name]), behavior="isolated", invert=False)
    return [piece for piece, _ in split.pre_tokenize_str(text)]


def test_isolated_patterns_have_scanners():
    """Each isolated pattern has its C scanner (a missing one would pass every test below vacuously)."""
    for name, pattern in ISOLATED_PATTERNS.items():
        assert native_scanner(pattern, isolated=True) is not None, name
        assert native_scanner(pattern) is None  # (its matches alone are not what it scans)
        assert native_isolated_splitter(pattern) is getattr(patterns._native, f"split_{name}")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("file", ["mix-sample.txt", "taylorswift.txt"])
def test_real_text_splits_as_tokenizers_does(name, file):
    text = (DATA / file).read_text(encoding="utf-8")
    chunks = native_isolated_splitter(ISOLATED_PATTERNS[name])(text)
    assert chunks == reference(name, text) == tokenizers_pieces(name, text)
    assert max(map(len, chunks)) > 200  # (superword chunks: sentences)


# Every decision of the stage-2 pattern: digits (ASCII and other scripts), runs of spaces before
# letters, punctuation, other whitespace and the end, punctuation alone and in runs, with line
# breaks and slashes after them, marks (punctuation to the pattern: [^\s\p{L}\p{N}]), letters.
STAGE2 = list("ab Z" * 3) + list("  \t\n\r\x0b\x1c.,!-/(_\u0301\u00a0\u3000\u0663\u00bd") + ["..", " --", "\r\n", "//"] \
    + list("\u00e9\u4f60\U0001f642\U0001d400")


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=1500, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(TRICKY), max_size=40)
       | st.lists(st.sampled_from(STAGE2), max_size=40).map("".join))
def test_tricky_text_splits_alike(name, text):
    assert native_isolated_splitter(ISOLATED_PATTERNS[name])(text) == reference(name, text)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(STAGE2), max_size=30).map("".join))
def test_tricky_text_splits_as_tokenizers_does(name, text):
    assert native_isolated_splitter(ISOLATED_PATTERNS[name])(text) == tokenizers_pieces(name, text)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=400, deadline=None)
@given(data=st.data(), batch=st.sampled_from([0, 1, 2, 3, 5, 64]))
def test_each_kind_and_batch_splits_alike(name, kind, data, batch):
    """Each str kind's instance, chunk by chunk (0) and a batch of ends at a time."""
    text = data.draw(text_of_kind(kind, TRICKY + [c for c in STAGE2 if len(c) == 1]) | text_of_kind(kind, WORDY, max_size=60))
    assert str_kind(text) == kind
    scanner = native_scanner(ISOLATED_PATTERNS[name], isolated=True)
    assert patterns._native.chunk_ends(scanner, text, batch) == ends_of(reference(name, text))


# Long ASCII stretches for the window scanners (64 bytes at a time): words and spaces (the text
# between matches, which a window may not end), runs of spaces before letters and before other
# whitespace, punctuation runs with line breaks and slashes after them, numbers; and characters
# outside ASCII, letters of 2, 3 and 4 bytes and others (where a window stops).
WINDOW_WORDS = [" the", " of", "word", "  x", "   ", " \t", "  \n", "...", " --", ".\n", ";\r\n//", "--\n/x", "1234567",
                " 12", "a.b", "x, y", "(x)", "'s", "\u00e9t\u00e9", " \u4f60\u597d", "\U0001d400x", "\u00d7", "\u0301\u0301",
                " \u00a0 ", "\n\n", "e.g.", "//", "x/", " /", "\x0c"]


@pytest.mark.parametrize("build", WINDOW_BUILDS)
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=1200, deadline=None)
@given(words=st.lists(st.sampled_from(WINDOW_WORDS), min_size=10, max_size=80),
       text=st.text(st.sampled_from(NO_SURROGATE), max_size=40), batch=st.sampled_from([0, 1, 7, 64, 128]))
def test_utf8_instance_splits_alike(build, name, words, text, batch):
    """The UTF-8 instance (what the encoder splits: positions in bytes), whose window scanners take
    64 bytes at once, cuts where the regex module does."""
    scanner = native_scanner(ISOLATED_PATTERNS[name], isolated=True)
    for sample in ("".join(words), text, "".join(words[:5]) + text + "".join(words[5:])):
        with window_build(build):
            got = patterns._native.chunk_ends(scanner, sample, batch, True)
        assert got == utf8_ends_of(reference(name, sample)), sample


@pytest.mark.parametrize("build", WINDOW_BUILDS)
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=800, deadline=None)
@given(words=st.lists(st.sampled_from(WINDOW_WORDS), max_size=12), text=st.text(st.sampled_from(WINDOW_CHARS), max_size=40),
       end=st.sampled_from(TEXT_ENDS))
def test_utf8_text_ends_split_alike(build, name, words, text, end):
    """Texts of up to a few windows, ending in every way (test_patterns.TEXT_ENDS): the regex
    module's pieces."""
    scanner = native_scanner(ISOLATED_PATTERNS[name], isolated=True)
    for sample in ("".join(words) + end, "".join(words) + text + end):
        with window_build(build):
            got = patterns._native.chunk_ends(scanner, sample, 64, True)
        assert got == utf8_ends_of(reference(name, sample)), sample


@pytest.mark.parametrize("build", WINDOW_BUILDS)
@pytest.mark.parametrize("name", NAMES)
def test_utf8_instance_on_real_text(build, name):
    text = (DATA / "mix-sample.txt").read_text(encoding="utf-8")
    scanner = native_scanner(ISOLATED_PATTERNS[name], isolated=True)
    with window_build(build):
        assert patterns._native.chunk_ends(scanner, text, 64, True) == utf8_ends_of(reference(name, text))
        for paragraph in text.split("\n\n"):
            assert patterns._native.chunk_ends(scanner, paragraph, 7, True) == utf8_ends_of(reference(name, paragraph))


def test_isolated_split_reaches_the_c_path():
    """Split(stage 2, "isolated"), alone or before ByteLevel(use_regex=False), and pattern= with the
    pattern or its name: the C scanner splits (the gaps between matches included) and the kernel
    encodes whole texts with it."""
    text = (DATA / "mix-sample.txt").read_text(encoding="utf-8")[:20000]
    expected = reference("superbpe_stage2", text)
    for spec in ({"pre_tokenizer": Split(SUPERBPE_STAGE2_SPLIT_PATTERN, "isolated")},
                 {"pre_tokenizer": Sequence([Split(SUPERBPE_STAGE2_SPLIT_PATTERN), ByteLevel(False, use_regex=False)])},
                 {"pattern": SUPERBPE_STAGE2_SPLIT_PATTERN}, {"pattern": "superbpe_stage2"}):
        tok = RegexTokenizer(**spec)
        assert tok.chunking.split is patterns._native.split_superbpe_stage2, spec
        assert tok._scanner is native_scanner(SUPERBPE_STAGE2_SPLIT_PATTERN, isolated=True), spec
        assert tok.chunks(text) == expected, spec
        assert tok.pattern == SUPERBPE_STAGE2_SPLIT_PATTERN
        assert tok.plain_pattern is None  # (its chunks are not its matches: no tiktoken pattern)
    other = RegexTokenizer(pattern=r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}")  # any other regex: its matches alone
    assert other._scanner is None and "".join(other.chunks("a 12 ... b")) == "12 ..."
