"""Encoding a Ray Dataset: stateful actors that each load the tokenizer once."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..engine.tokenizer import Tokenizer
from .ray_import import blocks_of_at_most, cluster_cpus, require_ray

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
    batch_size: int | None = 4096,
) -> ray.data.Dataset:
    """``ds`` with an ``input_ids`` column (and ``attention_mask`` if asked): the ids of ``ds[text_column]``.

    ``tokenizer`` is an engine :class:`~hf_bbpe.Tokenizer`, a ``BBPETokenizer``, or the path of a
    folder saved by ``BBPETokenizer.save_pretrained``; ``num_actors`` actors (default: the
    cluster's CPUs but one, left to the tasks that read the data: actors holding every CPU
    would starve them) each load it once. Text is encoded as plain text, as ``encode_ordinary`` does:
    a special token's string inside a document is not the special token. ``add_eos`` appends the
    end-of-sequence id: the folder's or ``BBPETokenizer``'s ``eos_token``, or for an engine
    tokenizer the special token ``eos_token`` (default ``"<|endoftext|>"``). The ids are those of
    the engine's ``encode_ordinary``, whatever the worker. Each actor call encodes ``batch_size``
    rows in one engine call (small batches cost more in Ray's per-batch overhead than in encoding),
    and larger blocks are cut to that size first (when the actors leave a CPU to the tasks that
    cut them), so that every actor has work.
    """
    ray = require_ray()
    columns = ds.columns() or []
    if text_column not in columns:
        raise ValueError(f"the dataset has no column {text_column!r} (its columns: {', '.join(columns)})")
    source = tokenizer if isinstance(tokenizer, (str, os.PathLike)) else _engine_and_eos(tokenizer, eos_token)
    if add_eos:
        _eos_id(_load(source), eos_token)  # fail here, not in every actor
    actors = num_actors or max(1, cluster_cpus() - 1)
    if actors < cluster_cpus():  # cutting blocks runs as tasks: only where the actors leave them a CPU
        ds = blocks_of_at_most(ds, batch_size)
    return ds.map_batches(
        _BatchEncoder,
        fn_constructor_args=(source, text_column, add_eos, attention_mask, eos_token),
        batch_format="pyarrow",
        batch_size=batch_size,
        zero_copy_batch=True,  # the actor adds columns to a new table, never writes into the batch
        compute=ray.data.ActorPoolStrategy(size=actors),
    )


def encode_texts(
    texts: Sequence[str], tokenizer: Any, *, num_actors: int | None = None, block_bytes: int = 4 << 20
) -> tuple[np.ndarray, np.ndarray]:
    """The ids of ``texts``, encoded on the cluster by a :class:`TextEncoderPool` of ``num_actors``
    actors started for this call: one flat uint32 array and int64 offsets (``len(texts) + 1`` of
    them), as ``Tokenizer.encode_batch_to_numpy`` returns them. To encode many batches, keep one
    :class:`TextEncoderPool` instead (``hf-bbpe encode-corpus --ray`` does)."""
    with TextEncoderPool(tokenizer, num_actors=num_actors, block_bytes=block_bytes) as pool:
        return pool.encode(texts)


class TextEncoderPool:
    """Actors that each load the tokenizer once and then encode block after block of texts, for as
    long as the pool lives: ``pool.encode(texts)`` -> ``(flat uint32 ids, int64 offsets)`` in input
    order, the engine's ``encode_ordinary`` ids.

    The texts travel as Arrow-style buffers (UTF-8 bytes and int64 offsets, two numpy arrays that
    Ray's object store passes without pickling a Python object per text), and the ids come back
    the same way. ``encode`` cuts the texts into blocks of about ``block_bytes`` of text and queues
    them on the actors round-robin, so an actor never waits for the driver between two blocks;
    :meth:`submit` returns before the ids are ready, so that the driver reads the next texts
    meanwhile (``write_token_shards`` does, one shard ahead).
    ``num_actors`` defaults to the cluster's CPUs but one (the driver reads the input meanwhile).
    """

    def __init__(self, tokenizer: Any, *, num_actors: int | None = None, block_bytes: int = 4 << 20) -> None:
        ray = require_ray()
        if block_bytes < 1:
            raise ValueError(f"block_bytes must be >= 1, got {block_bytes}")
        source = tokenizer if isinstance(tokenizer, (str, os.PathLike)) else _engine_and_eos(tokenizer, None)
        # one copy in the object store, however many actors read it; kept while the pool lives, so
        # that Ray can restart an actor that died (encoding a block twice gives the same ids)
        self._source = ray.put(source)
        actor = ray.remote(num_cpus=1, max_restarts=2, max_task_retries=2)(_TextBlockEncoder)
        self.block_bytes = block_bytes
        self.actors = [actor.remote(self._source) for _ in range(num_actors or max(1, cluster_cpus() - 1))]

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The ids of ``texts``: one flat uint32 array and int64 offsets (``len(texts) + 1``)."""
        return self.submit(texts)()

    def submit(self, texts: Sequence[str]) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        """Queue ``texts`` on the actors and return at once a function that waits for their ids
        (what :meth:`encode` returns): the caller reads its next texts while the actors work."""
        import numpy as np

        ray = require_ray()
        data, starts, surrogates = _utf8_buffers(texts)
        bounds = _block_bounds(starts, self.block_bytes)
        refs = [
            self.actors[k % len(self.actors)].encode_block.remote(data[starts[a] : starts[b]],
                                                                  starts[a : b + 1] - starts[a], surrogates)
            for k, (a, b) in enumerate(zip(bounds, bounds[1:]))
        ]

        def result() -> tuple[np.ndarray, np.ndarray]:
            id_parts, offset_parts, base = [], [np.zeros(1, dtype=np.int64)], 0
            for ref in refs:  # in submission order, hence input order
                ids, offsets = ray.get(ref)
                id_parts.append(ids)
                offset_parts.append(offsets[1:] + base)
                base += int(offsets[-1])
            ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.uint32)
            return ids.astype(np.uint32, copy=False), np.concatenate(offset_parts)

        return result

    __call__ = encode  # a token_shards encoder: texts -> (ids, offsets)

    def close(self) -> None:
        """Stop the actors (they also stop with the driver)."""
        ray = require_ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []

    def __enter__(self) -> TextEncoderPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _utf8_buffers(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, bool]:
    """``texts`` as one UTF-8 byte array and int64 start offsets (``len(texts) + 1``), built by
    Arrow in one pass; texts with lone surrogates (which UTF-8 cannot hold) are written with
    ``surrogatepass`` instead, and the flag says so, so that the actor reads them back as they were."""
    import numpy as np
    import pyarrow as pa

    try:
        array = pa.array(texts, pa.large_string())
    except (pa.ArrowException, UnicodeEncodeError):
        encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
        starts = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=starts[1:])
        return np.frombuffer(b"".join(encoded), dtype=np.uint8), starts, True
    _, offsets, data = array.buffers()
    starts = np.frombuffer(offsets, dtype=np.int64, count=len(array) + 1)
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    return data, starts, False


def _block_bounds(starts: np.ndarray, block_bytes: int) -> list[int]:
    """Text indices ``0 = b0 < b1 < ... = n`` cutting the texts into blocks of about ``block_bytes``."""
    import numpy as np

    n = len(starts) - 1
    marks = np.searchsorted(starts, np.arange(block_bytes, int(starts[-1]), block_bytes), side="left")
    return sorted({0, n, *(int(m) for m in marks if 0 < m < n)})


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
        from ..hf.tokenization_bbpe import BBPETokenizer

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


class _Encoder:
    """What every actor holds: the tokenizer, loaded once, and the batch encoding (one engine call
    per batch: the C kernel encodes the texts back to back), ids as plain text."""

    def __init__(self, source: Any, add_eos: bool = False, eos_token: str | None = None) -> None:
        loaded = _load(source)
        self.engine = loaded[0]
        self.eos = _eos_id(loaded, eos_token) if add_eos else None

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        from ..engine.encoding.batches import append_to_each

        ids, offsets = self.engine.encode_batch_to_numpy(texts, num_threads=1, allowed_special="none",
                                                         disallowed_special=())
        if self.eos is not None:
            ids, offsets = append_to_each(ids, offsets, self.eos)
        return ids, offsets


class _TextBlockEncoder(_Encoder):
    """:class:`TextEncoderPool`'s actor: a block of texts as UTF-8 buffers -> its ids and offsets."""

    def encode_block(self, data: np.ndarray, starts: np.ndarray, surrogates: bool) -> tuple[np.ndarray, np.ndarray]:
        import pyarrow as pa

        if surrogates:
            raw = data.tobytes()
            texts = [raw[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]
        else:
            texts = pa.LargeStringArray.from_buffers(len(starts) - 1, pa.py_buffer(starts), pa.py_buffer(data)).to_pylist()
        return super().encode(texts)


class _BatchEncoder(_Encoder):
    """:func:`encode_dataset`'s actor class (``map_batches``): a batch -> the batch with ``input_ids``."""

    def __init__(self, source: Any, text_column: str, add_eos: bool, attention_mask: bool, eos_token: str | None) -> None:
        super().__init__(source, add_eos, eos_token)
        self.text_column = text_column
        self.attention_mask = attention_mask

    def __call__(self, batch: pa.Table) -> pa.Table:
        import numpy as np
        import pyarrow as pa

        ids, offsets = self.encode(batch.column(self.text_column).to_pylist())
        starts = pa.array(offsets.astype(np.int32))
        batch = batch.append_column("input_ids", pa.ListArray.from_arrays(starts, pa.array(ids.view(np.int32))))
        if self.attention_mask:
            ones = pa.array(np.ones(len(ids), dtype=np.int8))
            batch = batch.append_column("attention_mask", pa.ListArray.from_arrays(starts, ones))
        return batch
