"""The BPE merge loop: the one place where merges are learned.

Training works on *unique* chunks ("words") with their counts, never on the raw corpus. The loop
itself is C (``csrc/merge/``): every pair keeps its total count and the positions where it
occurs, a heap orders the pairs, and each merge rewrites only its own occurrences and the
counts of the pairs around them, so its cost is proportional to the occurrences it changes.
``engine/training/merge_loop_reference.py`` is the same loop in readable Python, and the tests hold the C kernel to it. It
runs when the kernel is not built: in the copy of this code that a saved folder carries for
``trust_remote_code=True``, which holds no compiled module (slower, same merges).

Three deterministic tie-break rules pick among pairs with the same count:

``"smallest_pair"`` (default)
    the pair ``(left_id, right_id)`` that sorts first. This is rustbpe's rule: with the same
    documents and split pattern the merges equal rustbpe's, byte for byte.
``"first_occurrence"``
    the pair that occurs first in the training text, where words are in order of first
    appearance. This is what minbpe's ``max(stats, key=stats.get)`` does over its
    insertion-ordered dict, so the merges equal minbpe's ``train`` on the same text.
``"huggingface"``
    the pair that sorts first in the ids ``tokenizers``' BpeTrainer gives: its alphabet (each
    byte as its byte-level character, GPT-2's table) sorted by code point, then merged tokens in
    the order they were made. Pair counts are read as its 32-bit counts (the same below 2**31).
    With a ByteLevel pipeline (ByteLevel(use_regex=True) for GPT-2's pattern, or
    Split(pattern, "isolated") then ByteLevel(use_regex=False)), the merges equal BpeTrainer's.
"""

from __future__ import annotations

import importlib
import itertools
import warnings
from array import array
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType

from ..chunking.byte_unicode import bytes_to_unicode
from .merge_loop_reference import BELOW_MIN_FREQUENCY, OUT_OF_PAIRS

TIE_BREAKS = ("smallest_pair", "first_occurrence", "huggingface")

Pair = tuple[int, int]
Buffer = bytes | bytearray | memoryview | array


def merge_kernel() -> ModuleType:
    """The module whose ``train`` runs the merge loop: the C kernel if built, else its Python twin."""
    try:  # imported by name, not "from .", so that remote-code copies of this file load without it
        return importlib.import_module("._merge_loop", __package__)
    except ImportError:
        return importlib.import_module(".merge_loop_reference", __package__)


def train_merges(
    words: Sequence[bytes] | Sequence[Sequence[int]],
    counts: Sequence[int],
    num_merges: int,
    *,
    first_id: int = 256,
    taken_ids: Iterable[int] = (),
    tie_break: str = "smallest_pair",
    min_frequency: int = 1,
    on_merge: Callable[[int, int, int, int], None] | None = None,
    allow_pair: Callable[[int, int], bool] | None = None,
    byte_ids: Sequence[int] = range(256),
) -> list[tuple[Pair, int]]:
    """Learn up to ``num_merges`` merges over ``words`` with their ``counts``.

    A word is ``bytes`` (its byte values are its token ids) or a sequence of token ids.
    New ids are given from ``first_id`` upwards, skipping ``taken_ids`` (special tokens, or the
    ids of an existing vocabulary). With ``tie_break="first_occurrence"`` words must be in
    order of first appearance. ``on_merge(left, right, new_id, count)`` is called after each
    merge (progress bars, verbose printing). ``allow_pair(left, right)``, if given, is asked
    about each pair before it is merged; a pair it rejects is never merged. ``byte_ids[b]`` is
    the id of byte ``b`` (``tie_break="huggingface"`` orders byte tokens by their characters).

    Returns the merges in order as ``[((left, right), new_id), ...]``. Stops early, with a
    warning, when no pair occurs at least ``min_frequency`` times.
    """
    if len(words) != len(counts):
        raise ValueError("words and counts must have the same length")
    # (the buffers are made in the call: no name here holds them, so the kernel's symbols go as it ends)
    return train_flat_merges(
        _symbols(words), array("i", map(len, words)), array("q", counts), num_merges, first_id=first_id,
        taken_ids=taken_ids, tie_break=tie_break, min_frequency=min_frequency, on_merge=on_merge,
        allow_pair=allow_pair, byte_ids=byte_ids, consume=True,
    )


def _symbols(words: Sequence[bytes] | Sequence[Sequence[int]]) -> bytearray | array:
    if all(isinstance(w, (bytes, bytearray)) for w in words):
        return bytearray().join(words)
    return array("i", itertools.chain.from_iterable(words))


def train_flat_merges(
    symbols: Buffer,
    lengths: Buffer,
    counts: Buffer,
    num_merges: int,
    *,
    first_id: int = 256,
    taken_ids: Iterable[int] = (),
    tie_break: str = "smallest_pair",
    min_frequency: int = 1,
    on_merge: Callable[[int, int, int, int], None] | None = None,
    allow_pair: Callable[[int, int], bool] | None = None,
    byte_ids: Sequence[int] = range(256),
    consume: bool = False,
) -> list[tuple[Pair, int]]:
    """:func:`train_merges` over words laid end to end, as the merge loop takes them: ``symbols``
    (a buffer of uint8 bytes or int32 ids, every word's one after another), ``lengths`` (int32
    per word) and ``counts`` (int64 per word), e.g. the buffers of chunk counting's C kernel
    (native_counting.ChunkCounts), so that no Python object is made per word. With ``consume``
    the kernel works in ``symbols`` (writable, and nobody's after the call)."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    taken = set(taken_ids)
    ranks = huggingface_ranks(byte_ids) if tie_break == "huggingface" else None
    # the merges come as arrays, so that no Python object per merge exists while the kernel's memory does
    (raw_ids, _), stop = merge_kernel().train(
        symbols, lengths, counts, num_merges, first_id, taken or None,
        tie_break == "first_occurrence", max(1, min_frequency), on_merge, allow_pair, ranks, consume, True,
    )
    del symbols
    ids = memoryview(raw_ids).cast("i")
    learned = [((ids[k], ids[k + 1]), ids[k + 2]) for k in range(0, len(ids), 3)]
    if stop == OUT_OF_PAIRS:
        warnings.warn(
            f"training ran out of pairs to merge after {len(learned)} of {num_merges} merges "
            "(the corpus is too small for this vocab_size)",
            stacklevel=4,
        )
    elif stop == BELOW_MIN_FREQUENCY:
        warnings.warn(
            f"training stopped after {len(learned)} of {num_merges} merges: no pair occurs "
            f"min_frequency={min_frequency} times",
            stacklevel=4,
        )
    return learned


def reduce_words(symbols: Buffer, lengths: Buffer, counts: Buffer,
                 num_merges: int) -> tuple[bytearray, bytearray, bytearray, int] | None:
    """Words of int32 ids cut where no merge of count ``least`` or more can ever join them (their
    pair counts less), parts of one id dropped and equal parts counted once: ``(symbols,
    lengths, counts, least)``, or None when there is nothing to cut (see ``merge_loop.reduce_words``,
    which the C kernel's equals). With ``tie_break="smallest_pair"`` the loop learns on these the
    merges it learns on the words, as long as it makes ``num_merges`` of them and the last counts
    ``least`` or more: SuperBPE's stage 2 (whose distinct chunks are mostly sentences seen once,
    7.5M ids on the 49 MB mix) so runs on about a seventh of its ids, and on all of them where that
    check fails (``training.learn``)."""
    return merge_kernel().reduce_words(symbols, lengths, counts, num_merges)


def huggingface_ranks(byte_ids: Sequence[int] = range(256)) -> array:
    """The order in which BpeTrainer numbers the tokens there are before training, as ranks by id.

    BpeTrainer's alphabet is sorted by code point of the byte-level characters (``!`` first, the
    68 bytes shifted past U+00FF last), so byte ``b`` ranks by ``bytes_to_unicode()[b]``; the
    ids below the largest byte id that are not bytes (an extended tokenizer's merges) follow in id
    order. Ids from ``len(ranks)`` on, merges being learned, rank as themselves, after all these.
    """
    table = bytes_to_unicode()
    by_character = sorted(range(256), key=lambda b: table[b])
    size = max(byte_ids) + 1
    ranks = array("i", [-1]) * size
    for rank, b in enumerate(by_character):
        ranks[byte_ids[b]] = rank
    rank = 256
    for token in range(size):
        if ranks[token] < 0:
            ranks[token] = rank
            rank += 1
    return ranks
