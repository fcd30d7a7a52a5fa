"""``npy``: hf_bbpe's own shards, ``.npy`` tokens and document offsets (``layout.py`` describes
them; ``open_token_shards`` reads them back)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .layout import write_shard
from .shard_format import ShardFormat


class NpyShards(ShardFormat):
    name = "npy"
    loader = "numpy (np.load) or hf_bbpe.token_shards.open_token_shards"

    def write_shard(self, folder: Path, manifest: dict[str, Any], tokens: Any, offsets: Any) -> dict[str, Any]:
        return write_shard(folder, len(manifest["shards"]), tokens, offsets)
