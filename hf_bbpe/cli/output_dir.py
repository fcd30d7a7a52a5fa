"""Writing an output folder so that a failure leaves nothing half written.

Everything is written into a temporary folder beside the target; only when all files are there
are they moved in (the whole folder is renamed when the target does not exist yet, else file by
file with ``os.replace``, each atomic).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import CommandError


@contextlib.contextmanager
def staged_folder(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary folder to fill; on success its files replace those in ``target``."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise CommandError(f"{target}: exists and is not a folder")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise CommandError(f"{parent}: no such folder (the parent of {target})")
    stage = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent))
    os.chmod(stage, 0o777 & ~_umask())  # mkdtemp makes it private; the result should not be
    try:
        yield stage
        if not target.exists():
            os.replace(stage, target)
            return
        for item in sorted(stage.rglob("*")):
            dest = target / item.relative_to(stage)
            if item.is_dir():
                dest.mkdir(exist_ok=True)
            else:
                os.replace(item, dest)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
