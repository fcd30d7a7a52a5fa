"""The merge loop of one chunk, in Python: the readable twin of the C kernel's (csrc/encode/bpe.c
and piece.c), which tests hold to it.

``get(pair, default)`` gives the id a pair merges into, or ``default``. The lowest id merges
first, the leftmost on ties: minbpe's ``_encode_chunk`` and tiktoken's ``byte_pair_merge``.
Short chunks take :func:`merge_short`; long ones :func:`merge_long`, O(n log n) on a heap.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import repeat

NO_MERGE = 1 << 62
Rank = Callable[..., "int | None"]


def ranks_below(get: Rank, limit: int | None) -> Rank:
    """``get(pair, default)``: the pair's merged id, only ids below ``limit`` if given."""
    if limit is None:
        return get

    def below(pair: tuple[int, int], default: int | None = None) -> int | None:
        rank = get(pair)
        return rank if rank is not None and rank < limit else default

    return below


def merge_short(ids: list[int], get: Rank) -> list[int]:
    """Merge the lowest pair, leftmost on ties, one at a time; ``ranks[i]`` is the pair at i."""
    ranks = list(map(get, zip(ids, ids[1:]), repeat(NO_MERGE)))
    while ranks:
        best = min(ranks)
        if best == NO_MERGE:
            break
        at = ranks.index(best)
        ids[at : at + 2] = [best]
        del ranks[at]
        if at < len(ranks):
            ranks[at] = get((best, ids[at + 1]), NO_MERGE)
        if at > 0:
            ranks[at - 1] = get((ids[at - 1], best), NO_MERGE)
    return ids


def merge_long(ids: list[int], get: Rank) -> list[int]:
    """Heap of (merge id, position) over a doubly linked list of tokens.

    Popping in (merge id, position) order merges the lowest pair first and its occurrences
    left to right, exactly like the short loop; entries made stale by a neighbouring merge
    are recognised because the pair at that position no longer maps to the same id.
    """
    n = len(ids)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    nxt[-1] = -1
    alive = [True] * n
    heap = []
    for i in range(n - 1):
        r = get((ids[i], ids[i + 1]))
        if r is not None:
            heap.append((r, i))
    heapq.heapify(heap)
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        r, i = pop(heap)
        if not alive[i]:
            continue
        j = nxt[i]
        if j < 0 or get((ids[i], ids[j])) != r:
            continue
        ids[i] = r
        alive[j] = False
        k = nxt[j]
        nxt[i] = k
        if k >= 0:
            prv[k] = i
            r2 = get((r, ids[k]))
            if r2 is not None:
                push(heap, (r2, i))
        p = prv[i]
        if p >= 0:
            r2 = get((ids[p], r))
            if r2 is not None:
                push(heap, (r2, p))
    out = []
    i = 0
    while i >= 0:
        out.append(ids[i])
        i = nxt[i]
    return out
