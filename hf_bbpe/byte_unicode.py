"""GPT-2's byte <-> unicode table: the one copy in the codebase.

GPT-2's ``encoder.json``/``vocab.bpe``, transformers' ``vocab.json``/``merges.txt`` and
``tokenizer.json`` files with a ByteLevel pre-tokenizer all spell a token's bytes as a string in
which each byte is one printable character: bytes that are printable latin-1 stand for
themselves, the other 68 are shifted to U+0100 and up, in byte order.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """Map each byte value 0..255 to its printable character."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    table = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


@functools.lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    """The inverse of :func:`bytes_to_unicode`."""
    return {ch: b for b, ch in bytes_to_unicode().items()}


@functools.lru_cache(maxsize=1)
def _byte_strings() -> tuple[str, ...]:
    table = bytes_to_unicode()
    return tuple(table[b] for b in range(256))


def token_to_unicode(token: bytes) -> str:
    """Spell a token's bytes in GPT-2's printable alphabet."""
    table = _byte_strings()
    return "".join([table[b] for b in token])


def unicode_to_token(text: str) -> bytes:
    """Read a token spelled in GPT-2's printable alphabet back into bytes.

    Raises KeyError naming the first character that is not in the alphabet.
    """
    inverse = unicode_to_bytes()
    try:
        return bytes([inverse[ch] for ch in text])
    except KeyError:
        bad = next(ch for ch in text if ch not in inverse)
        raise KeyError(f"{bad!r} (U+{ord(bad):04X}) in {text!r} is not a byte-level symbol") from None
