"""Plain-text tables for the command line: columns padded to their widest cell, in terminal columns."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence


def display_width(text: str) -> int:
    """The terminal columns ``text`` takes: 2 for a wide or fullwidth character (East Asian Width
    W or F: CJK, kana, Hangul, most emoji), 0 for a combining mark or a format character such as
    U+200D (they join the character before), 1 for any other."""
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, right_align: Sequence[bool] | None = None) -> str:
    """Render ``rows`` under ``headers``; numbers are right-aligned unless ``right_align`` says.
    Cells are padded by :func:`display_width`, so columns stay aligned after CJK text."""
    cells = [[_cell(v) for v in row] for row in rows]
    if right_align is None:
        right_align = [bool(rows) and all(isinstance(row[i], (int, float)) for row in rows) for i in range(len(headers))]
    widths = [max([display_width(h)] + [display_width(row[i]) for row in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        pads = [" " * (w - display_width(v)) for v, w in zip(values, widths)]
        padded = [pad + v if r else v + pad for v, pad, r in zip(values, pads, right_align)]
        return "  ".join(padded).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
