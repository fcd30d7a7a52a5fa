"""A file that grows shard by shard over a run and takes its name only when whole.

nanoGPT's ``train.bin``/``val.bin`` and llm.c's val shard hold every shard's tokens in one file.
While a run goes on they are ``NAME.partial``: each shard's tokens are appended and fsynced
before the manifest records them, so after an interruption the manifest says how many bytes are
good; a resumed run cuts the file back to that many and appends from there. At the end the
header (if the format has one) is written over its placeholder and the file is renamed to its
name, so a loader never sees a half-written ``train.bin``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

PARTIAL = ".partial"


class GrowingFile:
    """``folder / name``, written as ``name.partial`` until :meth:`finish`; ``header_bytes`` zero
    bytes start it, which :meth:`finish` overwrites."""

    def __init__(self, folder: Path, name: str, header_bytes: int = 0) -> None:
        self.path = folder / name
        self.partial = folder / (name + PARTIAL)
        self.header_bytes = header_bytes

    def resume(self, size: int) -> None:
        """Make ``name.partial`` hold exactly its first ``size`` bytes (the header included), as the
        manifest records them: a new file, or one an interrupted run left longer."""
        if not self.partial.exists() and self.path.exists():
            os.replace(self.path, self.partial)  # finished, but the run stopped before the manifest said so
        if not self.partial.exists():
            if size > self.header_bytes:
                raise ValueError(f"{self.partial}: missing, though the manifest records {size:,} bytes of it "
                                 "(the folder was changed): delete it and start over")
            self.partial.write_bytes(bytes(self.header_bytes))
            return
        actual = self.partial.stat().st_size
        if actual < size:
            raise ValueError(f"{self.partial}: {actual:,} bytes, but the manifest records {size:,} "
                             "(the folder was changed): delete it and start over")
        os.truncate(self.partial, size)

    def append(self, array: Any) -> None:
        """Append an array's bytes and fsync, before the manifest records them."""
        with open(self.partial, "ab") as handle:
            handle.write(memoryview(array).cast("B"))
            handle.flush()
            os.fsync(handle.fileno())

    def finish(self, header: bytes = b"") -> None:
        """Write ``header`` over the placeholder, fsync, and rename the file to its name."""
        if len(header) != self.header_bytes:
            raise AssertionError(f"{self.path.name}: a {len(header)}-byte header for {self.header_bytes} bytes")
        with open(self.partial, "r+b") as handle:
            handle.write(header)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(self.partial, self.path)
