"""Recover the ordered merge pairs of a byte-level BPE vocabulary from its ranks.

A tiktoken file lists tokens and ranks only. BPE's merge list is implied by them (minbpe's
``recover_merges``): the token of rank ``r`` is made by merging the two tokens that rank-based
BPE, allowed only ranks below ``r``, leaves when run on the token's bytes. A token that it
leaves in more pieces is built by no merge; tiktoken still produces it (as a whole piece, or by
merging two pieces of higher rank), and so does the engine's ``"ranks"`` mode, which keeps such
tokens as ``unmerged_tokens`` (Llama 3 has 678).

:func:`recover_merges` is for callers that need a plain merge list: it raises FormatError naming
the first token that no merge builds. The work is done by the engine's chunk encoder in
``"ranks"`` mode (``Tokenizer.merges``: the same merge loop as encoding, under a rank ceiling).
:func:`recover_merges_slow` does it token by token in Python with :func:`rank_bpe`; it is the
reference the tests hold the engine to.
"""

from __future__ import annotations

from collections.abc import Mapping

from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError

Merges = dict[tuple[int, int], int]


def recover_merges(ranks: Mapping[bytes, int], source: object = "ranks") -> tuple[Merges, list[int]]:
    """``(merges, byte_ids)`` of a byte-level BPE vocabulary given as ``{token bytes: rank}``.

    ``merges`` maps ``(left id, right id)`` to the token's id (its rank), in rank order;
    ``byte_ids[b]`` is the rank of the single byte ``b``. Ranks may have holes. Raises
    FormatError naming ``source`` and the first token that cannot be built by merging two
    tokens of lower rank, or a missing single byte.
    """
    try:
        tok = Tokenizer.from_ranks(ranks)
        unmerged = tok.unmerged_tokens  # a missing single byte raises here: there are no merges
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
    if unmerged:
        rank = min(unmerged)
        raise unbuildable_error(ranks, unmerged[rank], rank, source)
    return tok.merges, tok.byte_ids


def unbuildable_error(ranks: Mapping[bytes, int], token: bytes, rank: int, source: object) -> FormatError:
    """The error for a token of ``rank`` that no merge of lower ranks builds."""
    if not token:
        return FormatError(f"{source}: rank {rank} is the empty token")
    parts = rank_bpe(ranks, token, max_rank=rank)
    return FormatError(
        f"{source}: token {token!r} (rank {rank}) cannot be built by merging two tokens of "
        f"lower rank: rank-based BPE on its bytes stops at {parts!r}"
    )


def recover_merges_slow(ranks: Mapping[bytes, int], source: object = "ranks") -> tuple[Merges, list[int]]:
    """The reference: run rank-based BPE on every token, allowing only lower ranks."""
    byte_ids = [-1] * 256
    merges: Merges = {}
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) == 1:
            byte_ids[token[0]] = rank
            continue
        parts = rank_bpe(ranks, token, max_rank=rank)
        if len(parts) != 2:
            raise unbuildable_error(ranks, token, rank, source)
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
