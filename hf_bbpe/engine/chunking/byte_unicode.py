"""Token bytes written as text: GPT-2's byte <-> unicode table (the one copy in the codebase),
the spelling of a whole vocabulary in it, and :func:`render_token` for people.

GPT-2's ``encoder.json``/``vocab.bpe``, transformers' ``vocab.json``/``merges.txt`` and
``tokenizer.json`` files with a ByteLevel pre-tokenizer all spell a token's bytes as a string in
which each byte is one printable character: bytes that are printable latin-1 stand for
themselves, the other 68 are shifted to U+0100 and up, in byte order.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Collection, Mapping


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


def spell_vocab(vocab: Mapping[int, bytes], skip: Collection[int] = frozenset()) -> dict[int, str]:
    """``{id: GPT-2 spelling}`` in id order for every id not in ``skip`` (the special tokens).

    Two ids with the same bytes raise ValueError naming both: a vocabulary of strings
    (vocab.json, tokenizer.json, transformers) cannot hold them.
    """
    spelled: dict[int, str] = {}
    seen: dict[str, int] = {}
    for idx in sorted(vocab):
        if idx in skip:
            continue
        text = token_to_unicode(vocab[idx])
        if text in seen:
            raise ValueError(
                f"tokens {seen[text]} and {idx} are the same bytes {vocab[idx]!r}: a vocabulary of "
                "strings (vocab.json, tokenizer.json, transformers) needs distinct tokens"
            )
        seen[text] = idx
        spelled[idx] = text
    return spelled


def render_token(token: bytes) -> str:
    """A token's bytes as text for people (minbpe's ``render_token``): invalid UTF-8 replaced,
    control characters escaped as ``\\uXXXX``."""
    text = token.decode("utf-8", errors="replace")
    return "".join(ch if unicodedata.category(ch)[0] != "C" else f"\\u{ord(ch):04x}" for ch in text)
