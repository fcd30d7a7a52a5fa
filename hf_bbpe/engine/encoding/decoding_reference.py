"""Token ids to bytes and text, in plain Python: the readable twin of the C decoder
(``csrc/encode/decode.c`` and ``stream.c``), which hypothesis tests hold to it, and what decodes
where the C extension is absent (a saved remote-code folder carries no compiled code).

A tokenizer's tokens are one table ``{id: bytes}``, special tokens included. Decoding joins the
bytes of the ids, leaving out the ids of a skip set, then decodes UTF-8 with Python's codec and
its ``errors`` handler. An id that is no token (or is negative) raises ValueError naming it and its
position; the skip set never hides one.

Offsets are tiktoken's (``Encoding.decode_with_offsets``): each token's offset is the index in the
text of the first character that holds one of its bytes, so a token that starts inside a multibyte
character gets the offset of that character, which it shares with the token before.

Streaming keeps the bytes of a character not yet whole and gives the text as soon as it is: the
incremental UTF-8 decoder of the codecs module does exactly that, so the concatenated steps plus
:meth:`ReferenceDecodeStream.flush` are ``decode`` of all the ids, however they are cut.
"""

from __future__ import annotations

import codecs
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .token_ids import token_id_list

SkipSet = frozenset  # the ids a call leaves out (the C decoder's form is a byte mask)


def unknown_id_error(idx: int, position: int, n_vocab: int, sequence: int | None = None) -> ValueError:
    """The error for an id that is no token (or a negative one), at ``position`` (of ``sequence``
    in a batch): the one message the C decoder and this twin both give."""
    where = f"position {position}" if sequence is None else f"position {position} of sequence {sequence}"
    return ValueError(f"unknown token id {idx} at {where} (n_vocab={n_vocab})")


class ReferenceDecoder:
    """Decoding with ``vocab`` ``{id: bytes}`` (every token), ``special_ids`` (what
    ``skip_special_tokens`` leaves out) and ``n_vocab`` (for error messages). The methods take ids
    as users hold them and a skip set or None."""

    native = False

    # Every method takes ids as ``token_ids.token_id_list`` does (a list, tuple, array, numpy
    # array, torch tensor, one int...), and a skip set (:meth:`mask`) or None.

    def __init__(self, vocab: Mapping[int, bytes], special_ids: Collection[int], n_vocab: int) -> None:
        self.vocab = vocab
        self.n_vocab = n_vocab
        self.special_mask = self.mask(special_ids)

    def mask(self, ids: Iterable[int]) -> SkipSet:
        """The skip set of ``ids`` (those that are tokens: an unknown id raises however it is given)."""
        return frozenset(idx for idx in ids if idx in self.vocab)

    def decode_bytes(self, ids: Any, skip: SkipSet | None = None, sequence: int | None = None) -> bytes:
        ids = token_id_list(ids)
        vocab = self.vocab
        parts = []
        for position, idx in enumerate(ids):
            token = vocab.get(idx)
            if token is None:
                raise unknown_id_error(idx, position, self.n_vocab, sequence)
            if skip and idx in skip:
                continue
            parts.append(token)
        return b"".join(parts)

    def decode(self, ids: Any, errors: str = "replace", skip: SkipSet | None = None) -> str:
        return self.decode_bytes(ids, skip).decode("utf-8", errors)

    def decode_bytes_batch(self, batch: Iterable[Any], skip: SkipSet | None = None,
                           num_threads: int = 1) -> list[bytes]:
        return [self.decode_bytes(ids, skip, k) for k, ids in enumerate(batch)]

    def decode_batch(self, batch: Iterable[Any], errors: str = "replace", skip: SkipSet | None = None,
                     num_threads: int = 1) -> list[str]:
        return [data.decode("utf-8", errors) for data in self.decode_bytes_batch(batch, skip)]

    def decode_with_offsets(self, ids: Any) -> tuple[str, list[int]]:
        """tiktoken's ``decode_with_offsets``: the text (strict UTF-8: invalid bytes raise
        UnicodeDecodeError, as there) and the offset of each token (the module doc)."""
        ids = token_id_list(ids)
        data = self.decode_bytes(ids)
        offsets = []
        text_len = 0
        for idx in ids:
            token = self.vocab[idx]
            starts_inside = 0x80 <= token[0] < 0xC0 if token else False  # (no token is empty; tiktoken fails on one)
            offsets.append(max(0, text_len - starts_inside))
            text_len += sum(1 for byte in token if not 0x80 <= byte < 0xC0)  # the characters it starts
        return data.decode("utf-8", "strict"), offsets

    def stream(self, skip: SkipSet | None = None, errors: str = "replace", prefill: Any = None) -> ReferenceDecodeStream:
        return ReferenceDecodeStream(self, skip, errors, prefill)


class ReferenceDecodeStream:
    """Streaming decode (``Tokenizer.decode_stream``): :meth:`step` takes the next id or ids and
    gives the text they complete, or None when nothing is whole yet.

    As ``tokenizers``' ``DecodeStream``: a step that leaves a character unfinished returns None and
    its text waits too, so that the step that finishes the character returns both (``" 日"``, not
    ``" "`` then ``"日"``). A byte sequence that can never be a character is handled by ``errors``
    at once (``DecodeStream`` holds any text that ends in U+FFFD). ``prefill`` ids (a prompt) are
    decoded first and their text is not given, except a character they leave unfinished, which
    the step that ends it gives."""

    def __init__(self, decoder: ReferenceDecoder, skip: SkipSet | None, errors: str, prefill: Any) -> None:
        self._decoder, self._skip = decoder, skip
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors)
        self._held = ""  # the text of the steps since the last one that left no character unfinished
        if prefill is not None:
            self._utf8.decode(decoder.decode_bytes(prefill, skip))

    def step(self, ids: Any) -> str | None:
        """The text that ``ids`` (one id or several) complete, or None if none."""
        text = self._held + self._utf8.decode(self._decoder.decode_bytes(ids, self._skip))
        if self._utf8.getstate()[0]:  # a character is unfinished
            self._held = text
            return None
        self._held = ""
        return text or None

    def flush(self) -> str | None:
        """The end of the stream: the text held and the bytes still waiting for the rest of their
        character, decoded with ``errors`` (U+FFFD under ``"replace"``), or None if none."""
        text = self._held + self._utf8.decode(b"", final=True)
        self._held = ""
        return text or None

    @property
    def pending(self) -> bytes:
        """The bytes waiting for the rest of their character (at most 3)."""
        return self._utf8.getstate()[0]
