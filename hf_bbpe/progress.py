"""Progress bars for long jobs: tqdm on a terminal, nothing otherwise."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm


def progress_bar(*, desc: str, total: float | None = None, unit: str = "it", enabled: bool | None = None,
                 scale: bool | float | None = None) -> tqdm:
    """A tqdm bar, shown when ``enabled`` is True, or when it is None and stderr is a terminal.

    ``scale`` multiplies the counts for display (e.g. 1e-6 to count characters as MB); True
    shows them with SI prefixes (k, M, G).
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    kwargs = {"unit_scale": scale} if scale else {}
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, leave=False, **kwargs)
