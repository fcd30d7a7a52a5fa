"""The C pre-tokenizer splits exactly like the regex module does with the same pattern
(GPT-2, GPT-4, o200k and Llama 3), and the other spellings of those patterns that take the C
scanner (``patterns.EQUIVALENT_PATTERNS``) split like their own spelling in the regex module."""

from __future__ import annotations

from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import patterns
from hf_bbpe.patterns import (
    EQUIVALENT_PATTERNS,
    GPT2_SPLIT_PATTERN,
    GPT4_SPLIT_PATTERN,
    LLAMA3_SPLIT_PATTERN,
    NATIVE_PATTERNS,
    O200K_SPLIT_PATTERN,
    chunk_splitter,
    native_scanner,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "text"
NATIVE = [GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, O200K_SPLIT_PATTERN, LLAMA3_SPLIT_PATTERN]
IDS = ["gpt2", "gpt4", "o200k", "llama3"]
EQUIVALENT = list(EQUIVALENT_PATTERNS)

# Characters at every decision of the patterns: contraction letters in both cases (and U+017F,
# which (?i) folds to s), each kind of space and line break, digits of several scripts, letters
# of each case class (Lu, Ll, Lt, Lm, Lo), marks, punctuation, "/", symbols, a lone surrogate.
TRICKY = list("aZ'sSdDmMtTlLvVeErRkK\u017f\u212a \t\n\r\x0b\x0c\x1c\x85\u00a0\u2028\u3000"
              "0123\u0663\u00bd\u2460.,!?-/_(\u00e9\u0301\u0903\u01c5\u02b0\u4f60\u597d"
              "\U0001f642\U0001d400") + ["\ud800"]


def findall(pattern: str, text: str) -> list[str]:
    return regex.findall(pattern, text)


def test_native_pretokenizer_is_built():
    """The C pre-tokenizer is part of the install: a missing build fails here instead of passing
    every comparison below vacuously."""
    assert patterns._native is not None, "hf_bbpe._pretokenize is not built (pip install -e .)"


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


def test_other_patterns_use_the_regex_module():
    assert chunk_splitter(r"\w+|\W") == patterns.compile_pattern(r"\w+|\W").findall


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
