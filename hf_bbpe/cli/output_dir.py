"""Output paths: checked before a command does any work, and folders written so that a failure
leaves nothing half written.

Every command that writes files calls :func:`check_output` on each output path first, so a bad
``--out`` fails at once instead of after training or converting.

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


def check_output(path: str | os.PathLike, *, folder: bool, make_parents: bool = False) -> Path:
    """Raise a CommandError now if ``path`` cannot be written as a folder (``folder=True``) or a file.

    A folder target may exist (its files are replaced) but not as a file; a file target may not be
    a folder. Its parent must be a writable folder, or, with ``make_parents`` (writers that create
    missing parents), the nearest existing ancestor must be.
    """
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise CommandError(f"{path}: exists and is not a folder")
    if not folder and path.is_dir():
        raise CommandError(f"{path}: is a folder (give a file name)")
    parent = path.parent
    while make_parents and not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "no such folder"
        raise CommandError(f"{parent}: {what} (the parent of {path})")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CommandError(f"{parent}: permission denied (cannot write {path})")
    return path


@contextlib.contextmanager
def staged_folder(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary folder to fill; on success its files replace those in ``target``."""
    target = check_output(target, folder=True)
    parent = target.parent
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
