"""The on-disk layout of token shards: the manifest, and the ``npy`` format's files and reading them back.

A folder holds ``manifest.json`` (every format) and, in the ``npy`` format, per shard ``k``,
``shard-{k:05d}.tokens.npy`` (1-D, uint16 or uint32: every document's ids followed by the EOS id)
and ``shard-{k:05d}.offsets.npy`` (1-D int64, ``documents + 1`` entries from 0 to the shard's
length). Both are ``.npy`` files, so
``np.load(path, mmap_mode="r")`` maps them without copying and the dtype travels with the data.
Every file is written atomically (``atomic_write``), and a shard is recorded in the manifest only
after both of its files are in place.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.files.atomic_write import atomic_open, write_text_atomic

MANIFEST = "manifest.json"
FORMAT = "hf_bbpe token shards"
VERSION = 1
UINT16_LIMIT = 1 << 16


def token_dtype(n_vocab: int) -> str:
    """``"uint16"`` when every id (``0 <= id < n_vocab``) fits in 16 bits, else ``"uint32"``."""
    return "uint16" if n_vocab <= UINT16_LIMIT else "uint32"


def shard_file_names(index: int) -> tuple[str, str]:
    """The names of shard ``index``'s tokens file and offsets file."""
    return f"shard-{index:05d}.tokens.npy", f"shard-{index:05d}.offsets.npy"


def write_shard(folder: Path, index: int, tokens: Any, offsets: Any) -> dict[str, Any]:
    """Write shard ``index`` (each file atomically) and return its manifest entry."""
    import numpy as np

    tokens_name, offsets_name = shard_file_names(index)
    for name, array in ((tokens_name, tokens), (offsets_name, offsets)):
        with atomic_open(folder / name, "wb") as handle:
            np.save(handle, array, allow_pickle=False)
    return {"tokens_file": tokens_name, "offsets_file": offsets_name,
            "documents": int(len(offsets) - 1), "tokens": int(len(tokens))}


def read_manifest(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of a shard folder, None if it has none; ValueError naming the file if it is not one."""
    path = Path(folder) / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: not a token-shard manifest (no \"format\": {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise ValueError(f"{path}: token-shard format version {manifest.get('version')!r}, this hf_bbpe reads {VERSION}")
    manifest.setdefault("shard_format", "npy")  # written before there were other formats
    return manifest


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    write_text_atomic(folder / MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")


@dataclass
class TokenShard:
    """One shard, memory-mapped: document ``i`` (ending with the EOS id) is
    ``tokens[offsets[i]:offsets[i + 1]]``."""

    tokens: Any  # np.ndarray (a read-only memmap), uint16 or uint32
    offsets: Any  # np.ndarray (a read-only memmap), int64

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def document(self, i: int) -> Any:
        """The ids of document ``i``, its EOS included."""
        return self.tokens[self.offsets[i] : self.offsets[i + 1]]


def open_token_shards(folder: str | os.PathLike, *, complete: bool = True) -> list[TokenShard]:
    """The shards of ``folder``, memory-mapped, in order. ``complete`` (default) refuses a folder
    whose run has not finished (``hf-bbpe encode-corpus`` resumes it)."""
    import numpy as np

    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        raise FileNotFoundError(f"{folder / MANIFEST}: no such file (not a token-shard folder)")
    if manifest["shard_format"] != "npy":
        raise ValueError(f"{folder}: holds {manifest['shard_format']} shards, which open_token_shards does not "
                         "read (their loader does: see docs/downstream.md)")
    if complete and not manifest.get("complete"):
        raise ValueError(f"{folder}: the encoding has not finished (run the same command again to resume it)")
    shards = []
    for entry in manifest["shards"]:
        tokens = np.load(folder / entry["tokens_file"], mmap_mode="r")
        offsets = np.load(folder / entry["offsets_file"], mmap_mode="r")
        if tokens.dtype != np.dtype(manifest["dtype"]) or len(offsets) != entry["documents"] + 1 \
                or len(tokens) != entry["tokens"]:
            raise ValueError(f"{folder / entry['tokens_file']}: does not match {folder / MANIFEST}")
        shards.append(TokenShard(tokens, offsets))
    return shards
