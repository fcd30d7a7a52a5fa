"""The validation split of the formats whose loaders read a train and a val file (nanoGPT, llm.c).

Document ``i`` (its position in the input, from 0) goes to val when the first 8 bytes of
``blake2b(f"{seed}:{i}", digest_size=8)``, read as a little-endian integer, are below
``fraction * 2**64``. The choice depends only on the position, the fraction and the seed: the
same documents whatever the shard size, the workers or Ray, and an interrupted run resumes with
the split it started. About ``fraction`` of the documents, at random, as nanoGPT's
``train_test_split(test_size=0.0005, seed=2357)`` (whose numbers are the defaults here; the
documents picked differ from that shuffle's).
"""

from __future__ import annotations

import hashlib
from typing import Any

DEFAULT_VAL_FRACTION = 0.0005  # nanoGPT's data/openwebtext/prepare.py
DEFAULT_VAL_SEED = 2357


def check_val_fraction(fraction: float) -> None:
    """ValueError unless ``0 < fraction < 1``."""
    if not 0 < fraction < 1:
        raise ValueError(f"val_fraction must be > 0 and < 1, got {fraction!r}")


def val_documents(first: int, count: int, fraction: float, seed: int) -> Any:
    """A bool array: whether each of documents ``first .. first + count - 1`` goes to val."""
    import numpy as np

    below = int(fraction * 2**64)
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(f"{seed}:{i}".encode("ascii"), digest_size=8).digest(), "little") < below
         for i in range(first, first + count)), dtype=bool, count=count)


def split_shard(manifest: dict[str, Any], tokens: Any, offsets: Any) -> tuple[Any, Any, int]:
    """The next shard's tokens cut into (train tokens, val tokens, number of val documents), each
    part keeping the documents' order; the manifest gives the shard's first document and the split."""
    import numpy as np

    in_val = val_documents(manifest["documents"], len(offsets) - 1, manifest["val_fraction"], manifest["val_seed"])
    token_in_val = np.repeat(in_val, np.diff(offsets))
    return tokens[~token_in_val], tokens[token_in_val], int(in_val.sum())


def check_both_splits(folder: Any, manifest: dict[str, Any]) -> None:
    """ValueError when the finished run left the train or the val split without a document."""
    val = sum(entry["val_documents"] for entry in manifest["shards"])
    if val == 0 or val == manifest["documents"]:
        empty = "val" if val == 0 else "train"
        raise ValueError(f"{folder}: no document of {manifest['documents']:,} fell in the {empty} split "
                         f"(val_fraction {manifest['val_fraction']}): write to a new folder with a "
                         f"{'larger' if empty == 'val' else 'smaller'} val fraction")
