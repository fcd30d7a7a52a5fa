"""Recover the ordered merge pairs of a byte-level BPE vocabulary from its ranks.

A tiktoken file lists tokens and ranks only. BPE's merge list is implied by them (minbpe's
``recover_merges``): the token of rank ``r`` is made by merging the two tokens that rank-based
BPE, allowed only ranks below ``r``, leaves when run on the token's bytes.

:func:`recover_merges_slow` does exactly that, token by token, in Python; it is the reference
(about 1 s for cl100k_base) and names the token at fault when a vocabulary is not buildable.
:func:`recover_merges` runs the same algorithm in C (``_rank_splits.c``: a byte-string hash
table, each token's pair lookups kept between its merges), about 20 times faster, so that
loading cl100k_base from its file takes no longer than tiktoken takes to build its Encoding
(scripts/bench_load.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

import numpy as np

from .errors import FormatError

try:
    _native = importlib.import_module("._rank_splits", __package__)
except ImportError:  # not built: the slow reference does the work
    _native = None

Merges = dict[tuple[int, int], int]


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
        merges = _recover_merges_native(buf, starts, lengths, ranks)
    except DuplicateTokenError as dup:
        first, second = sorted((int(ranks[dup.first]), int(ranks[dup.second])))
        raise FormatError(f"{source}: token {dup.token!r} has two ranks, {first} and {second}") from None
    if merges is None:
        if ranks_dict is None:
            data = buf.tobytes()
            ranks_dict = {data[s : s + n]: r for s, n, r in zip(starts.tolist(), lengths.tolist(), ranks.tolist())}
        return recover_merges_slow(ranks_dict, source)
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


def _recover_merges_native(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, ranks: np.ndarray) -> Merges | None:
    """The merges from the C kernel (tokens in rank order); None if a token does not end in two
    pieces or the kernel is not built (the slow reference then runs and names the token)."""
    if _native is None:
        return None
    as_int64 = [np.ascontiguousarray(a, dtype=np.int64).tobytes() for a in (starts, lengths, ranks)]
    out = _native.rank_splits(np.ascontiguousarray(buf, dtype=np.uint8).tobytes(), *as_int64)
    if isinstance(out, tuple):  # ("duplicate", i, j)
        i, j = out[1], out[2]
        raise DuplicateTokenError(buf[starts[i] : starts[i] + lengths[i]].tobytes(), i, j)
    return out


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
