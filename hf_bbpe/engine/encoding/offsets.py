"""Character offsets of tokens: where each token of an encoded text sits in that text.

The tokens of a text, concatenated, are the text's UTF-8 bytes (lone surrogates encoded as the
engine encodes them: a pair as its character, a lone one as U+FFFD). A token covers the
characters its bytes come from; a token that holds only part of a multi-byte character covers
that whole character, so neighbouring tokens can share one. This is what the ``tokenizers``
library reports for byte-level BPE (tests compare the two on multilingual text).

Under a normalizer or a pre-tokenizer that changes the text, :func:`encoded_offsets` goes chunk by
chunk through the spans the chunking reports (``Chunking.with_spans``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import accumulate

from ..chunking.chunking import Chunking
from ..chunking.normalizers import original_span
from .special_tokens import SpecialTokenIndex, split_on


def encoded_offsets(text: str, ids: list[int], vocab: Mapping[int, bytes], chunking: Chunking,
                    specials: SpecialTokenIndex, allowed: frozenset[str]) -> list[tuple[int, int]]:
    """Each token's ``(start, end)`` character offsets in ``text``, for ``ids``, its encoding
    with the special tokens ``allowed`` (``Tokenizer.encode_with_offsets``): a token covers the
    original characters its (normalized) characters come from."""
    if chunking.is_plain:  # the tokens' bytes are the text's bytes
        return token_char_spans(text, [len(vocab[idx]) for idx in ids])
    if not specials.normalized.isdisjoint(allowed):
        raise NotImplementedError("offsets with special tokens found in the normalized text")
    lengths = iter([len(vocab[idx]) for idx in ids])
    offsets: list[tuple[int, int]] = []
    at = 0
    for stretch, is_special in split_on(text, specials.regex(allowed) if allowed else None):
        if is_special:
            next(lengths)
            offsets.append((at, at + len(stretch)))
        else:
            offsets += _stretch_offsets(chunking, stretch, at, lengths)
        at += len(stretch)
    return offsets


def _stretch_offsets(chunking: Chunking, stretch: str, at: int, lengths: Iterator[int]) -> list[tuple[int, int]]:
    """Offsets (from ``at``) of the tokens of ``stretch``, text without special tokens, taking
    their byte lengths from ``lengths``: chunk by chunk, since each chunk is encoded alone."""
    offsets: list[tuple[int, int]] = []
    for chunk, spans in chunking.with_spans(stretch):
        data = chunk if isinstance(chunk, bytes) else chunk.encode("utf-8", "surrogatepass")
        taken: list[int] = []
        while sum(taken) < len(data):
            taken.append(next(lengths))
        if isinstance(chunk, bytes):  # spans are per byte
            ends = list(accumulate(taken))
            parts = list(zip([0, *ends[:-1]], ends))
        else:
            parts = token_char_spans(chunk, taken)
        offsets += [(start + at, end + at) for start, end in (original_span(spans, a, b) for a, b in parts)]
    return offsets


def token_char_spans(text: str, byte_lengths: Iterable[int]) -> list[tuple[int, int]]:
    """``(start, end)`` character offsets in ``text`` of consecutive tokens of its UTF-8 bytes,
    given each token's length in bytes (they must add up to the length of the bytes)."""
    ends = list(accumulate(byte_lengths))
    ascii_text = text.isascii()
    unit_start, unit_end = _byte_units(text) if not ascii_text else ((), ())
    size = len(text) if ascii_text else len(unit_start)
    if (ends[-1] if ends else 0) != size:
        raise ValueError(f"the tokens hold {ends[-1] if ends else 0} bytes, but the text has {size}")
    if ascii_text:
        return list(zip([0, *ends[:-1]], ends))
    spans = []
    first = 0
    for end in ends:
        if end > first:
            spans.append((unit_start[first], unit_end[end - 1]))
        else:  # an empty token (never made by the engine) sits where it is
            at = unit_start[first] if first < len(unit_start) else len(text)
            spans.append((at, at))
        first = end
    return spans


def _byte_units(text: str) -> tuple[list[int], list[int]]:
    """For each UTF-8 byte of ``text``: the start and end offsets of the character it encodes
    (a surrogate pair is one character of two offsets)."""
    unit_start: list[int] = []
    unit_end: list[int] = []
    i, n = 0, len(text)
    while i < n:
        code = ord(text[i])
        if code < 0x80:
            width, span = 1, 1
        elif code < 0x800:
            width, span = 2, 1
        elif 0xD800 <= code < 0xDC00 and i + 1 < n and 0xDC00 <= ord(text[i + 1]) < 0xE000:
            width, span = 4, 2  # a surrogate pair: one astral character
        elif code < 0x10000:
            width, span = 3, 1  # including a lone surrogate, encoded as U+FFFD
        else:
            width, span = 4, 1
        unit_start.extend([i] * width)
        unit_end.extend([i + span] * width)
        i += span
    return unit_start, unit_end
