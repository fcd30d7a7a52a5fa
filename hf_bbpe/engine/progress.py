"""Progress bars for long jobs: tqdm on a terminal, nothing otherwise.

tqdm is imported only when a bar is shown, so that the engine loads without it.
"""

from __future__ import annotations

import sys
from typing import Any


class _NoBar:
    """What :func:`progress_bar` returns when no bar is shown: tqdm's methods, doing nothing."""

    disable = True

    def update(self, n: float = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass


def progress_bar(*, desc: str, total: float | None = None, unit: str = "it", enabled: bool | None = None,
                 scale: bool | float | None = None) -> Any:
    """A tqdm bar, shown when ``enabled`` is True, or when it is None and stderr is a terminal.

    ``scale`` multiplies the counts for display (e.g. 1e-6 to count characters as MB); True
    shows them with SI prefixes (k, M, G).
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    kwargs = {"unit_scale": scale} if scale else {}
    return tqdm(total=total, desc=desc, unit=unit, leave=False, **kwargs)
