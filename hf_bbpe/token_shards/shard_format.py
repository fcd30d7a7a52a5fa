"""What a shard format is to the writer: the files one pretraining loader reads.

The writer (``writer.py``) cuts the documents into shards and encodes each into one flat array,
every document's ids followed by the EOS id, with int64 document offsets; a format turns that into
its loader's files. The token stream is the same in every format (the same values in the same
order; only files, headers and indexes differ), so a corpus encoded once reads back identically
through every loader. The formats are listed in ``formats.py``, one module each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .layout import token_dtype


class ShardFormat:
    """One format: its name, the dtype of its token files, and how it writes, resumes and ends a run.

    ``has_splits`` formats write a train and a val file (the documents ``val_split`` picks);
    the others leave splitting to the loader."""

    name = ""
    loader = ""  # who reads it, for messages
    has_splits = False

    def dtype(self, n_vocab: int) -> str:
        """The numpy dtype of the token files for a vocabulary of ``n_vocab`` ids; ValueError if
        the format cannot store them."""
        return token_dtype(n_vocab)

    def resume(self, folder: Path, manifest: dict[str, Any]) -> None:
        """Before the first new shard: bring files that grow over the run back to what the
        manifest records (nothing to do where every shard has its own files, written atomically)."""

    def write_shard(self, folder: Path, manifest: dict[str, Any], tokens: Any, offsets: Any) -> dict[str, Any]:
        """Write the next shard (number ``len(manifest["shards"])``, its first document
        ``manifest["documents"]``) and return its manifest entry, which has at least
        ``documents`` and ``tokens``. Everything it wrote is on disk when it returns."""
        raise NotImplementedError

    def finish(self, folder: Path, manifest: dict[str, Any]) -> None:
        """After the last shard, before the manifest says ``complete``."""
