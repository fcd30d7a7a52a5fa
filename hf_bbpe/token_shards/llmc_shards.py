"""``llmc``: llm.c's and modded-nanogpt's ``.bin`` shards.

Each file is a header of 256 little-endian int32 (``[0]`` the magic, ``[1]`` the version, ``[2]``
the token count, the rest 0) and then the ids: uint16 with magic 20240520, version 1 (GPT-2-sized
vocabularies: llm.c's C loader, its ``train_gpt2.py`` and modded-nanogpt read these), or uint32
with magic 20240801, version 7 (``train_llama3.py``), as llm.c's ``dev/data/data_common.py``
``write_datafile`` writes them. ``train_NNNNNN.bin`` holds one shard's training documents (none
for a shard whose documents all went to val), ``val_000000.bin`` every val document (``val_split``
picks them; it grows over the run and takes its name at the end). Every document is followed by
the EOS id (llm.c's scripts put it before each document instead: the same stream but for the
first and last token). A file holds fewer than 2**31 tokens, the header's limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..engine.files.atomic_write import atomic_open
from .growing_file import GrowingFile
from .shard_format import ShardFormat
from .val_split import check_both_splits, split_shard

HEADER_INTS = 256
MAGIC_VERSION = {"uint16": (20240520, 1), "uint32": (20240801, 7)}
VAL = "val_000000.bin"


def train_file_name(index: int) -> str:
    return f"train_{index:06d}.bin"


def header(dtype: str, count: int, where: Path) -> bytes:
    """The 256-int32 header of a file of ``count`` ids of ``dtype``."""
    import numpy as np

    if count >= 2**31:
        raise ValueError(f"{where}: {count:,} tokens, more than an llm.c header counts (2**31 - 1): write "
                         "smaller shards" + (" or a smaller val fraction" if where.name == VAL else ""))
    ints = np.zeros(HEADER_INTS, dtype="<i4")
    ints[0], ints[1] = MAGIC_VERSION[dtype]
    ints[2] = count
    return ints.tobytes()


class LlmcShards(ShardFormat):
    name = "llmc"
    loader = "llm.c / modded-nanogpt (256-int32 header, then the ids)"
    has_splits = True

    def _val(self, folder: Path) -> GrowingFile:
        return GrowingFile(folder, VAL, header_bytes=4 * HEADER_INTS)

    def resume(self, folder: Path, manifest: dict[str, Any]) -> None:
        val_tokens = sum(entry["val_tokens"] for entry in manifest["shards"])
        self._val(folder).resume(4 * HEADER_INTS + val_tokens * (2 if manifest["dtype"] == "uint16" else 4))

    def write_shard(self, folder: Path, manifest: dict[str, Any], tokens: Any, offsets: Any) -> dict[str, Any]:
        train_tokens, val_tokens, val_documents = split_shard(manifest, tokens, offsets)
        val_so_far = sum(entry["val_tokens"] for entry in manifest["shards"])
        header(manifest["dtype"], val_so_far + len(val_tokens), folder / VAL)  # refuse before writing
        files = []
        if len(train_tokens):
            name = train_file_name(len(manifest["shards"]))
            head = header(manifest["dtype"], len(train_tokens), folder / name)
            with atomic_open(folder / name, "wb") as handle:
                handle.write(head)
                handle.write(memoryview(train_tokens).cast("B"))
            files.append(name)
        self._val(folder).append(val_tokens)
        return {"files": files, "documents": len(offsets) - 1, "tokens": len(tokens),
                "val_documents": val_documents, "val_tokens": len(val_tokens)}

    def finish(self, folder: Path, manifest: dict[str, Any]) -> None:
        check_both_splits(folder, manifest)
        val_tokens = sum(entry["val_tokens"] for entry in manifest["shards"])
        self._val(folder).finish(header(manifest["dtype"], val_tokens, folder / VAL))
