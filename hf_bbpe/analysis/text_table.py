"""Plain-text tables for the command line: columns padded to their widest cell."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, right_align: Sequence[bool] | None = None) -> str:
    """Render ``rows`` under ``headers``; numbers are right-aligned unless ``right_align`` says."""
    cells = [[_cell(v) for v in row] for row in rows]
    if right_align is None:
        right_align = [bool(rows) and all(isinstance(row[i], (int, float)) for row in rows) for i in range(len(headers))]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = [v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right_align)]
        return "  ".join(padded).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
