"""Decoding for :class:`~tokenization_bbpe.BBPETokenizer`: its ids to text on the engine's decoder
(C, one flat table of token bytes; engine/encoding/decoding.py), added tokens included.

Most tokenizers' added tokens are all special tokens, which the engine holds too
(``BBPETokenizer._register_engine_specials``), so the engine decodes every id itself. Tokens
added with ``add_tokens`` (not special) are not the engine's: then a decoder over the engine's
tokens and theirs is made (the engine's :class:`Decoding`, whose methods are the engine's), and made
again when the added tokens change. An id that is neither raises ValueError naming it and its
position.

``skip_special_tokens`` leaves out what it always did here: the named special tokens
(``all_special_ids``) and every added token marked special, as the Rust tokenizer skips them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from transformers import AddedToken

from ..engine.encoding.decoding import Decoding
from ..engine.tokenizer import Tokenizer


class DecodePaths:
    """What a BBPETokenizer decodes with, kept between calls: the decoder (the engine itself, or a
    :class:`Decoding` over its tokens and the added ones) for the current added tokens, and the ids
    ``skip_special_tokens`` leaves out. ``decoder`` and ``skip_ids`` take the tokenizer's state and
    remake what it changed."""

    __slots__ = ("_decoder", "_decoder_key", "_skip", "_skip_key")

    def __init__(self) -> None:
        self._decoder: Any = None
        self._decoder_key: tuple | None = None
        self._skip: frozenset[int] = frozenset()
        self._skip_key: tuple | None = None

    def __reduce__(self) -> tuple[type, tuple]:
        return DecodePaths, ()  # remade on first use after unpickling

    def decoder(self, engine: Tokenizer, added: Mapping[int, AddedToken], normal_ids: Callable[[], Collection[int]],
                n_vocab: Callable[[], int]) -> Any:
        """The engine if it holds every added token, else a Decoding of its tokens and the others.
        ``normal_ids()``: the engine's ids that are no special token; ``n_vocab()``: the
        tokenizer's length, for error messages. Both are asked only when the decoder is made
        again, which the number of added tokens says (as for the added-token matcher: the engine's
        special tokens change only with them)."""
        key = (id(engine), len(added))
        if key != self._decoder_key:
            specials = set(engine.special_tokens.values())
            normal = normal_ids()
            extra = {idx: token.content.encode("utf-8") for idx, token in added.items()
                     if idx not in normal and idx not in specials}
            self._decoder = Decoding({**engine.vocab, **extra}, list(engine.special_tokens.values()),
                                     n_vocab()) if extra else engine
            self._decoder_key = key
        return self._decoder

    def skip_ids(self, special_ids: list[int], added: Mapping[int, AddedToken]) -> frozenset[int]:
        """The named special tokens' ids and every special added token's (one frozenset while they
        stay the same: the engine keeps its mask)."""
        key = (tuple(special_ids), len(added))
        if key != self._skip_key:
            self._skip = frozenset(special_ids) | {idx for idx, token in added.items() if token.special}
            self._skip_key = key
        return self._skip


def one_sequence(token_ids: Any) -> bool:
    """Whether ``token_ids`` is one sequence that goes straight to the engine: a list or tuple whose
    first item is an int (or empty), or a 1-d array or tensor."""
    kind = type(token_ids)
    if kind is list or kind is tuple:
        return not token_ids or type(token_ids[0]) is int
    return getattr(token_ids, "ndim", None) == 1


def sequence_batch(sequences: Any) -> list[Any] | None:
    """``sequences`` as a list of sequences the engine decodes in one call, if it is a batch of
    them (a list or tuple of such sequences, or a 2-d array or tensor); None otherwise."""
    kind = type(sequences)
    if kind is list or kind is tuple:
        return list(sequences) if all(map(one_sequence, sequences)) else None
    if getattr(sequences, "ndim", None) == 2:
        return list(sequences)  # rows: 1-d arrays (or tensors, which the engine reads through numpy)
    return None
