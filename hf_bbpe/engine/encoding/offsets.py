"""Character offsets of tokens: where each token of an encoded text sits in that text.

The tokens of a text, concatenated, are the text's UTF-8 bytes (lone surrogates encoded as the
engine encodes them: a pair as its character, a lone one as U+FFFD). A token covers the
characters its bytes come from; a token that holds only part of a multi-byte character covers
that whole character, so neighbouring tokens can share one. This is what the ``tokenizers``
library reports for byte-level BPE (tests compare the two on multilingual text).

This module is also copied into model folders as remote code: it imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate


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
