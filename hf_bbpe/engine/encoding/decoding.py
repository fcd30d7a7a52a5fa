"""Decoding as a tokenizer holds it: the C decoder (``csrc/encode/decode.c``: one flat table of
every token's bytes, built once and shared by threads) or, where the extension is absent, its
Python twin (decoding_reference.py), with the skip masks of the calls.

Both take ids as users hold them (lists, tuples, ``array``, numpy arrays of any int dtype and
anything with the buffer protocol read in C without a Python int per id; torch tensors through
numpy; the rest through ``token_ids.token_id_list``, whose TokenIdTypeError names a non-integer).
``BPEModel`` makes a :class:`Decoding` on first use and drops it when its tokens change.
"""

from __future__ import annotations

import importlib
from array import array
from collections.abc import Collection, Mapping
from typing import Any

from .decoding_reference import ReferenceDecoder
from .encoder import TokenTable
from .token_ids import token_id_list

try:  # imported by name, not "from .", so that remote-code copies of this file load without it
    _native = importlib.import_module("._chunk_bpe", __package__)
except ImportError:
    _native = None

_MAX_MASKS = 16  # skip masks kept per tokenizer (a caller has one or two sets of ids to skip)


def kernel_ids(ids: Any) -> Any:
    """``ids`` in a form the C decoder reads without a Python int per id where it can: a 1-d
    integer torch tensor as its numpy array; else a list of ints (``token_id_list``, which names a
    non-integer)."""
    if type(ids).__module__.startswith("torch") and getattr(ids, "ndim", None) == 1:
        try:
            array = ids.detach().cpu().numpy()
        except (RuntimeError, TypeError):  # numpy missing, or a dtype numpy has not
            array = None
        if array is not None and array.dtype.kind in "iu":  # (floats: token_id_list names them)
            return array
    return token_id_list(ids)


class Decoding:
    """A tokenizer's decoder (``kernel``: the C ``TokenDecoder`` or the twin, with the same
    methods) and its skip masks. ``tokens``: every token, special ones included, as a
    :class:`TokenTable` or ``{id: bytes}``; ``special_ids``: what ``skip_special_tokens`` skips."""

    def __init__(self, tokens: TokenTable | Mapping[int, bytes], special_ids: Collection[int], n_vocab: int,
                 *, native: bool = True) -> None:
        if native and hasattr(_native, "TokenDecoder"):
            table = tokens if isinstance(tokens, TokenTable) else TokenTable.from_vocab(tokens)
            self.kernel = _native.TokenDecoder(table.data, table.lengths, table.ids, array("q", special_ids), n_vocab,
                                               kernel_ids)
        else:
            vocab = tokens.to_vocab() if isinstance(tokens, TokenTable) else tokens
            self.kernel = ReferenceDecoder(vocab, special_ids, n_vocab)
        self._special_ids = frozenset(special_ids)
        self._masks: dict[tuple[bool, frozenset], Any] = {}

    def skip(self, skip_special_tokens: bool, skip_ids: Collection[int] | None) -> Any:
        """The kernel's mask of the ids to leave out (the special tokens if ``skip_special_tokens``,
        and ``skip_ids``), or None for none. A frozenset of ids is hashed once; masks are kept."""
        if skip_ids is None:
            return self.kernel.special_mask if skip_special_tokens else None
        key = (bool(skip_special_tokens), skip_ids if isinstance(skip_ids, frozenset) else frozenset(skip_ids))
        mask = self._masks.get(key)
        if mask is None:
            ids = token_id_list(list(key[1]))
            if key[0]:
                ids += self._special_ids
            if len(self._masks) >= _MAX_MASKS:
                self._masks.clear()
            mask = self._masks[key] = self.kernel.mask(ids)
        return mask

    def _mask(self, skip_special_tokens: bool, skip_ids: Collection[int] | None) -> Any:
        return self.skip(skip_special_tokens, skip_ids) if skip_special_tokens or skip_ids else None

    # The decoding calls, with BPEModel's signatures (its methods say what they do): BPEModel
    # delegates to them, and a BBPETokenizer with added tokens calls them on a Decoding of its own.
    def decode_bytes(self, ids: Any, *, skip_special_tokens: bool = False,
                     skip_ids: Collection[int] | None = None) -> bytes:
        return self.kernel.decode_bytes(ids, self._mask(skip_special_tokens, skip_ids))

    def decode(self, ids: Any, errors: str = "replace", *, skip_special_tokens: bool = False,
               skip_ids: Collection[int] | None = None) -> str:
        return self.kernel.decode(ids, errors, self._mask(skip_special_tokens, skip_ids))

    def decode_bytes_batch(self, batch: Any, *, num_threads: int = 1, skip_special_tokens: bool = False,
                           skip_ids: Collection[int] | None = None) -> list[bytes]:
        return self.kernel.decode_bytes_batch(batch if isinstance(batch, list) else list(batch),
                                              self._mask(skip_special_tokens, skip_ids), num_threads)

    def decode_batch(self, batch: Any, *, num_threads: int = 1, errors: str = "replace",
                     skip_special_tokens: bool = False, skip_ids: Collection[int] | None = None) -> list[str]:
        return self.kernel.decode_batch(batch if isinstance(batch, list) else list(batch), errors,
                                        self._mask(skip_special_tokens, skip_ids), num_threads)

    def decode_with_offsets(self, ids: Any) -> tuple[str, list[int]]:
        return self.kernel.decode_with_offsets(ids)

    def decode_stream(self, skip_special_tokens: bool = False, prefill: Any = None, *, errors: str = "replace",
                      skip_ids: Collection[int] | None = None) -> Any:
        return self.kernel.stream(self._mask(skip_special_tokens, skip_ids), errors, prefill)
