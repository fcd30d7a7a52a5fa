"""The C kernel's caches on the whole-text path (``csrc/encode/``): the front cache of short
pieces, the piece cache of pieces that needed BPE (kept across calls, refusing pieces when full
and emptied after as many more), the exact pair table of "ranks" mode and the dense byte-pair
table. Whatever the caches hold, ids equal the pure-Python twin and tiktoken's.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import Tokenizer
from hf_bbpe.engine.encoding import encoder as chunk_encoder
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS

from .test_batches import CHARS, cl100k, cl100k_ranks, twin_ids  # noqa: F401 (fixtures)
from .test_encoder_modes import random_ranks


@pytest.mark.parametrize("cache_max", [1, 3, 50])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), docs=st.lists(st.text(st.sampled_from(CHARS), max_size=60), max_size=30))
def test_tiny_piece_cache_fills_refuses_and_empties_yet_ids_stay_exact(cache_max, seed, docs):
    ranks = random_ranks(seed, 30, 6, shuffle=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chunk_encoder, "_KERNEL_CACHE_MAX_ENTRIES", cache_max)
        tok = Tokenizer.from_ranks(ranks, pattern="gpt4")
    reference = tiktoken.Encoding("t", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=ranks, special_tokens={})
    for _ in range(2):  # the second pass reads what the first one cached
        for doc in docs:
            assert tok.encode_ordinary(doc) == twin_ids(tok, NATIVE_PATTERNS["gpt4"], doc) == reference.encode_ordinary(doc)


@pytest.mark.parametrize("cache_max", [2, 40, 1 << 20])
def test_front_cache_of_many_ids_through_resets_in_one_text(cache_max):
    """Short pieces of more ids than a front slot holds (the slot then keeps where they are in
    the piece cache's arena), repeated across many blocks of one long text, while a tiny piece
    cache fills, refuses and is emptied between blocks: ids stay tiktoken's."""
    ranks = random_ranks(5, 30, 6, shuffle=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chunk_encoder, "_KERNEL_CACHE_MAX_ENTRIES", cache_max)
        tok = Tokenizer.from_ranks(ranks, pattern="gpt4")
    reference = tiktoken.Encoding("t", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=ranks, special_tokens={})
    rng = random.Random(3)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(6, 15))) for _ in range(60)]
    assert sum(len(reference.encode_ordinary(w)) > 3 for w in words) > 40
    text = " ".join(rng.choice(words) for _ in range(5000))
    expected = reference.encode_ordinary(text)
    for _ in range(3):
        assert tok.encode_ordinary(text) == expected


def test_piece_cache_grows_past_its_first_table():
    """More distinct pieces that need BPE than the piece cache's first table holds (it starts at
    2**16 slots, at most half full): the table doubles, moving its entries, and every piece is
    found again, with the ids of the first pass."""
    ranks = random_ranks(11, 40, 8, shuffle=True)
    tok = Tokenizer.from_ranks(ranks, pattern="gpt4")
    reference = tiktoken.Encoding("t", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=ranks, special_tokens={})
    rng = random.Random(1)
    words = list({"".join(rng.choice("abcdefgh") for _ in range(rng.randint(5, 12))) for _ in range(90_000)})
    assert len(words) > 2**16
    text = " ".join(words)
    expected = reference.encode_ordinary(text)
    assert tok.encode_ordinary(text) == expected
    assert tok.encode_ordinary(text) == expected
    assert tok.encode_batch(words[::7], num_threads=2) == reference.encode_ordinary_batch(words[::7])


def test_front_cache_doubles_once_on_a_large_job_and_ids_stay():
    """The front cache starts at 2**19 slots and doubles (emptied) once a review finds that more
    than one probe in 32 missed (every 2**21 probes, about 12 MB of text): here 2.2 million short
    pieces, 150K of them distinct, some of more ids than a front slot holds. Ids equal tiktoken's
    across the growth, after it from the larger table, and on two threads, whose second cache
    starts as a copy of the grown one."""
    ranks = random_ranks(13, 40, 8, shuffle=True)
    tok = Tokenizer.from_ranks(ranks, pattern="gpt4")
    reference = tiktoken.Encoding("t", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=ranks, special_tokens={})
    rng = random.Random(2)
    words = list({"".join(rng.choice("abcdefgh") for _ in range(rng.randint(3, 14))) for _ in range(150_000)})
    kernel = tok._encoder._kernel
    assert tok.encode_ordinary(" ".join(words[:50])) == reference.encode_ordinary(" ".join(words[:50]))
    assert kernel.cache_sizes()[0][0] == 2**19
    text = " ".join(rng.choices(words, k=2_200_000))
    expected = reference.encode_ordinary(text)
    assert tok.encode_ordinary(text) == expected
    assert kernel.cache_sizes()[0][0] == 2**20
    assert tok.encode_ordinary(text) == expected
    assert kernel.cache_sizes()[0][0] == 2**20  # once only
    half = len(words) // 2
    assert tok.encode_batch(words[half:half + 4000], num_threads=2) == reference.encode_ordinary_batch(words[half:half + 4000])
    assert tok.encode_ordinary(text, num_threads=2) == expected
    assert [sizes[0] for sizes in kernel.cache_sizes()[:2]] == [2**20, 2**20]


def test_many_distinct_long_pieces_through_the_caches():
    """Pieces of 2-40 bytes (both sides of the 16-byte front cache and the 32-token short loop),
    most of them distinct, each encoded twice: cold, then from the caches."""
    ranks = random_ranks(7, 60, 8, shuffle=True)
    tok = Tokenizer.from_ranks(ranks, pattern="gpt4")
    reference = tiktoken.Encoding("t", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=ranks, special_tokens={})
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdeé日本") for _ in range(rng.randint(1, 14))) for _ in range(3000)]
    text = " ".join(words)
    expected = reference.encode_ordinary(text)
    assert tok.encode_ordinary(text) == expected
    assert tok.encode_ordinary(text) == expected
    assert [tok.encode_ordinary(w) for w in words[:300]] == [reference.encode_ordinary(w) for w in words[:300]]


def test_clear_cache_gives_the_caches_back_and_ids_stay(cl100k):  # noqa: F811
    """``Tokenizer.clear_cache`` frees the kernel's piece and front caches and the spare ids
    buffer; encoding after it (one text, a long text on threads, a batch) fills them again with
    the same ids as before, and an array made before it keeps its ids."""
    text = (Path(__file__).resolve().parents[2] / "data" / "text" / "mix-sample.txt").read_text(encoding="utf-8")
    big = text * (1_500_000 // len(text) + 1)
    docs = text.split("\n\n")
    before = (cl100k.encode_ordinary(big), cl100k.encode_batch(docs, num_threads=2))
    kept = cl100k.encode_to_numpy(big, disallowed_special=())
    for _ in range(2):  # the second time, with nothing to free
        cl100k.clear_cache()
        assert (cl100k.encode_ordinary(big, num_threads=2), cl100k.encode_batch(docs, num_threads=2)) == before
        assert kept.tolist() == before[0]
