"""Atomic writes: a reader sees the old file or folder or the whole new one, never a half-written
one, nor a folder that mixes files of two saves.

* A file (:func:`atomic_open`): written to a temp file beside it, fsynced, renamed over it.
* A folder (:func:`replaced_folder`, used by every writer of a tokenizer or checkpoint folder):
  the whole new folder is built beside the target, then switched in by one atomic step,
  ``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere (or on a file system without it) the old
  folder is renamed aside, the new one renamed in, the old one removed. Files of the old folder
  that the writer does not own (model weights and config beside a tokenizer, a user's README) are
  carried into the new folder first: hard links for files of 1 MiB or more, copies otherwise.
* Temp names are ``.<name>.<pid>.<random>.<state>``: ``tmp`` (being written), ``new`` (a
  complete folder, about to be switched in), ``old`` (the old folder, renamed aside). The next
  write of a folder (and our loaders, :func:`recover_folder`) removes those of dead processes,
  and so does ``Tokenizer.save`` for its two files (:func:`remove_stale_temps`; other file
  writers do not scan their folder, which may hold thousands of shards); a
  folder left missing between the fallback's two renames is put back: the ``new`` one if there
  is one (the switch is finished), else the ``old`` one (rolled back), with one line saying which.

Also the one place that gives temporary files and folders (which ``tempfile`` makes private) the
mode a plain ``open``/``mkdir`` would have given.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Collection, Iterator
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
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent or ".")
    except OSError as exc:
        raise _naming(path, exc) from None
    try:
        with os.fdopen(fd, mode, encoding=encoding, newline="" if encoding else None) as handle:
            yield handle
            kill_point(f"write:{path.name}")
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
        tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent))
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


# ---------------------------------------------------------------- temp names and leftovers

_STATES = ("tmp", "new", "old")
KILL_AT_ENV = "HF_BBPE_TEST_KILL_AT"
"""Test hook: the step (``write:<file name>``, or a step of :func:`switch_folder`) at which the
writing process SIGKILLs itself, so that tests kill a save at a chosen point for real."""
NO_EXCHANGE_ENV = "HF_BBPE_TEST_NO_EXCHANGE"
"""Test hook: switch folders by the two-rename fallback, as where ``RENAME_EXCHANGE`` is missing."""
LINK_MIN_BYTES = 1 << 20
"""Files of the old folder at least this big are carried over as hard links, smaller ones copied."""

logger = logging.getLogger("hf_bbpe")


def kill_point(step: str) -> None:
    """SIGKILL this process if the test hook :data:`KILL_AT_ENV` names ``step``."""
    if os.environ.get(KILL_AT_ENV) == step:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


def _temp_name(path: Path) -> re.Pattern:
    return re.compile(rf"\.{re.escape(path.name)}\.(\d+)\.[a-z0-9_]+\.({'|'.join(_STATES)})")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def stale_temps(path: str | os.PathLike) -> dict[str, list[Path]]:
    """The temp files and folders beside ``path`` left by dead processes, by state (tmp/new/old)."""
    path = Path(path)
    pattern = _temp_name(path)
    found: dict[str, list[Path]] = {state: [] for state in _STATES}
    try:
        entries = list(os.scandir(path.parent or "."))
    except OSError:
        return found
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match and not _alive(int(match.group(1))):
            found[match.group(2)].append(Path(entry.path))
    return found


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def remove_stale_temps(path: str | os.PathLike) -> int:
    """Remove what writes of ``path`` killed before they finished left beside it; returns how many."""
    leftovers = [p for paths in stale_temps(path).values() for p in paths]
    for leftover in leftovers:
        _remove(leftover)
    return len(leftovers)


# ---------------------------------------------------------------- folders

_building: set[str] = set()
"""Folders that :func:`replaced_folder` is building in this process: a save into one writes
straight into it (the CLI's folder holds a ``save_pretrained`` folder)."""


def recover_folder(target: str | os.PathLike) -> str | None:
    """Put ``target`` back in order after a writer died mid-save, and remove its temp folders.

    Only the fallback switch can leave ``target`` missing (between its two renames): then the
    complete new folder is renamed in if there is one (the switch is finished), else the old one
    is renamed back (rolled back). Returns the one line that says which (also logged as a
    warning), or None when there was nothing to finish or roll back.
    """
    target = Path(target)
    found = stale_temps(target)
    note = None
    if not os.path.lexists(target):
        newest = sorted(found["new"], key=lambda p: p.stat().st_mtime_ns)
        if newest:
            os.rename(newest[-1], target)
            note = f"{target}: a save was killed while switching folders: finished the switch (the new folder is in place)"
        elif found["old"]:
            os.rename(sorted(found["old"], key=lambda p: p.stat().st_mtime_ns)[-1], target)
            note = f"{target}: a save was killed while switching folders: rolled it back (the old folder is back)"
    for paths in found.values():
        for leftover in paths:
            if os.path.lexists(leftover):
                _remove(leftover)
    if note:
        logger.warning(note)
    return note


@contextlib.contextmanager
def replaced_folder(target: str | os.PathLike, ours: Collection[str] = (), *, carry_over: bool = True) -> Iterator[Path]:
    """Yield a new folder beside ``target`` to fill; when the block ends without an error, the
    folder replaces ``target`` in one atomic step (:func:`switch_folder`). If it raises, or the
    process dies, ``target`` is as it was.

    With ``carry_over``, the new folder starts with the old one's files and subfolders except
    those named in ``ours`` (the files this writer owns: a file it does not write again must not
    stay behind from another save): hard links for big files, copies for small ones (which
    writers may rewrite in place). Missing parents of ``target`` are made. A ``target`` that this
    process is already building is yielded itself; a symbolic link to a folder stays, and the
    folder it names is replaced.
    """
    target = Path(target)
    if str(target.absolute()) in _building:
        yield target
        return
    if target.is_symlink() and target.is_dir():
        target = Path(os.path.realpath(target))  # the link stays; the folder it names is replaced
    target.parent.mkdir(parents=True, exist_ok=True)
    recover_folder(target)
    if os.path.lexists(target) and not target.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", str(target))
    stage = temp_dir_beside(target)
    key = str(stage.absolute())
    _building.add(key)
    try:
        if target.is_dir():
            os.chmod(stage, os.stat(target).st_mode & 0o7777)
            if carry_over:
                _carry_over(target, stage, frozenset(ours))
        yield stage
        kill_point("built")
        switch_folder(stage, target)
    finally:
        _building.discard(key)
        if os.path.lexists(stage):
            shutil.rmtree(stage, ignore_errors=True)


_ANY_TEMP = re.compile(rf"\..+\.(\d+)\.[a-z0-9_]+\.({'|'.join(_STATES)})")


def _carry_over(old: Path, new: Path, ours: frozenset[str]) -> None:
    for entry in os.scandir(old):
        temp = _ANY_TEMP.fullmatch(entry.name)
        if entry.name in ours or (temp and not _alive(int(temp.group(1)))):  # and no dead writer's temp file
            continue
        dest = new / entry.name
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), dest)
        elif entry.is_dir():
            shutil.copytree(entry.path, dest, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry.path, dest)


def _link_or_copy(source: str, dest: str | os.PathLike) -> None:
    if os.stat(source).st_size >= LINK_MIN_BYTES:
        with contextlib.suppress(OSError):
            os.link(source, dest)
            return
    shutil.copy2(source, dest)


def switch_folder(built: Path, target: Path) -> None:
    """Put the complete folder ``built`` (beside ``target``) in ``target``'s place: renamed to a
    ``.new`` name first (complete), then exchanged with ``target`` in one step, or, where the
    system cannot, by renaming ``target`` aside (``.old``), ``.new`` in, and removing the old."""
    ready = built.with_name(built.name.removesuffix(".tmp") + ".new")
    os.rename(built, ready)
    kill_point("ready")
    if not os.path.lexists(target):
        os.rename(ready, target)
        kill_point("moved-in")
        return
    if _exchange(ready, target):  # ``ready`` now holds the old folder
        kill_point("exchanged")
        shutil.rmtree(ready, ignore_errors=True)
        return
    aside = ready.with_name(ready.name.removesuffix(".new") + ".old")
    os.rename(target, aside)
    kill_point("moved-aside")
    os.rename(ready, target)
    kill_point("moved-in")
    shutil.rmtree(aside, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where unsupported."""
    if os.environ.get(NO_EXCHANGE_ENV):
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))
