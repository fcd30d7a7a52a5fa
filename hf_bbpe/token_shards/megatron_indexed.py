"""``megatron``: Megatron-Core's indexed datasets, one ``shard-NNNNN.bin`` + ``shard-NNNNN.idx`` pair
per shard (Megatron's ``--data-path`` takes the prefixes ``shard-NNNNN``).

The layout is the one ``megatron/core/datasets/indexed_dataset.py`` writes (``_IndexWriter``) and
reads (``_IndexReader``), as ``tools/preprocess_data.py --append-eod`` makes it: ``.bin`` is the
raw ids, each document followed by the EOS id; ``.idx`` is ``b"MMIDIDX\\x00\\x00"``, version 1
(``<Q``), the dtype code (``<B``: 8 uint16, 4 int32), the sequence count and the document-index
count (``<Q`` each), then the sequence lengths (int32), their byte pointers into ``.bin`` (int64)
and the document indices (int64, ``0..n``: each document one sequence). Ids are uint16 when the
vocabulary has at most 65,536 ids, else int32 (Megatron has no uint32 code), the rule of
``GPTDatasetConfig.token_dtype_code``.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from ..engine.files.atomic_write import atomic_open
from .layout import UINT16_LIMIT
from .shard_format import ShardFormat

INDEX_HEADER = b"MMIDIDX\x00\x00"
DTYPE_CODES = {"uint16": 8, "int32": 4}


def file_names(index: int) -> tuple[str, str]:
    return f"shard-{index:05d}.bin", f"shard-{index:05d}.idx"


class MegatronIndexed(ShardFormat):
    name = "megatron"
    loader = "Megatron-Core (IndexedDataset / GPTDataset, --data-path PREFIX...)"

    def dtype(self, n_vocab: int) -> str:
        return "uint16" if n_vocab <= UINT16_LIMIT else "int32"

    def write_shard(self, folder: Path, manifest: dict[str, Any], tokens: Any, offsets: Any) -> dict[str, Any]:
        import numpy as np

        bin_name, idx_name = file_names(len(manifest["shards"]))
        lengths = np.diff(offsets)
        if len(lengths) and int(lengths.max()) >= 2**31:
            raise ValueError(f"{folder / bin_name}: a document of {int(lengths.max()):,} tokens, more than "
                             "Megatron's int32 sequence lengths hold")
        with atomic_open(folder / bin_name, "wb") as handle:
            handle.write(memoryview(tokens).cast("B"))
        with atomic_open(folder / idx_name, "wb") as handle:
            handle.write(INDEX_HEADER + struct.pack("<Q", 1) + struct.pack("<B", DTYPE_CODES[manifest["dtype"]]))
            handle.write(struct.pack("<Q", len(lengths)) + struct.pack("<Q", len(lengths) + 1))
            handle.write(lengths.astype("<i4").tobytes())
            handle.write((offsets[:-1] * tokens.itemsize).astype("<i8").tobytes())
            handle.write(np.arange(len(lengths) + 1, dtype="<i8").tobytes())
        return {"files": [bin_name, idx_name], "documents": len(lengths), "tokens": len(tokens)}
