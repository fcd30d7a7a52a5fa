"""A token's bytes written for people, one way everywhere the command line lists tokens.

A token is bytes, and may be part of a character or hold characters that do not print. Written
with ``repr`` of a text that already has escapes in it (``'\\\\u000a'``), a newline and the six
characters ``\\u000a`` looked the same; here each reads one way only:

* a character that prints stands for itself, inside single quotes (a space too);
* ``\\\\`` is a backslash and ``\\'`` a quote, so no other backslash is ever literal;
* ``\\n``, ``\\r``, ``\\t``; ``\\uXXXX`` (``\\UXXXXXXXX``) any other character that does not print;
* ``\\xNN`` a byte that is not part of a whole UTF-8 character (``' \\xd0'``: a space and half of
  a Cyrillic letter), never a character.

So two different tokens never look the same, and the bytes can be read back.
"""

from __future__ import annotations

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BYTE_ESCAPES = range(0xDC80, 0xDD00)  # surrogateescape's stand-ins for the bytes 0x80-0xFF


def token_literal(data: bytes) -> str:
    """``data`` as a quoted one-line literal (see the module docstring for the escapes)."""
    out = []
    for char in data.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code in _BYTE_ESCAPES:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "'" + "".join(out) + "'"
