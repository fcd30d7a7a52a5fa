"""Atomic file writes: a reader sees the old file or the whole new one, never a half-written one.

Also the one place that gives temporary files and folders (which ``tempfile`` makes private) the
mode a plain ``open``/``mkdir`` would have given, for writers that build a folder beside its
target and rename it into place (the CLI's output folders, checkpoint surgery).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temp file beside ``path``; on success fsync and rename it over ``path``.

    If the block raises, the temp file is removed and ``path`` is untouched.
    """
    path = Path(path)
    if "b" in mode:
        encoding = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    except OSError as exc:
        raise _naming(path, exc) from None
    try:
        with os.fdopen(fd, mode, encoding=encoding, newline="" if encoding else None) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _mode_for(path))  # mkstemp makes the file private; give it a normal file's mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _mode_for(path: Path) -> int:
    """The replaced file's mode, or what a plain ``open(path, "w")`` would give."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return new_file_mode()


def _umask() -> int:
    mask = os.umask(0)  # the only way to read the umask is to set it
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file under the current umask."""
    return 0o666 & ~_umask()


def temp_dir_beside(path: str | os.PathLike) -> Path:
    """A new empty folder next to ``path`` (same file system, so it can be renamed onto it),
    with the mode ``mkdir`` would give it; the caller renames or removes it."""
    path = Path(path)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    except OSError as exc:
        raise _naming(path, exc) from None
    os.chmod(tmp, 0o777 & ~_umask())
    return tmp


def _naming(path: Path, exc: OSError) -> OSError:
    """``exc`` (from making a temp file or folder beside ``path``) naming ``path`` instead: the
    temp name is ours, the caller gave ``path``."""
    return type(exc)(exc.errno, exc.strerror, str(path))


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` atomically."""
    with atomic_open(path, "w") as handle:
        handle.write(text)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)
