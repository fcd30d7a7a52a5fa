"""The BPE merge loop: the one place where merges are learned.

Training works on *unique* chunks ("words") with their counts, never on the raw corpus. For each
adjacent pair it keeps a total count and the set of words it occurs in; a heap orders the pairs.
Each merge rewrites only the words that contain the chosen pair and adjusts the counts of the
pairs around each occurrence, so its cost is proportional to the occurrences it changes.

Two deterministic tie-break rules pick among pairs with the same count:

``"smallest_pair"`` (default)
    the pair ``(left_id, right_id)`` that sorts first. This is rustbpe's rule: with the same
    documents and split pattern the merges equal rustbpe's, byte for byte.
``"first_occurrence"``
    the pair that occurs first in the training text, where words are ordered by first
    appearance. This is what minbpe's ``max(stats, key=stats.get)`` does over its
    insertion-ordered dict, so the merges equal minbpe's ``train`` on the same text.
"""

from __future__ import annotations

import heapq
import sys
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

TIE_BREAKS = ("smallest_pair", "first_occurrence")

Pair = tuple[int, int]


def train_merges(
    words: list[list[int]],
    counts: Sequence[int],
    num_merges: int,
    *,
    first_id: int = 256,
    taken_ids: Iterable[int] = (),
    tie_break: str = "smallest_pair",
    min_frequency: int = 1,
    offsets: list[list[int]] | None = None,
    on_merge: Callable[[Pair, int, int], None] | None = None,
) -> list[tuple[Pair, int]]:
    """Learn up to ``num_merges`` merges over ``words`` (lists of token ids, rewritten in place).

    ``counts[i]`` is how often ``words[i]`` occurs. New ids are given from ``first_id`` upwards,
    skipping ``taken_ids`` (special tokens, or ids of an existing vocabulary). With
    ``tie_break="first_occurrence"``, ``words`` must be in order of first appearance and
    ``offsets[i][j]`` is the byte offset of ``words[i][j]`` in its word (computed if omitted).
    ``on_merge(pair, new_id, count)`` is called after each merge (progress, verbose printing).

    Returns the merges in order as ``[((left, right), new_id), ...]``. Stops early, with a
    warning, when no pair occurs at least ``min_frequency`` times.
    """
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    min_frequency = max(1, min_frequency)
    by_occurrence = tie_break == "first_occurrence"
    if by_occurrence and offsets is None:
        offsets = [list(range(len(w))) for w in words]

    pair_counts: defaultdict[Pair, int] = defaultdict(int)
    where: defaultdict[Pair, set[int]] = defaultdict(set)
    first_seen: dict[Pair, tuple[int, int]] = {}
    for i, word in enumerate(words):
        if len(word) < 2:
            continue
        c = counts[i]
        for pair in zip(word, word[1:]):
            pair_counts[pair] += c
            where[pair].add(i)
        if by_occurrence:
            offs = offsets[i]
            for j, pair in enumerate(zip(word, word[1:])):
                if pair not in first_seen:
                    first_seen[pair] = (i, offs[j])

    def first_occurrence(pair: Pair) -> tuple[int, int]:
        """(word index, byte offset) of the first occurrence of ``pair``; drops stale words."""
        a, b = pair
        candidates = where[pair]
        for i in sorted(candidates):
            word = words[i]
            pos = _find_pair(word, a, b, 0)
            if pos >= 0:
                return i, offsets[i][pos]
            candidates.discard(i)
        return sys.maxsize, 0

    def heap_entry(pair: Pair, count: int) -> tuple:
        if by_occurrence:
            return (-count, *first_occurrence(pair), pair)
        return (-count, pair)

    if by_occurrence:
        heap = [(-c, *first_seen[p], p) for p, c in pair_counts.items() if c > 0]
        del first_seen
    else:
        heap = [(-c, p) for p, c in pair_counts.items() if c > 0]
    heapq.heapify(heap)

    taken = set(taken_ids)
    next_id = first_id
    merges: list[tuple[Pair, int]] = []
    while len(merges) < num_merges:
        if not heap:
            warnings.warn(
                f"training ran out of pairs to merge after {len(merges)} of {num_merges} merges "
                "(the corpus is too small for this vocab_size)",
                stacklevel=3,
            )
            break
        entry = heapq.heappop(heap)
        pair = entry[-1]
        count = pair_counts.get(pair, 0)
        if count <= 0:
            continue
        fresh = heap_entry(pair, count) if by_occurrence else (-count, pair)
        if fresh != entry:  # stale: the pair lost occurrences since it was pushed
            heapq.heappush(heap, fresh)
            continue
        if count < min_frequency:
            warnings.warn(
                f"training stopped after {len(merges)} of {num_merges} merges: no pair occurs "
                f"min_frequency={min_frequency} times",
                stacklevel=3,
            )
            break

        while next_id in taken:
            next_id += 1
        new_id = next_id
        next_id += 1
        merges.append((pair, new_id))

        created = _merge_everywhere(words, counts, offsets, pair, new_id, where.pop(pair), pair_counts)
        del pair_counts[pair]
        for new_pair, word_ids in created.items():
            where[new_pair] = word_ids
            c = pair_counts[new_pair]
            if c > 0:
                heapq.heappush(heap, heap_entry(new_pair, c))
        if on_merge is not None:
            on_merge(pair, new_id, count)
    return merges


def _find_pair(word: list[int], a: int, b: int, start: int) -> int:
    """Index of the first ``a, b`` at or after ``start`` in ``word``, or -1."""
    last = len(word) - 1
    index = word.index
    while True:
        try:
            k = index(a, start, last)
        except ValueError:
            return -1
        if word[k + 1] == b:
            return k
        start = k + 1


def _merge_everywhere(
    words: list[list[int]],
    counts: Sequence[int],
    offsets: list[list[int]] | None,
    pair: Pair,
    new_id: int,
    word_ids: set[int],
    pair_counts: defaultdict[Pair, int],
) -> dict[Pair, set[int]]:
    """Replace ``pair`` by ``new_id`` in the given words, left to right without overlap.

    Adjusts ``pair_counts`` by each word's count for every pair destroyed or created, and
    returns the created pairs (all contain ``new_id``) with the words they occur in.
    """
    a, b = pair
    created: defaultdict[Pair, set[int]] = defaultdict(set)
    for i in word_ids:
        word = words[i]
        k = _find_pair(word, a, b, 0)
        if k < 0:
            continue  # a stale index entry: an earlier merge consumed this occurrence
        c = counts[i]
        n = len(word)
        offs = offsets[i] if offsets is not None else None
        out: list[int] = []
        out_offs: list[int] = []
        pos = 0
        while k >= 0:
            out += word[pos:k]
            if offs is not None:
                out_offs += offs[pos : k + 1]
            if out:
                x = out[-1]
                pair_counts[(x, a)] -= c
                left = (x, new_id)
                pair_counts[left] += c
                created[left].add(i)
            if k + 2 < n:
                y = word[k + 2]
                pair_counts[(b, y)] -= c
                right = (new_id, y)
                pair_counts[right] += c
                created[right].add(i)
            out.append(new_id)
            pos = k + 2
            k = _find_pair(word, a, b, pos) if pos < n - 1 else -1
        out += word[pos:]
        words[i] = out
        if offs is not None:
            out_offs += offs[pos:]
            offsets[i] = out_offs
    return created
