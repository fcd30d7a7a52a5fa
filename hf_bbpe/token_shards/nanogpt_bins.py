"""``nanogpt``: ``train.bin`` and ``val.bin`` as nanoGPT's ``data/*/prepare.py`` write them.

Each is the raw uint16 ids of its documents, every document followed by the EOS id (as
``data/openwebtext/prepare.py`` appends ``enc.eot_token``), no header: ``train.py``'s
``get_batch`` reads them with ``np.memmap(path, dtype=np.uint16, mode="r")``. A vocabulary with an
id above 65,535 is refused. The val file holds the documents ``val_split`` picks. Both grow over
the run (``growing_file``) and take their names at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .growing_file import GrowingFile
from .layout import UINT16_LIMIT
from .shard_format import ShardFormat
from .val_split import check_both_splits, split_shard

TRAIN, VAL = "train.bin", "val.bin"


class NanoGPTBins(ShardFormat):
    name = "nanogpt"
    loader = "nanoGPT's train.py (np.memmap of train.bin / val.bin, uint16)"
    has_splits = True

    def dtype(self, n_vocab: int) -> str:
        if n_vocab > UINT16_LIMIT:
            raise ValueError(f"nanoGPT reads uint16 ids, and this tokenizer has {n_vocab:,} ids (up to "
                             f"{n_vocab - 1:,}, above 65,535): write another format (llmc, megatron, olmo or npy)")
        return "uint16"

    def _files(self, folder: Path) -> tuple[GrowingFile, GrowingFile]:
        return GrowingFile(folder, TRAIN), GrowingFile(folder, VAL)

    def resume(self, folder: Path, manifest: dict[str, Any]) -> None:
        val_tokens = sum(entry["val_tokens"] for entry in manifest["shards"])
        train, val = self._files(folder)
        train.resume(2 * (manifest["tokens"] - val_tokens))
        val.resume(2 * val_tokens)

    def write_shard(self, folder: Path, manifest: dict[str, Any], tokens: Any, offsets: Any) -> dict[str, Any]:
        train_tokens, val_tokens, val_documents = split_shard(manifest, tokens, offsets)
        train, val = self._files(folder)
        train.append(train_tokens)
        val.append(val_tokens)
        return {"documents": len(offsets) - 1, "tokens": len(tokens), "val_documents": val_documents,
                "val_tokens": len(val_tokens)}

    def finish(self, folder: Path, manifest: dict[str, Any]) -> None:
        check_both_splits(folder, manifest)
        for file in self._files(folder):
            file.finish()
