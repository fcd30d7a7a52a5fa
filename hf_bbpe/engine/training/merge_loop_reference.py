"""The BPE merge loop in pure Python: the readable twin of ``csrc/merge/``.

``trainer.train_merges`` runs the C kernel when it is built and this module otherwise: in the
copy of the tokenizer code that transformers saves beside a model for ``trust_remote_code=True``
(a folder never holds a compiled module), or in a source checkout that was not built. Both have
the same ``train`` function, take the same arguments and return the same merges in the same
order; tests/engine/training/test_merge_loop.py holds the kernel to this file on hypothesis corpora.

The algorithm, step by step (names as in the C file):

* All unique words lie end to end in one list of symbols. Each word is a doubly linked list
  (``prv``/``nxt``): a merge overwrites the left symbol with the new id and unlinks the right one,
  so positions never move, and a position identifies one place in the corpus for good.
* Every adjacent pair has a :class:`_Pair` record: its total count (the sum of the counts of the
  words it occurs in, once per occurrence) and the positions of its left symbol. Positions are
  appended in increasing order (all at the start, or during the one merge that created the
  pair), so each list is sorted. A position goes stale when a neighbouring merge consumes it;
  it is checked when read (:func:`_occurs_at`), never removed.
* A max-heap holds ``(count, tie key, pair)``. Updates are lazy: an existing pair's count only
  falls, so a popped entry whose count or key is out of date is pushed back with the current one;
  pairs that a merge creates are pushed after that merge.
* The tie key decides between equal counts, smaller first. ``"smallest_pair"`` (rustbpe's rule):
  ``left << 32 | right``, i.e. the pair ``(left, right)`` that sorts first. ``"first_occurrence"``
  (minbpe's rule, words in order of first appearance): the pair's first valid position, which is
  its first occurrence in the corpus. ``"huggingface"`` (``ranks`` given): the pair of the ids'
  ranks, ``ranks[left] << 32 | ranks[right]`` (an id past the table is its own rank), which is
  the pair that sorts first in ``tokenizers``' own ids.
* ``"huggingface"`` also counts as ``tokenizers``' BpeTrainer does, in 32 bits: the count it
  sees is the low 32 bits of the true count as an ``i32``, and its heap orders those as a ``u64``
  (a negative ``i32`` widened), which is the low 32 bits read unsigned (:func:`_hf_count`). A
  pair is queued when that ``i32`` is positive; a popped entry whose count is out of date goes
  back with the current one, even 0; the loop stops at a current count of 0. Below 2**31 this is
  the plain rule; past it, it is BpeTrainer's wrap-around, kept so that the merges stay its.
* Merging a pair walks its positions left to right. At each valid one, the pairs with the left
  and right neighbours lose the word's count, the pairs they now form with the new id gain it,
  and the merged pair loses it. With ``a == b`` (a run like ``aaaa``) this also removes the
  overlapping occurrences, exactly as merging left to right does.

The C kernel keeps this same state in far less memory (its file comment says how): symbols in
the bytes of the input with bitmaps for where symbols and words start, instead of four lists of
ints per symbol; positions as varint gaps; and no record at all for a pair whose count is too
small to matter yet (it is counted again from the symbols if the best count falls that low).
None of that changes which pair is merged when, so the two return the same merges.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Sequence

DONE, OUT_OF_PAIRS, BELOW_MIN_FREQUENCY = 0, 1, 2
"""The ``stop`` codes that ``train`` returns with the merges."""

_DEAD = -1  # symbol of a position that a merge consumed; never a token id
_NO_POSITION = (1 << 64) - 1  # tie key of a pair with no valid position left (sorts last)
_VETOED = -(1 << 62)  # count given to a pair that allow_pair rejected: never positive again
_INT32_MAX = (1 << 31) - 1
_LOW32 = (1 << 32) - 1
_MAX_SYMBOL_BYTES = (1 << 32) - 65  # the C kernel's positions are 32-bit byte offsets


def _hf_count(count: int) -> int:
    """BpeTrainer's view of a count: ``i32`` pair counts, ordered as ``u64`` (see the module doc)."""
    return count & _LOW32


def _hf_positive(count: int) -> bool:
    """Whether BpeTrainer's ``i32`` count is above 0, the condition for queueing a pair."""
    return 0 < count & _LOW32 <= _INT32_MAX


class _Pair:
    """One adjacent pair (a, b): total count, where it may occur, and bookkeeping."""

    __slots__ = ("a", "b", "count", "positions", "head", "stamp")

    def __init__(self, a: int, b: int) -> None:
        self.a = a
        self.b = b
        self.count = 0
        self.positions: list[int] = []
        self.head = 0  # positions[:head] are known to be stale
        self.stamp = -1  # the last merge that created this pair, so that it is pushed once


class _Corpus:
    """The symbols of all words with their links, the pair table and the tie-break rule."""

    def __init__(
        self, sym: list[int], lengths: Sequence[int], counts: Sequence[int], by_occurrence: bool,
        ranks: list[int] | None,
    ) -> None:
        """Link the words' symbols and count their pairs (``lengths`` already checked)."""
        n = len(sym)
        self.sym = sym
        self.prv = [-1] * n
        self.nxt = [-1] * n
        self.weight = [0] * n  # the count of the word each position belongs to
        self.pairs: dict[tuple[int, int], _Pair] = {}
        self.by_occurrence = by_occurrence
        self.ranks = ranks
        start = 0
        for length, count in zip(lengths, counts):
            end = start + length
            for i in range(start, end):
                self.weight[i] = count
                self.prv[i] = i - 1 if i > start else -1
                self.nxt[i] = i + 1 if i + 1 < end else -1
            for i in range(start, end - 1):
                self.bump(sym[i], sym[i + 1], count, i)
            start = end

    def bump(self, a: int, b: int, delta: int, position: int | None = None) -> _Pair:
        """Add ``delta`` to the count of (a, b), creating it if new, and record ``position``."""
        pair = self.pairs.get((a, b))
        if pair is None:
            pair = self.pairs[a, b] = _Pair(a, b)
        pair.count += delta
        if position is not None:
            pair.positions.append(position)
        return pair

    def occurs_at(self, pair: _Pair, i: int) -> bool:
        """Whether ``pair`` still occurs at position ``i`` (its entry may be stale)."""
        j = self.nxt[i]
        return self.sym[i] == pair.a and j >= 0 and self.sym[j] == pair.b

    def rank(self, token: int) -> int:
        """A token's place in ``tokenizers``' order of ids: ``ranks[token]``, or itself past the table."""
        return self.ranks[token] if token < len(self.ranks) else token

    def tie_key(self, pair: _Pair) -> int:
        """Smaller wins among equal counts: the pair's ids (or ranks), or its first valid position."""
        if self.ranks is not None:
            return self.rank(pair.a) << 32 | self.rank(pair.b)
        if not self.by_occurrence:
            return pair.a << 32 | pair.b
        positions = pair.positions
        while pair.head < len(positions) and not self.occurs_at(pair, positions[pair.head]):
            pair.head += 1
        return positions[pair.head] if pair.head < len(positions) else _NO_POSITION

    def heap_count(self, pair: _Pair) -> int:
        """The count the heap orders by: the pair's count, or BpeTrainer's 32-bit view of it."""
        return pair.count if self.ranks is None else _hf_count(pair.count)

    def queued(self, pair: _Pair) -> bool:
        """Whether a pair with this count goes into the heap (at the start, or when a merge made it)."""
        return pair.count > 0 if self.ranks is None else _hf_positive(pair.count)

    def heap_entry(self, pair: _Pair) -> tuple[int, int, int, int]:
        """A heap item: heapq is a min-heap, so the count is negated; (a, b) only breaks exact ties."""
        return (-self.heap_count(pair), self.tie_key(pair), pair.a, pair.b)

    def merge(self, pair: _Pair, x: int, merge_number: int) -> list[_Pair]:
        """Replace every occurrence of ``pair``, left to right, by ``x``; return the pairs it created."""
        a, b = pair.a, pair.b
        sym, prv, nxt = self.sym, self.prv, self.nxt
        positions = pair.positions  # no entries are added to it during the pass: new pairs contain x
        pair.positions = []
        created: list[_Pair] = []
        for i in positions[pair.head if self.by_occurrence else 0:]:
            j = nxt[i]
            if sym[i] != a or j < 0 or sym[j] != b:
                continue  # stale: a neighbouring merge consumed this occurrence
            c = self.weight[i]
            left, right = prv[i], nxt[j]
            made = []
            if left >= 0:
                self.bump(sym[left], a, -c)
                made.append(self.bump(sym[left], x, c, left))
            if right >= 0:
                self.bump(b, sym[right], -c)
                made.append(self.bump(x, sym[right], c, i))
            pair.count -= c
            for new_pair in made:
                if new_pair.stamp != merge_number:
                    new_pair.stamp = merge_number
                    created.append(new_pair)
            sym[i] = x
            sym[j] = _DEAD
            nxt[i] = right
            if right >= 0:
                prv[right] = i
        return created


def train(
    symbols: bytes | Sequence[int],
    lengths: Sequence[int],
    counts: Sequence[int],
    num_merges: int,
    first_id: int,
    taken: set[int] | None,
    by_occurrence: bool,
    min_frequency: int,
    on_merge: Callable[[int, int, int, int], object] | None,
    allow_pair: Callable[[int, int], bool] | None = None,
    ranks: object | None = None,
    consume: bool = False,
    as_arrays: bool = False,
) -> tuple[list[tuple[int, int, int, int]] | tuple[bytes, bytes], int]:
    """Learn up to ``num_merges`` merges; the same function as ``_merge_loop.train``.

    ``symbols``: the token ids of all words end to end (``bytes`` or a buffer of int32);
    ``lengths``: int32 per word; ``counts``: int64 per word. New ids count up from ``first_id``,
    skipping those in ``taken``. ``on_merge(a, b, new_id, count)`` is called after each merge;
    ``allow_pair(a, b)``, asked when a pair is about to be merged, vetoes it for good.
    ``ranks``, an int32 buffer holding a permutation of ``range(len(ranks))``, selects
    ``tokenizers``' BpeTrainer rules (the module doc): ids compare by ``ranks[id]``, and ids
    from ``len(ranks)`` on by themselves; ``by_occurrence`` must then be false. ``consume`` lets
    the C kernel work in ``symbols`` (writable, no longer needed by the caller) instead of a copy;
    this twin copies anyway.

    Returns ``(merges, stop)``: merges as ``[(a, b, new_id, count), ...]`` in order, or with
    ``as_arrays`` as two ``bytes``: int32 ``a, b, new_id`` per merge and int64 counts; stop is
    :data:`DONE`, :data:`OUT_OF_PAIRS` or :data:`BELOW_MIN_FREQUENCY`.
    """
    symbols, lengths, counts = _checked_buffers(symbols, lengths, counts)
    rank_list = _checked_ranks(ranks, by_occurrence)
    if any(length < 0 for length in lengths) or sum(lengths) != len(symbols):
        raise ValueError("word lengths do not add up to the number of symbols")
    if symbols and min(symbols) < 0:
        raise ValueError("token ids must be non-negative")
    corpus = _Corpus(symbols, lengths, counts, bool(by_occurrence), rank_list)
    hf = rank_list is not None
    heap = [corpus.heap_entry(pair) for pair in corpus.pairs.values() if corpus.queued(pair)]
    heapq.heapify(heap)

    merges: list[tuple[int, int, int, int]] = []
    next_id = first_id
    stop = DONE
    while len(merges) < num_merges:
        if not heap:
            stop = OUT_OF_PAIRS
            break
        entry = heapq.heappop(heap)
        pair = corpus.pairs[entry[2], entry[3]]
        if pair.count < 0 if hf else pair.count <= 0:
            continue  # vetoed, or no occurrence left (BpeTrainer's rules requeue that with count 0)
        current = corpus.heap_entry(pair)
        if current != entry:
            heapq.heappush(heap, current)  # out of date: requeue with the current count and key
            continue
        if hf and _hf_count(pair.count) == 0:
            stop = OUT_OF_PAIRS  # BpeTrainer stops at the first current count of 0
            break
        # under BpeTrainer's rules a negative i32 count is a huge u64, above any min_frequency
        below = _hf_positive(pair.count) and pair.count & _LOW32 < min_frequency if hf else pair.count < min_frequency
        if below:
            stop = BELOW_MIN_FREQUENCY
            break
        if allow_pair is not None and not allow_pair(pair.a, pair.b):
            pair.count = _VETOED
            continue
        while taken is not None and next_id in taken:
            next_id += 1
        if next_id > _INT32_MAX:
            raise OverflowError("token ids past 2**31")
        x = next_id
        next_id += 1
        count = pair.count
        for new_pair in corpus.merge(pair, x, len(merges)):
            if corpus.queued(new_pair):
                heapq.heappush(heap, corpus.heap_entry(new_pair))
        merges.append((pair.a, pair.b, x, count))
        if on_merge is not None:
            on_merge(pair.a, pair.b, x, count)
    if as_arrays:
        ids = array("i", [token for a, b, x, _ in merges for token in (a, b, x)])
        return (ids.tobytes(), array("q", [count for *_, count in merges]).tobytes()), stop
    return merges, stop


def _checked_ranks(ranks: object | None, by_occurrence: bool) -> list[int] | None:
    """The ``ranks`` buffer as a list, with the C kernel's checks."""
    if ranks is None:
        return None
    view = memoryview(ranks)
    if view.itemsize != 4:
        raise ValueError("ranks must be int32")
    if by_occurrence:
        raise ValueError("ranks (BpeTrainer's rules) and by_occurrence exclude each other")
    values = view.cast("B").cast("i").tolist()
    if sorted(values) != list(range(len(values))):
        raise ValueError("ranks must be a permutation of range(len(ranks))")
    return values


def _checked_buffers(symbols: object, lengths: object, counts: object) -> list[list[int]]:
    """The three buffers as lists, with the C kernel's checks of their item sizes."""
    symbols, lengths, counts = memoryview(symbols), memoryview(lengths), memoryview(counts)
    if (
        symbols.itemsize not in (1, 4)
        or lengths.itemsize != 4
        or counts.itemsize != 8
        or lengths.nbytes // 4 != counts.nbytes // 8
    ):
        raise ValueError("symbols must be uint8 or int32, lengths int32, counts int64, one per word")
    if symbols.nbytes > _MAX_SYMBOL_BYTES:
        raise OverflowError("too many symbols for one training run (4 GB of them)")
    # read the raw bytes as the C kernel does: uint8 or int32 symbols, int32 lengths, int64 counts
    symbol_format = "B" if symbols.itemsize == 1 else "i"
    return [view.cast("B").cast(fmt).tolist() for view, fmt in ((symbols, symbol_format), (lengths, "i"), (counts, "q"))]


_MASK64 = (1 << 64) - 1


def _mix64(x: int) -> int:
    """csrc/common/hash.h's mix64 (MurmurHash3's finaliser), on Python ints."""
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _MASK64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _MASK64
    return x ^ (x >> 33)


def reduce_words(symbols: object, lengths: object, counts: object,
                 num_merges: int) -> tuple[bytearray, bytearray, bytearray, int] | None:
    """Fewer words of int32 token ids for a loop that picks by count, then by ids
    (``tie_break="smallest_pair"``): ``(symbols, lengths, counts, least)`` as bytearrays (int32,
    int32, int64), or None when ``least`` would be below 2 (nothing to cut).

    A token spans whole input symbols, always the same first and last ones (it is always made by
    the same merge), so every occurrence of a pair of tokens sits on a boundary ``x | y`` of input
    symbols of one kind and counts no more than the input pair ``(x, y)``; merge counts never
    rise, so while the loop merges pairs of count ``least`` or more it never merges across a
    boundary whose input pair counts less. The input pairs are counted in a count-min sketch of
    one row (16-bit saturating counters, a power of 2 of them from 65,536 up to the number of
    symbols, pair ``(a, b)`` on counter ``mix64(a << 32 | b) & (size - 1)``), whose counter is at
    least the pair's count; ``least`` is half the ``num_merges``-th largest counter. The words are
    cut where the counter is below ``least``, parts of one symbol dropped and equal parts counted
    once (in order of first appearance): the loop picks the same pairs on them, and the caller
    checks that it did (every merge made, the last of count ``least`` or more). The C kernel's
    ``reduce_words`` returns the same bytes."""
    views = [memoryview(b).cast("B") for b in (symbols, lengths, counts)]
    bad = views[0].nbytes % 4 or views[1].nbytes % 4 or views[2].nbytes != views[1].nbytes * 2
    if not bad:
        ids, sizes, weights = views[0].cast("i").tolist(), views[1].cast("i").tolist(), views[2].cast("q").tolist()
        bad = any(n < 0 for n in sizes) or sum(sizes) != len(ids) or any(i < 0 for i in ids) or any(c < 0 for c in weights)
    if bad:
        raise ValueError("reduce_words: int32 ids (non-negative), int32 lengths adding up to them, int64 counts "
                         "(non-negative), one per word")
    size = 1 << 16
    while size * 2 <= len(ids):
        size *= 2
    sketch = [0] * size
    slot = [_mix64(ids[k] << 32 | ids[k + 1]) & (size - 1) for k in range(len(ids) - 1)]
    at = 0
    for n, c in zip(sizes, weights):
        for k in range(at, at + n - 1):
            sketch[slot[k]] = min(65535, sketch[slot[k]] + c)
        at += n
    histogram = [0] * 65536
    for v in sketch:
        histogram[v] += 1
    above, v = 0, 65535
    while v >= 1:
        above += histogram[v]
        if above >= num_merges:
            break
        v -= 1
    least = v // 2 if num_merges > 0 else 0
    if least < 2:
        return None
    parts: dict[tuple[int, ...], int] = {}  # part -> count, in order of first appearance
    at = 0
    for n, c in zip(sizes, weights):
        start = at
        for k in range(at, at + n):
            if k + 1 < at + n and sketch[slot[k]] >= least:
                continue
            if k + 1 - start >= 2:
                part = tuple(ids[start : k + 1])
                parts[part] = parts.get(part, 0) + c
            start = k + 1
        at += n
    return (bytearray(array("i", [i for part in parts for i in part]).tobytes()),
            bytearray(array("i", map(len, parts)).tobytes()), bytearray(array("q", parts.values()).tobytes()), least)
