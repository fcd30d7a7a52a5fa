"""``olmo``: OLMo-core's token arrays, ``part-NNNNN.npy`` + ``part-NNNNN.csv.gz`` per shard.

``part-NNNNN.npy`` is, despite its name (the Dolma toolkit's), a headerless memmap: the raw ids,
each document followed by the EOS id, which OLMo-core's numpy datasets read with
``np.memmap(path, dtype=dtype, mode="r")`` and cut into documents at the EOS id. Its dtype is
OLMo-core's ``NumpyDatasetConfig.get_dtype`` rule: the smallest of uint8/16/32/64 that holds
``vocab_size - 1`` (uint16 up to 65,536 ids, else uint32; a byte-level vocabulary plus its EOS
never fits uint8). ``part-NNNNN.csv.gz`` is the document index OLMo-core reads where it cannot
scan the array (a remote path, or no EOS id given): a ``start,end`` line per document, as
``olmo_core.data.utils.write_document_indices`` writes it (gzip without a timestamp, so that two
runs write the same bytes).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from ..engine.files.atomic_write import atomic_open
from .shard_format import ShardFormat


def file_names(index: int) -> tuple[str, str]:
    return f"part-{index:05d}.npy", f"part-{index:05d}.csv.gz"


class OlmoMemmaps(ShardFormat):
    name = "olmo"
    loader = "OLMo-core (NumpyDatasetConfig paths=[...part-*.npy], dtype, eos_token_id)"

    def write_shard(self, folder: Path, manifest: dict[str, Any], tokens: Any, offsets: Any) -> dict[str, Any]:
        array_name, index_name = file_names(len(manifest["shards"]))
        with atomic_open(folder / array_name, "wb") as handle:
            handle.write(memoryview(tokens).cast("B"))
        lines = "".join(f"{start},{end}\n" for start, end in zip(offsets[:-1].tolist(), offsets[1:].tolist()))
        with atomic_open(folder / index_name, "wb") as handle:
            with gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0) as packed:
                packed.write(lines.encode("ascii"))
        return {"files": [array_name, index_name], "documents": len(offsets) - 1, "tokens": len(tokens)}
