"""Split patterns by name, and patterns that leave text out.

A string that looks like a name but is not registered ("gpt-4", "gpt5") used to become a regex
that matches only itself, so every text encoded to ``[]``: it is an error listing the names.
A pattern whose chunks skip characters (``\\w+`` skips spaces) makes encoding drop them:
training says so, naming the characters.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from hf_bbpe import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, O200K_SPLIT_PATTERN, RegexTokenizer, Tokenizer
from hf_bbpe.engine.training import counting_reference as chunk_counting
from hf_bbpe.engine.training.counting_reference import count_chunks
from hf_bbpe.engine.chunking.patterns import SPLIT_PATTERNS, resolve_pattern

MIX = Path(__file__).resolve().parents[2] / "data" / "text" / "mix-sample.txt"


@pytest.mark.parametrize("name", ["gpt-4", "gpt5", "cl100k-base", "o200", "GPT_4o"])
def test_an_unknown_name_is_an_error_listing_the_names(name):
    with pytest.raises(ValueError, match="registered names: gpt2, ") as caught:
        RegexTokenizer(name)
    assert repr(name) in str(caught.value)
    assert all(known in str(caught.value) for known in SPLIT_PATTERNS)


def test_the_error_suggests_the_closest_name():
    with pytest.raises(ValueError, match="did you mean 'gpt4'"):
        resolve_pattern("gpt-4")


@pytest.mark.parametrize("name, pattern", [("GPT4", GPT4_SPLIT_PATTERN), ("Gpt2", GPT2_SPLIT_PATTERN),
                                           ("O200K_BASE", O200K_SPLIT_PATTERN), ("CL100K_base", GPT4_SPLIT_PATTERN)])
def test_registered_names_ignore_letter_case(name, pattern):
    assert RegexTokenizer(name).pattern == pattern
    assert RegexTokenizer(name).encode("Hello world") == RegexTokenizer(name.lower()).encode("Hello world") != []


@pytest.mark.parametrize("regex", [r"\w+", r"[a-z]+|\s", r"(?:word)", "a|b"])
def test_a_regex_is_still_a_regex(regex):
    assert resolve_pattern(regex) == regex


def train_warnings(tok: Tokenizer, text, **kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok.train(text, 260, progress=False, **kwargs)
    return [str(w.message) for w in caught if "outside every chunk" in str(w.message)]


def test_a_pattern_that_skips_text_warns_at_train_time_naming_the_characters():
    text = "hello, world! hello again"
    found = train_warnings(RegexTokenizer(r"\w+"), text)
    assert len(found) == 1
    message = found[0]
    assert f"leaves 5 of {len(text)} characters" in message
    assert "' ' x3" in message and "',' x1" in message and "'!' x1" in message
    assert "drops" in message


def test_extend_warns_too():
    base = RegexTokenizer(r"\w+")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base.train("aaa bbb", 257, progress=False)
    with pytest.warns(UserWarning, match="leaves 2 of 8 characters"):
        base.extend("ab ab ab", 1, progress=False)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k"])
def test_registered_patterns_cover_real_text(pattern):
    docs = MIX.read_text(encoding="utf-8").split("\n\n")[:400]
    assert train_warnings(RegexTokenizer(pattern), docs) == []


def test_parallel_counting_reports_the_same_characters(monkeypatch):
    """Batches counted in worker processes, and one long string counted in segments, report
    exactly what one sequential pass finds."""
    docs = MIX.read_text(encoding="utf-8").split("\n\n")
    pattern = r"\p{L}+|\p{N}"
    expected_total = sum(len(doc) for doc in docs)
    dropped = sum(len(doc) - sum(map(len, chunk_counting.compile_pattern(pattern).findall(doc))) for doc in docs)
    monkeypatch.setattr(chunk_counting, "_BATCH_CHARS", 20_000)
    with pytest.warns(UserWarning, match=f"leaves {dropped} of {expected_total} characters"):
        count_chunks(docs, pattern, num_workers=2)
    text = "".join(docs)
    monkeypatch.setattr(chunk_counting, "_SEGMENT_CHARS", 30_000)
    monkeypatch.setattr(chunk_counting, "_SEAM_CHARS", 2_000)
    with pytest.warns(UserWarning, match=f"leaves {dropped} of {len(text)} characters"):
        counts = count_chunks(text, pattern, num_workers=2)
    with pytest.warns(UserWarning, match=f"leaves {dropped} of"):
        assert counts == count_chunks(text, pattern, num_workers=1)
