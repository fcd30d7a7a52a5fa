"""Helpers for the token-shard tests (tests/cli, tests/distributed): a small corpus in every input
format, the expected ids, and a folder's bytes to compare two runs (this module holds no tests)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.hf import mix_docs


def write_corpus(folder: Path) -> tuple[list[Path], list[str]]:
    """The documents of mix-sample.txt spread over a .jsonl, a .parquet and a text file (one
    document per line there); returns the files and the documents in the order they are read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = mix_docs()
    third = len(docs) // 3
    folder.mkdir(parents=True, exist_ok=True)
    jsonl, parquet, text = folder / "a.jsonl", folder / "b.parquet", folder / "c.txt"
    jsonl.write_text("".join(json.dumps({"id": i, "text": doc}) + "\n" for i, doc in enumerate(docs[:third])),
                     encoding="utf-8")
    pq.write_table(pa.table({"text": docs[third : 2 * third]}), parquet, row_group_size=50)
    lines = [line + "\n" for doc in docs[2 * third :] for line in doc.split("\n") if line.strip()]
    text.write_bytes("".join(lines).encode("utf-8"))
    return [jsonl, parquet, text], docs[: 2 * third] + lines


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` (hidden ones too) by name: two runs are equal when these are."""
    return {path.name: path.read_bytes() for path in sorted(Path(folder).iterdir())}


def shard_documents(folder: Path) -> list[list[int]]:
    """Each document's ids (its EOS included), read the way the README tells a training loop to."""
    import numpy as np

    manifest = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
    documents = []
    for shard in manifest["shards"]:
        tokens = np.load(Path(folder) / shard["tokens_file"], mmap_mode="r")
        offsets = np.load(Path(folder) / shard["offsets_file"], mmap_mode="r")
        assert tokens.dtype == np.dtype(manifest["dtype"]) and offsets[0] == 0 and offsets[-1] == len(tokens)
        documents += [tokens[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    return documents
