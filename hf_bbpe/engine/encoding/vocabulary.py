"""A tokenizer's normal tokens, and the checks every way of making one passes.

The normal tokens are the ids of the 256 single bytes (``byte_ids``, -1 for a byte without a
token), the ``unmerged`` tokens that no merge builds, and the merges in order
``{(left_id, right_id): new_id}`` (or, in ``"ranks"`` mode before they are recovered, a
:class:`~encoder.TokenTable`). Here are the checks of each (importers hand over 200k merges, so
they run as bulk passes), the vocabulary they spell, what a ``.model`` file's contents become
once checked, and whether the merge list alone encodes as the tokenizer does (what merge-list
formats can hold).
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..chunking.chunking import Chunking
from ..files.minbpe_model import ModelFileContents
from .encoder import MODES, ChunkEncoder, TokenTable
from .special_tokens import TokenRoles, checked_normalized_specials, checked_special_tokens
from .token_ids import MAX_TOKEN_ID

Merges = dict[tuple[int, int], int]


def byte_token_ids(byte_ids: Sequence[int]) -> set[int]:
    """The ids of the bytes that have a token (``byte_ids`` holds -1 for the others)."""
    return {idx for idx in byte_ids if idx >= 0}


def checked_byte_ids(byte_ids: Sequence[int] | None) -> list[int]:
    """``byte_ids`` as a list of ints (None: the identity), after checking that it gives 256
    distinct ids, -1 for a byte without a token."""
    byte_ids = list(range(256)) if byte_ids is None else [int(i) for i in byte_ids]
    present = byte_token_ids(byte_ids)
    if len(byte_ids) != 256 or len(present) != 256 - byte_ids.count(-1) or min(byte_ids) < -1:
        raise ValueError("byte_ids must give 256 distinct ids, one per byte value (-1: the byte has no token)")
    return byte_ids


def checked_mode(mode: str) -> str:
    """``mode`` if it is one of the encoder's modes, else ValueError."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    return mode


def checked_unmerged(unmerged: Mapping[int, bytes], byte_ids: Sequence[int]) -> dict[int, bytes]:
    """Unmerged tokens as ``{int: bytes}``, sorted by id; an id that is a byte's raises."""
    checked: dict[int, bytes] = {}
    bytes_taken = byte_token_ids(byte_ids)
    for idx, data in sorted(unmerged.items()):
        idx = int(idx)
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError(f"unmerged token {idx} must be bytes, got {data!r}")
        if idx in bytes_taken or not 0 <= idx <= MAX_TOKEN_ID:
            raise ValueError(f"unmerged token {bytes(data)!r} has id {idx}, which is a byte's or out of range")
        checked[idx] = bytes(data)
    return checked


def checked_merges(
    merges: Mapping[tuple[int, int], int], byte_ids: Sequence[int], unmerged: Mapping[int, bytes] = {}
) -> Merges:
    """``merges`` as a dict of ints, after checking that each one builds on known ids (bytes,
    unmerged tokens, earlier merges) with a new, increasing id; a ValueError names the first
    merge at fault.

    The check runs as a few bulk passes (importers hand over 200k merges); only when one fails
    does the merge-by-merge loop run, to name the culprit.
    """
    try:
        pairs = [(int(a), int(b)) for a, b in merges]
        news = [int(new) for new in merges.values()]
    except (TypeError, ValueError):
        return _checked_merges_one_by_one(merges, byte_ids, unmerged)
    known = byte_token_ids(byte_ids).union(unmerged)
    made = set(news)
    lefts = [a for a, _ in pairs]
    rights = [b for _, b in pairs]
    ok = all(map(operator.lt, news, news[1:])) and known.isdisjoint(made)
    if ok and news and max(known) < news[0]:  # bytes below every merge (all real vocabularies)
        ok = (known.union(made).issuperset(lefts) and known.union(made).issuperset(rights)
              and all(map(operator.lt, lefts, news)) and all(map(operator.lt, rights, news)))
    elif ok:
        ok = all((a in known or (a < new and a in made)) and (b in known or (b < new and b in made))
                 for a, b, new in zip(lefts, rights, news))
    if ok:
        return dict(zip(pairs, news))
    return _checked_merges_one_by_one(merges, byte_ids, unmerged)


def _checked_merges_one_by_one(
    merges: Mapping[tuple[int, int], int], byte_ids: Sequence[int], unmerged: Mapping[int, bytes]
) -> Merges:
    known = byte_token_ids(byte_ids).union(unmerged)
    last = -1
    checked: Merges = {}
    for (a, b), new in merges.items():
        a, b, new = int(a), int(b), int(new)
        for side in (a, b):
            if side not in known:
                raise ValueError(f"merge ({a}, {b}) -> {new} names token {side}, which is not defined before it")
        if new in known:
            raise ValueError(f"merge ({a}, {b}) -> {new} reuses id {new}")
        if new <= last:
            raise ValueError(
                f"merge ({a}, {b}) -> {new} comes after a merge that made {last}: merge ids must "
                "increase in merge order, because the encoder applies the lowest id first"
            )
        checked[(a, b)] = new
        known.add(new)
        last = new
    return checked


def normal_ids(byte_ids: Sequence[int], unmerged: Mapping[int, bytes], merges: Merges | None,
               rank_ids: Sequence[int] | None = None) -> set[int]:
    """The ids of every normal token: the ranks' (``"ranks"`` mode before its merges are
    recovered), else the bytes', the unmerged tokens' and the merges'."""
    if rank_ids is not None:
        return set(rank_ids)
    return byte_token_ids(byte_ids) | set(unmerged) | set(merges.values())


def normal_vocab(byte_ids: Sequence[int], unmerged: Mapping[int, bytes], merges: Merges) -> dict[int, bytes]:
    """``{id: bytes}`` of every normal token: bytes, unmerged tokens, then merges."""
    vocab = {idx: bytes([b]) for b, idx in enumerate(byte_ids) if idx >= 0}
    vocab.update(unmerged)
    for (a, b), new in merges.items():
        vocab[new] = vocab[a] + vocab[b]
    return vocab


def id_bound(byte_ids: Sequence[int], unmerged: Mapping[int, bytes], merges: Merges | None,
             rank_ids: Sequence[int] | None, special_ids: Iterable[int]) -> int:
    """One more than the largest token id (tiktoken's ``n_vocab``): of the ranks' ids when given
    (``"ranks"`` mode before its merges are recovered), else of the bytes, unmerged tokens and
    merges; and of the special tokens."""
    if rank_ids is not None:
        last = max(rank_ids, default=-1)
    else:
        last = max(next(reversed(merges.values()), -1),  # merge ids increase in merge order
                   max(unmerged, default=-1))
    return max(max(byte_ids), last, max(special_ids, default=-1)) + 1


def recovered_merges(encoder: ChunkEncoder, byte_ids: Sequence[int], vocab: Mapping[int, bytes]
                     ) -> tuple[Merges, dict[int, bytes]]:
    """The merges that a ``"ranks"``-mode ``encoder``'s ranks imply, and the tokens no merge
    builds (``{id: bytes}``, from ``vocab``). ValueError when a single byte has no rank: byte-level
    BPE needs all 256 bytes for a merge list."""
    if -1 in byte_ids:
        missing = byte_ids.index(-1)
        raise ValueError(f"the single byte {bytes([missing])!r} has no rank ({byte_ids.count(-1)} bytes "
                         "missing): this vocabulary encodes as tiktoken does, but has no merge list, which "
                         "byte-level BPE needs all 256 bytes for (to save, extend or convert it)")
    merges, unmerged = encoder.recover_merges()
    return merges, {idx: vocab[idx] for idx in unmerged}


def merges_to_array(merges: Merges) -> array:
    """``merges`` as one flat int64 array of ``left, right, new`` triples (a compact pickle)."""
    return array("q", [value for (a, b), new in merges.items() for value in (a, b, new)])


def merges_from_array(triples: array) -> Merges:
    """:func:`merges_to_array`'s merges back as a dict."""
    values = iter(triples)
    return {(a, b): new for a, b, new in zip(values, values, values)}


def rank_vocabulary(mergeable_ranks: Mapping[bytes, int]) -> tuple[TokenTable, list[int]]:
    """tiktoken's ``mergeable_ranks`` as a token table and the ids of the single bytes (the
    lowest id of each byte's tokens; -1 for a byte without a rank). ValueError for two tokens
    with one id."""
    vocab: dict[int, bytes] = {}
    for data, idx in mergeable_ranks.items():
        idx = int(idx)
        if idx in vocab:
            raise ValueError(f"tokens {vocab[idx]!r} and {bytes(data)!r} have the same id {idx}")
        vocab[idx] = bytes(data)
    byte_ids = [-1] * 256
    for idx, data in vocab.items():
        if len(data) == 1 and (byte_ids[data[0]] < 0 or idx < byte_ids[data[0]]):
            byte_ids[data[0]] = idx
    return TokenTable.from_vocab(dict(sorted(vocab.items()))), byte_ids


def check_table_ids(table: TokenTable) -> None:
    """Refuse a token table with an id below 0 or above :data:`~token_ids.MAX_TOKEN_ID`."""
    if len(table.ids) and (min(table.ids) < 0 or max(table.ids) > MAX_TOKEN_ID):
        bad = next(i for i in table.ids if not 0 <= i <= MAX_TOKEN_ID)
        raise ValueError(f"token id {bad} is out of range 0 .. {MAX_TOKEN_ID}")


@dataclass
class ModelState:
    """A ``.model`` file's contents, checked: what ``Tokenizer.load`` sets."""

    chunking: Chunking
    mode: str
    byte_ids: list[int]
    unmerged: dict[int, bytes]
    merges: Merges
    special_tokens: dict[str, int]
    normalized_specials: frozenset[str]
    roles: TokenRoles


def checked_model_contents(contents: ModelFileContents) -> ModelState:
    """What a ``.model`` file holds, checked as every tokenizer's parts are (ValueError naming the
    first at fault; the caller adds the file's name)."""
    if contents.pre_tokenizer is not None:
        chunking = Chunking.from_options(None, contents.pre_tokenizer, contents.normalizer)
    else:
        chunking = Chunking.from_options(contents.pattern, None, contents.normalizer)
    unmerged = checked_unmerged(contents.unmerged, contents.byte_ids)
    merges = checked_merges(contents.merges, contents.byte_ids, unmerged)
    specials = checked_special_tokens(contents.special_tokens, existing={},
                                      normal_ids=normal_ids(contents.byte_ids, unmerged, merges))
    normalized = checked_normalized_specials(contents.normalized_specials, specials, of_file=True)
    roles = TokenRoles.from_kwargs(contents.roles).checked(specials)
    return ModelState(chunking, contents.mode, contents.byte_ids, unmerged, merges, specials, normalized, roles)


class _Tokenizer(Protocol):
    """A tokenizer, as far as the merge-list checks below need one (``Tokenizer`` is one)."""

    mode: str
    merges: Merges
    unmerged_tokens: dict[int, bytes]
    vocab: dict[int, bytes]
    special_tokens: dict[str, int]
    byte_ids: list[int]

    @classmethod
    def from_ranks(cls, mergeable_ranks: Mapping[bytes, int], **options: Any) -> _Tokenizer: ...


def merge_list_mismatch(tok: _Tokenizer) -> int | None:
    """The lowest id of a normal token that plain BPE over ``tok``'s merges encodes differently
    from ``tok``, or None when the merge list alone is exact.

    Merge-list formats (GPT-2 ``encoder.json``/``vocab.bpe``, ``vocab.json``/``merges.txt``,
    minbpe's ``.model`` v1) carry no mode: ``tokenizers`` and minbpe read them as ``"merges"``.
    ``"ranks"`` mode is exact there when the ranks imply exactly these merges and no token is
    built by none of them (then every token's bytes merge back into it, so the whole-piece rule
    never disagrees); ``"ignore_merges"`` when no token lacks a merge and the merges encode every
    token's bytes as that one token. Raises ValueError in ``"ranks"`` mode for a missing byte.
    """
    mode = tok.mode
    if mode == "merges":
        return None
    unmerged = [idx for idx, token in tok.unmerged_tokens.items() if token]
    if unmerged:
        return min(unmerged)
    specials = set(tok.special_tokens.values())
    normal = {idx: token for idx, token in tok.vocab.items() if idx not in specials and token}
    if mode == "ranks":
        implied = type(tok).from_ranks({token: idx for idx, token in normal.items()})
        if implied.merges == tok.merges and not any(implied.unmerged_tokens.values()):
            return None
        by_id = {new: pair for pair, new in tok.merges.items()}
        implied_by_id = {new: pair for pair, new in implied.merges.items()}
        return min(idx for idx in set(by_id) | set(implied_by_id) | set(implied.unmerged_tokens)
                   if by_id.get(idx) != implied_by_id.get(idx) or implied.unmerged_tokens.get(idx))
    return merges_miss_token(tok)


def merges_miss_token(tok: _Tokenizer) -> int | None:
    """``Tokenizer.merges_miss_token``: the lowest id of a normal token whose own bytes plain BPE
    over the merges does not encode as that one token, or None: where none is, a whole-piece rule
    (``ignore_merges``) changes no id."""
    specials = set(tok.special_tokens.values())
    plain = ChunkEncoder(tok.merges, tok.byte_ids)
    return next((idx for idx, token in sorted(tok.vocab.items())
                 if idx not in specials and token and plain.encode_bytes(token) != [idx]), None)


def check_merge_list(tok: _Tokenizer, format_name: str) -> None:
    """``Tokenizer.check_merge_list``: ValueError naming ``format_name`` when the merge list
    alone cannot hold ``tok`` (:func:`merge_list_mismatch`)."""
    idx = merge_list_mismatch(tok)
    if idx is None:
        return
    mode = tok.mode
    carriers = "tokenizer.json (ignore_merges: true), tiktoken ranks or a .model (hf_bbpe v2)" \
        if mode == "ranks" else "tokenizer.json (ignore_merges: true) or a .model (hf_bbpe v2)"
    raise ValueError(
        f"{format_name} cannot hold this {mode!r}-mode tokenizer: it carries only merges, and plain BPE "
        f"over them encodes token {tok.vocab[idx]!r} (id {idx}) differently from this tokenizer's "
        f"whole-piece rule; write {carriers} instead"
    )
