"""The whole-text kernel (``_chunk_bpe.encode_text``/``encode_texts``) reads a str's UTF-8 and takes
its chunks in blocks: the first pass splits a block, the next ones look its chunks up in the caches.

* ASCII, Latin-1, CJK and emoji text, in strs of every kind, and single chunks longer than a
  block's worth of text, give tiktoken's ids, in one text and per document, whatever falls
  together in a block.
* A lone surrogate anywhere in a text (first chunk, last, just past a block, far on) makes the
  kernel give up on the text (None: a str with one has no UTF-8), and ``encode_ordinary`` then
  follows its own rule as in a batch.
* Chunks given as a list of strs (``encode_chunks``: a pattern no C scanner knows) take the same
  blocks: a custom pattern's ids equal tiktoken's on the same pattern, in one text of many blocks
  and per document; empty strs add nothing; a chunk that is no str, or has a lone surrogate, is
  an error naming it.
"""

from __future__ import annotations

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import Tokenizer
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS, compile_pattern
from tests.support.families import mix_documents

from .test_batches import cl100k, cl100k_ranks  # noqa: F401 (fixtures)


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


# GPT-2's pattern with single digits: no C scanner knows it (the regex module splits)
CUSTOM = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def test_chunk_lists_of_a_custom_pattern_equal_tiktoken(cl100k_ranks):  # noqa: F811
    tok = Tokenizer.from_ranks(cl100k_ranks, pattern=CUSTOM)
    assert tok._scanner is None
    reference = tiktoken.Encoding("custom", pat_str=CUSTOM, mergeable_ranks=cl100k_ranks, special_tokens={})
    documents = mix_documents()
    text = "\n\n".join(documents)
    assert len(compile_pattern(CUSTOM).findall(text)) > 50 * 128  # many blocks
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert [tok.encode_ordinary(d) for d in documents] == [reference.encode_ordinary(d) for d in documents]


@settings(max_examples=30, deadline=None)
@given(parts=st.lists(SEGMENTS | st.just(""), min_size=0, max_size=40) | st.lists(SEGMENTS, min_size=129, max_size=400))
def test_chunk_lists_equal_each_chunk_alone(cl100k, parts):  # noqa: F811
    encoder = cl100k._encoder
    assert encoder.encode_chunks(parts) == [i for part in parts for i in encoder.encode_bytes(part.encode())]
    assert encoder.encode_chunks(iter(parts)) == encoder.encode_chunks(parts)


def test_a_chunk_list_with_no_str_or_a_lone_surrogate_is_an_error(cl100k):  # noqa: F811
    with pytest.raises(TypeError, match="chunk 2 is bytes, not str"):
        cl100k._encoder.encode_chunks(["a", "b", b"c"])
    with pytest.raises(UnicodeEncodeError):
        cl100k._encoder.encode_chunks(["a", "\ud800"])
    with pytest.raises(TypeError, match="iterable of str"):
        cl100k._encoder.encode_chunks(5)
