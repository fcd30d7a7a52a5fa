"""The fast merge recovery equals the token-by-token reference (minbpe's recover_merges idea).

The fast one is the engine's chunk encoder in "ranks" mode (C and Python twin), the same merge
loop as encoding under a rank ceiling. On the three real vocabularies (every token of gpt2,
cl100k_base, o200k_base), on Llama 3 (whose 678 unbuildable tokens it keeps unmerged) and on
random vocabularies grown the way BPE grows them, plus perturbed ones whose tokens cannot all be
built: same merges, or the same error naming the same token.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

from conversion import FormatError
from conversion.merge_recovery import rank_bpe, recover_merges, recover_merges_slow

DATA = Path(__file__).resolve().parents[1] / "data"


def _real_ranks(name: str) -> dict[bytes, int]:
    if name == "gpt2":
        return data_gym_to_mergeable_bpe_ranks(str(DATA / "gpt2" / "vocab.bpe"), str(DATA / "gpt2" / "encoder.json"))
    if name == "cl100k_base":
        import tiktoken_ext

        return load_tiktoken_bpe(str(Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"))
    return load_tiktoken_bpe(str(DATA / "tiktoken" / "o200k_base.tiktoken"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_fast_equals_slow_on_every_token_of_real_vocabularies(name):
    ranks = _real_ranks(name)
    fast_merges, fast_bytes = recover_merges(ranks)
    slow_merges, slow_bytes = recover_merges_slow(ranks)
    assert list(fast_merges.items()) == list(slow_merges.items())
    assert fast_bytes == slow_bytes
    assert len(fast_merges) == len(ranks) - 256


def test_gpt2_merges_from_ranks_are_its_vocab_bpe():
    """GPT-2's vocab.bpe is exactly what its ranks imply (rank r = merge line r - 256)."""
    ranks = _real_ranks("gpt2")
    merges, byte_ids = recover_merges(ranks)
    inverse = {rank: token for token, rank in ranks.items()}
    from hf_bbpe.engine.chunking.byte_unicode import token_to_unicode

    lines = (DATA / "gpt2" / "vocab.bpe").read_text(encoding="utf-8").split("\n")[1:-1]
    assert [f"{token_to_unicode(inverse[a])} {token_to_unicode(inverse[b])}" for a, b in merges] == lines
    assert byte_ids[ord("!")] == 0


def _outcome(fn, ranks):
    try:
        return fn(ranks)
    except FormatError as exc:
        return ("error", str(exc))


def _grown_vocabulary(seed: int, alphabet_size: int, steps: int, shuffle_bytes: bool, holes: bool,
                      swap: bool) -> dict[bytes, int]:
    """Grow a vocabulary like BPE: repeatedly merge two adjacent pieces of a word's encoding."""
    rng = random.Random(seed)
    alphabet = [bytes([c]) for c in b"abcd\xe2\x82\xac"[:alphabet_size]]
    words = [b"".join(rng.choice(alphabet) for _ in range(rng.randint(2, 14))) for _ in range(8)]
    singles = [bytes([b]) for b in range(256)]
    if shuffle_bytes:
        rng.shuffle(singles)
    ranks = {token: i for i, token in enumerate(singles)}
    next_rank = 256
    for _ in range(steps):
        parts = rank_bpe(ranks, rng.choice(words))
        if len(parts) < 2:
            continue
        i = rng.randrange(len(parts) - 1)
        token = parts[i] + parts[i + 1]
        if token not in ranks:
            next_rank += rng.choice([1, 1, 2, 7]) if holes else 1
            ranks[token] = next_rank
    if swap:
        multi = [t for t in ranks if len(t) > 1]
        if len(multi) >= 2:
            x, y = rng.sample(multi, 2)
            ranks[x], ranks[y] = ranks[y], ranks[x]
    return ranks


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    alphabet_size=st.integers(1, 7),
    steps=st.integers(1, 60),
    shuffle_bytes=st.booleans(),
    holes=st.booleans(),
    swap=st.booleans(),
)
def test_fast_equals_slow_on_grown_vocabularies(seed, alphabet_size, steps, shuffle_bytes, holes, swap):
    ranks = _grown_vocabulary(seed, alphabet_size, steps, shuffle_bytes, holes, swap)
    assert _outcome(recover_merges, ranks) == _outcome(recover_merges_slow, ranks)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=2, max_size=6).map(lambda b: bytes(x % 3 + 97 for x in b)), max_size=25),
       st.randoms(use_true_random=False))
def test_fast_equals_slow_on_arbitrary_vocabularies(tokens, rng):
    """Arbitrary token sets in arbitrary order: mostly unbuildable, the errors must agree too."""
    multi = list(dict.fromkeys(tokens))
    rng.shuffle(multi)
    ranks = {bytes([b]): b for b in range(256)}
    for i, token in enumerate(multi):
        ranks[token] = 256 + i
    assert _outcome(recover_merges, ranks) == _outcome(recover_merges_slow, ranks)


def test_unbuildable_token_is_named():
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"abc"] = 256  # nothing of lower rank joins a, b, c
    with pytest.raises(FormatError, match=r"token b'abc' \(rank 256\) cannot be built"):
        recover_merges(ranks, "x.tiktoken")


def test_missing_byte_is_named():
    ranks = {bytes([b]): b for b in range(256) if b != 0x41}
    ranks[b"ab"] = 300
    with pytest.raises(FormatError, match=r"x.tiktoken: the single byte b'A' has no rank"):
        recover_merges(ranks, "x.tiktoken")


def test_duplicate_token_is_named():
    import numpy as np

    from conversion.tiktoken_ranks import tokenizer_from_arrays

    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"ab"]
    buf = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    lengths = np.array([len(t) for t in tokens], dtype=np.int64)
    ranks = np.arange(len(tokens), dtype=np.int64)
    with pytest.raises(FormatError, match=r"x.tiktoken: token b'ab' has two ranks, 256 and 257"):
        tokenizer_from_arrays(buf, lengths, ranks, pattern=None, special_tokens=None, source="x.tiktoken")


@pytest.mark.parametrize("native", [True, False])
def test_llama3_unmerged_tokens_are_the_ones_the_reference_cannot_build(native):
    """Llama 3's rank file: every token the engine recovers a merge for is the reference's merge,
    and the 678 it keeps unmerged are exactly those the reference finds unbuildable."""
    from hf_bbpe.engine.encoding.encoder import ChunkEncoder
    from tests.support.families import LLAMA3_MODEL

    ranks = load_tiktoken_bpe(str(LLAMA3_MODEL))
    vocab = {rank: token for token, rank in ranks.items()}
    byte_ids = [ranks[bytes([b])] for b in range(256)]
    merges, unmerged = ChunkEncoder({}, byte_ids, mode="ranks", vocab=vocab, native=native).recover_merges()
    assert len(unmerged) == 678 and vocab[100421] == b".:.:" and 100421 in unmerged
    assert len(merges) + len(unmerged) + 256 == len(ranks)
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = rank_bpe(ranks, token, max_rank=rank)
        if rank in unmerged:
            assert len(parts) != 2, token
        else:
            assert merges[(ranks[parts[0]], ranks[parts[1]])] == rank
