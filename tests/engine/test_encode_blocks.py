"""The whole-text kernel (``_chunk_bpe.encode_text``/``encode_texts``) reads a str's UTF-8 and takes
its chunks in blocks: the first pass splits a block, the next ones look its chunks up in the caches.

* ASCII, Latin-1, CJK and emoji text, in strs of every kind, and single chunks longer than a
  block's worth of text, give tiktoken's ids, in one text and per document, whatever falls
  together in a block.
* A lone surrogate anywhere in a text (first chunk, last, just past a block, far on) makes the
  kernel give up on the text (None: a str with one has no UTF-8), and ``encode_ordinary`` then
  follows its own rule as in a batch.
"""

from __future__ import annotations

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe.patterns import NATIVE_PATTERNS

from .test_batch_threads import cl100k, cl100k_ranks  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def cl100k_tiktoken(cl100k_ranks) -> tiktoken.Encoding:  # noqa: F811
    return tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks, special_tokens={})


# side by side: ASCII words, Latin-1, CJK and emoji text, and chunks of thousands of bytes
SEGMENTS = st.sampled_from(["the quick brown fox ", "naïve café, ", "日本語の文章。", "😀 ok ", "  \n", "123456 ",
                            "x" * 3000, "語" * 3000, "é" * 4200, " " * 9000, "don't stop "])


@settings(max_examples=30, deadline=None)
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=80))
def test_blocks_of_chunks_equal_tiktoken(cl100k, cl100k_tiktoken, parts):  # noqa: F811
    text = "".join(parts)
    assert cl100k.encode_ordinary(text) == cl100k_tiktoken.encode_ordinary(text)
    expected = [cl100k_tiktoken.encode_ordinary(p) for p in parts]
    assert cl100k._encoder.encode_texts(parts, cl100k._scanner, True) == expected
    assert [cl100k._encoder.encode_text(p, cl100k._scanner) for p in parts] == expected


@pytest.mark.parametrize("before", [0, 1, 31, 32, 33, 64, 127, 128, 129, 256, 1000])
def test_lone_surrogate_anywhere_in_a_block_makes_the_kernel_give_up(cl100k, before):  # noqa: F811
    text = "word " * before + "\ud800" + " tail and more words" * 40
    assert cl100k._encoder.encode_text(text, cl100k._scanner) is None
    assert cl100k.encode_ordinary(text) == cl100k.encode_batch([text], num_threads=2)[0]
