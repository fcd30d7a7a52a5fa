"""Encoding a Ray Dataset: stateful actors that each load the tokenizer once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tokenizer import Tokenizer
from .ray_import import cluster_cpus, require_ray

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    import ray.data


def encode_dataset(
    ds: ray.data.Dataset,
    tokenizer: Any,
    *,
    text_column: str = "text",
    add_eos: bool = False,
    attention_mask: bool = False,
    eos_token: str | None = None,
    num_actors: int | None = None,
    batch_size: int | None = 256,
) -> ray.data.Dataset:
    """``ds`` with an ``input_ids`` column (and ``attention_mask`` if asked): the ids of ``ds[text_column]``.

    ``tokenizer`` is an engine :class:`~hf_bbpe.Tokenizer`, a ``BBPETokenizer``, or the path of a
    folder saved by ``BBPETokenizer.save_pretrained``; ``num_actors`` actors (default: the
    cluster's CPUs but one, left to the tasks that read the data: actors holding every CPU
    would starve them) each load it once. Text is encoded as plain text, as ``encode_ordinary`` does:
    a special token's string inside a document is not the special token. ``add_eos`` appends the
    end-of-sequence id: the folder's or ``BBPETokenizer``'s ``eos_token``, or for an engine
    tokenizer the special token ``eos_token`` (default ``"<|endoftext|>"``). The ids are those of
    the engine's ``encode_ordinary``, whatever the worker.
    """
    ray = require_ray()
    columns = ds.columns() or []
    if text_column not in columns:
        raise ValueError(f"the dataset has no column {text_column!r} (its columns: {', '.join(columns)})")
    source = tokenizer if isinstance(tokenizer, (str, os.PathLike)) else _engine_and_eos(tokenizer, eos_token)
    if add_eos:
        _eos_id(_load(source), eos_token)  # fail here, not in every actor
    return ds.map_batches(
        _BatchEncoder,
        fn_constructor_args=(source, text_column, add_eos, attention_mask, eos_token),
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=num_actors or max(1, cluster_cpus() - 1)),
    )


def encode_texts(
    texts: Sequence[str], tokenizer: Any, *, num_actors: int | None = None, batch_size: int | None = 256
) -> tuple[np.ndarray, np.ndarray]:
    """The ids of ``texts``, encoded on the cluster by :func:`encode_dataset`'s actors and put back
    in input order: one flat uint32 array and int64 offsets (``len(texts) + 1`` of them), as
    ``Tokenizer.encode_batch_to_numpy`` returns them. ``hf-bbpe encode-corpus --ray`` encodes each
    shard with it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ray = require_ray()
    texts = list(texts)
    n = len(texts)
    if not n:
        return np.zeros(0, dtype=np.uint32), np.zeros(1, dtype=np.int64)
    blocks = max(1, min(n, 4 * (num_actors or cluster_cpus())))
    bounds = [n * k // blocks for k in range(blocks + 1)]
    ds = ray.data.from_arrow([
        pa.table({"text": pa.array(texts[a:b], pa.large_string()), "position": pa.array(range(a, b), pa.int64())})
        for a, b in zip(bounds, bounds[1:]) if b > a
    ])
    encoded = encode_dataset(ds, tokenizer, num_actors=num_actors, batch_size=batch_size)
    pieces: list[np.ndarray | None] = [None] * n
    for batch in encoded.select_columns(["position", "input_ids"]).iter_batches(batch_format="pyarrow", batch_size=None):
        ids = batch.column("input_ids")
        flat = pc.list_flatten(ids).to_numpy().astype(np.uint32)
        ends = np.cumsum(pc.list_value_length(ids).to_numpy(zero_copy_only=False), dtype=np.int64)
        starts = np.concatenate(([0], ends[:-1]))
        for position, start, end in zip(batch.column("position").to_pylist(), starts, ends):
            pieces[position] = flat[start:end]
    missing = [i for i, piece in enumerate(pieces) if piece is None]
    if missing:
        raise RuntimeError(f"Ray returned no ids for {len(missing)} of {n} texts (the first: {missing[0]})")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(piece) for piece in pieces], out=offsets[1:])
    return np.concatenate(pieces).astype(np.uint32, copy=False), offsets


def _engine_and_eos(tokenizer: Any, eos_token: str | None) -> tuple[Tokenizer, str | None]:
    """``(engine tokenizer, its EOS string)`` from an engine tokenizer or a ``BBPETokenizer``."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer, eos_token
    engine = getattr(tokenizer, "engine", None)
    if isinstance(engine, Tokenizer):
        return engine, eos_token or getattr(tokenizer, "eos_token", None)
    raise TypeError(
        f"tokenizer must be a hf_bbpe Tokenizer, a BBPETokenizer or a saved folder's path, got {type(tokenizer).__name__}"
    )


def _load(source: Any) -> tuple[Tokenizer, str | None]:
    """``(engine tokenizer, EOS string)`` from what :func:`encode_dataset` ships to its actors."""
    if isinstance(source, (str, os.PathLike)):
        from ..tokenization_bbpe import BBPETokenizer

        return _engine_and_eos(BBPETokenizer.from_pretrained(os.fspath(source)), None)
    return source


def _eos_id(loaded: tuple[Tokenizer, str | None], eos_token: str | None) -> int:
    engine, folder_eos = loaded
    name = eos_token or folder_eos or "<|endoftext|>"
    eos = engine.special_tokens.get(name)
    if eos is None:
        raise ValueError(
            f"add_eos=True, but the tokenizer has no special token {name!r} "
            f"(its special tokens: {', '.join(engine.special_tokens) or 'none'}); pass eos_token="
        )
    return eos


class _BatchEncoder:
    """The actor class: loads the tokenizer once, then encodes batch after batch."""

    def __init__(self, source: Any, text_column: str, add_eos: bool, attention_mask: bool, eos_token: str | None) -> None:
        loaded = _load(source)
        self.engine = loaded[0]
        self.eos = _eos_id(loaded, eos_token) if add_eos else None
        self.text_column = text_column
        self.attention_mask = attention_mask

    def __call__(self, batch: pa.Table) -> pa.Table:
        import numpy as np
        import pyarrow as pa

        from ..batch_encoding import append_to_each

        # one call per batch (the C kernel encodes the texts back to back), ids as plain text
        ids, offsets = self.engine.encode_batch_to_numpy(batch.column(self.text_column).to_pylist(), num_threads=1,
                                                         allowed_special="none", disallowed_special=())
        if self.eos is not None:
            ids, offsets = append_to_each(ids, offsets, self.eos)
        starts = pa.array(offsets.astype(np.int32))
        batch = batch.append_column("input_ids", pa.ListArray.from_arrays(starts, pa.array(ids.astype(np.int32))))
        if self.attention_mask:
            ones = pa.array(np.ones(len(ids), dtype=np.int8))
            batch = batch.append_column("attention_mask", pa.ListArray.from_arrays(starts, ones))
        return batch
