"""Recover the ordered merge pairs of a byte-level BPE vocabulary from its ranks.

A tiktoken file lists tokens and ranks only. BPE's merge list is implied by them (minbpe's
``recover_merges``): the token of rank ``r`` is made by merging the two tokens that rank-based
BPE, allowed only ranks below ``r``, leaves when run on the token's bytes.

:func:`recover_merges_slow` does exactly that, token by token; it is the reference (about 1 s
for cl100k_base). :func:`recover_merges` gets the same answer about 6 times faster (see
scripts/bench_load.py):

* **Candidates.** A cut ``token = left + right`` is a candidate if both halves are tokens of
  lower rank. All candidates of all tokens are found at once with numpy: every substring is
  looked up by a polynomial hash in a table of the token hashes.
* **The uncrossed cut.** Rank-based BPE on ``left + right`` ends as ``[left, right]`` exactly
  when no token is ever formed across the cut: the two halves then evolve as they do on their
  own, along their known merge trees (ranks only grow up a tree, so every merge happens at the
  time of its rank). Only the pieces touching the cut matter: the right edge of ``left``'s tree
  and the left edge of ``right``'s. Walking down both edges, the pair across the cut ``(x, y)``
  gets merged if it is a token whose rank comes before the next change of ``x`` or of ``y``
  (on equal ranks the leftmost pair goes first, as in tiktoken). A candidate whose cut is never
  crossed is the answer, since BPE is deterministic.
* **Rounds.** A candidate can be checked once both halves are resolved; each round checks, in
  numpy, every candidate that became checkable. There are as many rounds as the deepest merge
  tree is high (about 10 for cl100k_base).

The hashes can only make a substring look like a token it is not, never hide one: that can
reject the true candidate (the token is then left unresolved) or accept a false one (caught by
the byte-for-byte check of every recovered merge). Either way the slow method takes over, so
the result is always exact; it also names the first token that cannot be built at all.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import numpy as np

from .errors import FormatError

Merges = dict[tuple[int, int], int]

_BLOCK = 1024


def recover_merges(ranks: Mapping[bytes, int], source: object = "ranks") -> tuple[Merges, list[int]]:
    """``(merges, byte_ids)`` of a byte-level BPE vocabulary given as ``{token bytes: rank}``.

    ``merges`` maps ``(left id, right id)`` to the token's id (its rank), in rank order;
    ``byte_ids[b]`` is the rank of the single byte ``b``. Ranks may have holes. Raises
    FormatError naming ``source`` and the first token that cannot be built by merging two
    tokens of lower rank, or a missing single byte.
    """
    tokens = list(ranks)
    buf = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    rank_arr = np.fromiter(ranks.values(), dtype=np.int64, count=len(tokens))
    return recover_merges_from_arrays(buf, lengths, rank_arr, source, ranks)


def recover_merges_from_arrays(
    buf: np.ndarray,
    lengths: np.ndarray,
    ranks: np.ndarray,
    source: object = "ranks",
    ranks_dict: Mapping[bytes, int] | None = None,
) -> tuple[Merges, list[int]]:
    """:func:`recover_merges` for tokens given as one byte buffer cut into ``lengths``.

    Token ``i`` is ``buf[sum(lengths[:i]) : sum(lengths[:i+1])]`` with rank ``ranks[i]``;
    ranks must be distinct (readers check that, naming the line); a token listed twice raises
    FormatError naming it. Readers call this directly, which saves a bytes object per token.
    """
    if len(ranks) > 1 and not bool(np.all(ranks[1:] > ranks[:-1])):
        order = np.argsort(ranks, kind="stable")
        starts = _starts(lengths)
        buf = _gather(buf, starts[order], lengths[order])
        lengths, ranks = lengths[order], ranks[order]
    if len(lengths) and int(lengths.min()) == 0:
        empty = int(np.flatnonzero(lengths == 0)[0])
        raise FormatError(f"{source}: rank {int(ranks[empty])} is the empty token")
    starts = _starts(lengths)
    singles = np.flatnonzero(lengths == 1)
    byte_rank = np.full(256, -1, dtype=np.int64)
    byte_rank[buf[starts[singles]]] = ranks[singles]
    missing = np.flatnonzero(byte_rank < 0)
    if len(missing):
        raise FormatError(f"{source}: the single byte {bytes([int(missing[0])])!r} has no rank "
                          f"({len(missing)} bytes missing); byte-level BPE needs all 256")
    try:
        splits = _recover_splits(buf, starts, lengths)
    except DuplicateTokenError as dup:
        first, second = sorted((int(ranks[dup.first]), int(ranks[dup.second])))
        raise FormatError(f"{source}: token {dup.token!r} has two ranks, {first} and {second}") from None
    if splits is None:
        if ranks_dict is None:
            data = buf.tobytes()
            ranks_dict = {data[s : s + n]: r for s, n, r in zip(starts.tolist(), lengths.tolist(), ranks.tolist())}
        return recover_merges_slow(ranks_dict, source)
    left, right, merged = splits
    merges = dict(zip(zip(ranks[left].tolist(), ranks[right].tolist()), ranks[merged].tolist()))
    return merges, byte_rank.tolist()


class DuplicateTokenError(Exception):
    def __init__(self, token: bytes, first: int, second: int) -> None:
        super().__init__(token, first, second)
        self.token, self.first, self.second = token, first, second


def _starts(lengths: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return starts


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[starts[i], starts[i] + lengths[i])`` laid end to end: each position's range
    number and its offset inside the range."""
    which = np.repeat(np.arange(len(lengths)), lengths)
    offset = np.arange(len(which), dtype=np.int64) - np.repeat(_starts(lengths), lengths)
    return which, offset


def _gather(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    which, offset = _ranges(starts, lengths)
    return buf[starts[which] + offset]


def _powers(base: int, count: int) -> np.ndarray:
    """``base**i mod 2**64`` for ``i < count`` (blocked, so no long Python loop)."""
    mask = (1 << 64) - 1
    small = np.empty(_BLOCK, dtype=np.uint64)
    value = 1
    for i in range(_BLOCK):
        small[i] = value
        value = value * base & mask
    step = value
    blocks = -(-count // _BLOCK)
    big = np.empty(blocks, dtype=np.uint64)
    value = 1
    for i in range(blocks):
        big[i] = value
        value = value * step & mask
    return (big[:, None] * small[None, :]).ravel()[:count]


class _SubstringIndex:
    """Finds which token, if any, equals a substring of the concatenated tokens.

    Substring ``[a, b)`` of ``buf`` hashes to ``sum((buf[a+i] + 1) * B**i) mod 2**64`` for a
    random odd ``B``, computed from prefix sums; token hashes sit in a direct-address table.
    """

    def __init__(self, buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        total = len(buf)
        base = random.getrandbits(64) | 1
        powers = _powers(base, total + 1)
        self.inverse_powers = _powers(pow(base, -1, 1 << 64), total + 1)
        self.prefix = np.zeros(total + 1, dtype=np.uint64)
        np.cumsum((buf.astype(np.uint64) + np.uint64(1)) * powers[:total], out=self.prefix[1:])
        keys = self.hash(starts, starts + lengths)
        # a slot shared by several tokens is marked -1 and searched in the sorted keys instead;
        # an empty slot points at index ``count``, a dummy key: "not found" is ``count``, which
        # is larger than every token index
        count = len(keys)
        bits = max(10, (16 * count).bit_length())
        self.shift = np.uint64(64 - bits)
        slots = self.slot(keys)
        self.table = np.full(1 << bits, count, dtype=np.int64)
        self.table[slots] = np.arange(count, dtype=np.int64)
        slot_order = np.sort(slots)
        self.table[slot_order[1:][slot_order[1:] == slot_order[:-1]]] = -1
        order = np.argsort(keys)
        self.sorted_keys = keys[order]
        self.sorted_ids = order
        same = np.flatnonzero(self.sorted_keys[1:] == self.sorted_keys[:-1])
        self.same_hash = list(zip(order[same].tolist(), order[same + 1].tolist()))
        self.not_found = count
        self.keys = np.append(keys, keys[0] + np.uint64(1) if count else np.uint64(0))

    def slot(self, keys: np.ndarray) -> np.ndarray:
        return ((keys * np.uint64(0x9E3779B97F4A7C15)) >> self.shift).astype(np.intp)

    def hash(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (self.prefix[b] - self.prefix[a]) * self.inverse_powers[a]

    def find(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Token index of each substring ``[a, b)``, or ``self.not_found``."""
        keys = self.hash(a, b)
        ids = self.table[self.slot(keys)]
        shared = np.flatnonzero(ids < 0)
        if len(shared):
            pos = np.searchsorted(self.sorted_keys, keys[shared])
            np.minimum(pos, len(self.sorted_keys) - 1, out=pos)
            ids[shared] = self.sorted_ids[pos]
        ids[self.keys[ids] != keys] = self.not_found
        return ids


def _recover_splits(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(left, right, merged)`` token indices (rank order) of every multi-byte token; None if a
    token is left unresolved or a merge fails the byte check."""
    count = len(lengths)
    index = _SubstringIndex(buf, starts, lengths)
    for i, j in index.same_hash:
        token = buf[starts[i] : starts[i] + lengths[i]].tobytes()
        if token == buf[starts[j] : starts[j] + lengths[j]].tobytes():
            raise DuplicateTokenError(token, i, j)

    # every cut of every multi-byte token whose left half is a token of lower rank...
    multi = np.flatnonzero(lengths > 1)
    which, offset = _ranges(starts[multi], lengths[multi] - 1)
    cand_tok = multi[which]
    cand_start = starts[cand_tok]
    cand_cut = cand_start + offset + 1
    cand_left = index.find(cand_start, cand_cut)
    keep = np.flatnonzero(cand_left < cand_tok)
    cand_tok, cand_cut, cand_left = cand_tok[keep], cand_cut[keep], cand_left[keep]
    # ...and whose right half is one too
    cand_right = index.find(cand_cut, starts[cand_tok] + lengths[cand_tok])
    keep = np.flatnonzero(cand_right < cand_tok)
    cand_tok, cand_cut, cand_left, cand_right = cand_tok[keep], cand_cut[keep], cand_left[keep], cand_right[keep]

    is_byte = lengths == 1
    resolved = is_byte.copy()
    left_child = np.full(count, -1, dtype=np.int64)
    right_child = np.full(count, -1, dtype=np.int64)
    # bytes exist from the start; any other token appears at the time of its rank (its index)
    time = np.where(is_byte, -1, np.arange(count, dtype=np.int64))
    pending = np.arange(len(cand_tok))
    while len(pending):
        pending = pending[~resolved[cand_tok[pending]]]
        ready = resolved[cand_left[pending]] & resolved[cand_right[pending]]
        batch = pending[ready]
        if len(batch) == 0:
            break
        pending = pending[~ready]
        passed = batch[_uncrossed(index, lengths, is_byte, time, left_child, right_child,
                                  cand_tok[batch], cand_cut[batch], cand_left[batch], cand_right[batch])]
        toks = cand_tok[passed]
        left_child[toks] = cand_left[passed]
        right_child[toks] = cand_right[passed]
        resolved[toks] = True
    if not bool(resolved.all()):
        return None
    # byte check: each token is its left half followed by its right half
    which, offset = _ranges(starts[multi], lengths[multi])
    tok = multi[which]
    part_left = left_child[tok]
    from_left = offset < lengths[part_left]
    source = np.where(from_left, starts[part_left] + offset, starts[right_child[tok]] + offset - lengths[part_left])
    if not np.array_equal(buf[source], buf[starts[tok] + offset]):
        return None
    left, right = left_child[multi], right_child[multi]
    if not np.array_equal(lengths[left] + lengths[right], lengths[multi]):
        return None
    return left, right, multi


def _uncrossed(index: _SubstringIndex, lengths: np.ndarray, is_byte: np.ndarray, time: np.ndarray,
               left_child: np.ndarray, right_child: np.ndarray, tok: np.ndarray, cut: np.ndarray,
               left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Mask of the candidates whose cut no merge crosses (see the module docstring).

    Walks down from ``(left, right)``: ``x`` is the piece left of the cut, ``y`` the one right of
    it, ``nx``/``ny`` the times at which they grow next. The top state needs no check: the
    pair across the cut there is the token itself.
    """
    ok = np.ones(len(tok), dtype=bool)
    active = np.flatnonzero(~(is_byte[left] & is_byte[right]))
    x, y, nx, ny, cut = left[active], right[active], tok[active], tok[active], cut[active]
    while len(active):
        down_x = time[x] > time[y]
        nx = np.where(down_x, x, nx)
        ny = np.where(down_x, ny, y)
        x, y = np.where(down_x, right_child[x], x), np.where(down_x, y, left_child[y])
        c = index.find(cut - lengths[x], cut + lengths[y])
        limit = np.minimum(nx, ny)
        crossed = (c < limit) | ((c == limit) & (c == ny) & (c != nx))
        ok[active[crossed]] = False
        go_on = np.flatnonzero(~crossed & ~(is_byte[x] & is_byte[y]))
        active, x, y, nx, ny, cut = active[go_on], x[go_on], y[go_on], nx[go_on], ny[go_on], cut[go_on]
    return ok


def recover_merges_slow(ranks: Mapping[bytes, int], source: object = "ranks") -> tuple[Merges, list[int]]:
    """The reference: run rank-based BPE on every token, allowing only lower ranks."""
    byte_ids = [-1] * 256
    merges: Merges = {}
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) == 1:
            byte_ids[token[0]] = rank
            continue
        if not token:
            raise FormatError(f"{source}: rank {rank} is the empty token")
        parts = rank_bpe(ranks, token, max_rank=rank)
        if len(parts) != 2:
            raise FormatError(
                f"{source}: token {token!r} (rank {rank}) cannot be built by merging two tokens of "
                f"lower rank: rank-based BPE on its bytes stops at {parts!r}"
            )
        merges[(ranks[parts[0]], ranks[parts[1]])] = rank
    if -1 in byte_ids:
        missing = byte_ids.index(-1)
        raise FormatError(f"{source}: the single byte {bytes([missing])!r} has no rank "
                          f"({byte_ids.count(-1)} bytes missing); byte-level BPE needs all 256")
    return merges, byte_ids


def rank_bpe(ranks: Mapping[bytes, int], token: bytes, max_rank: int | None = None) -> list[bytes]:
    """tiktoken's algorithm on one piece: merge the adjacent pair whose bytes have the lowest
    rank (leftmost on ties) until none is left (only ranks below ``max_rank`` if given)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 1:
        best = None
        best_rank = None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (max_rank is None or rank < max_rank) and (best_rank is None or rank < best_rank):
                best, best_rank = i, rank
        if best is None:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts
