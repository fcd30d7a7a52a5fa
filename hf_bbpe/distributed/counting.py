"""Chunk counting on a Ray cluster: split and count as Ray tasks, combine inside Ray, stream out.

The plan Ray runs, for a dataset of documents:

1. ``map_batches``: each task splits its block's documents and counts them, giving partial counts
   ``(chunk, count)``: with the C counter that single-machine training uses
   (``hf_bbpe.engine.training.counting``, one thread per task) when a C scanner knows the pattern, its
   buffers made an Arrow column as they are (no Python object per chunk); otherwise with the
   engine's splitter (``hf_bbpe.engine.training.counting_reference.count_chunks`` with one process);
2. ``repartition(keys=["chunk"])``: Ray hash-partitions the partial counts by chunk across
   ``num_partitions`` blocks, so no task ever holds every partial count, and each reduce task
   sums the partial counts of its chunks (an Arrow ``group_by``, 64-bit sums). Ray Data's own
   ``groupby().aggregate(Sum)`` gives the same totals but was 8x slower here;
3. optional pruning of chunks seen fewer than ``min_chunk_count`` times, still inside Ray;
4. the driver reads the totals with ``iter_batches`` (a stream of Arrow batches) into the one
   ``{chunk: count}`` mapping that the merge loop needs anyway.

Merges depend only on these totals for the default tie-break (``"smallest_pair"``), so they equal
single-machine training on the same documents. ``"first_occurrence"`` also needs the order in which
chunks first appear, and Ray Data gives rows no order; pass ``order_column``, an integer column
holding each document's position, and every chunk carries its first position
``(document position, chunk index)`` through the aggregate (a ``Min``), then Ray sorts the totals
by it before they stream out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..engine.chunking.patterns import chunk_splitter, resolve_pattern
from ..engine.training.counting import ChunkCounts, available, count_native
from ..engine.training.counting_reference import count_chunks as count_document_chunks
from .ray_import import blocks_of_at_most, cluster_cpus, require_ray

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

_POSITION_BITS = 32  # first position = document position << 32 | chunk index in the document
_STREAM_ROWS = 1 << 16


def count_chunks(
    ds: ray.data.Dataset,
    pattern: Any,
    *,
    text_column: str = "text",
    order_column: str | None = None,
    min_chunk_count: int = 1,
    num_partitions: int | None = None,
    batch_size: int = 4096,
    shuffle_strategy: str | None = None,
) -> dict[str, int]:
    """``{chunk: count}`` over the documents in ``ds[text_column]``, counted on the Ray cluster.

    ``pattern`` is a split pattern (a registered name or a regex; ``None`` makes each document one
    chunk) or a tokenizer, whose pattern is used. Chunks seen fewer than ``min_chunk_count`` times
    are dropped inside Ray, before they reach this process; the default 1 keeps every chunk, so
    the counts are exact. With ``order_column`` (see the module doc), the mapping is in order of
    first appearance, as ``tie_break="first_occurrence"`` needs. ``num_partitions`` (default: the
    cluster's CPUs) is the number of reduce tasks that the partial counts are hash-partitioned to;
    each counting task counts ``batch_size`` documents (larger blocks are cut to that size first,
    so that every CPU has a task).
    ``shuffle_strategy`` is the Ray Data shuffle that the repartition runs with while this call
    runs (a key-based ``ray.data.context.ShuffleStrategy`` value such as ``"hash_shuffle"``;
    ``None`` keeps the dataset's own).
    """
    counts: dict[str, int] = {}
    with _shuffle_strategy(ds, shuffle_strategy):
        for chunk, count in iter_chunk_counts(
            ds, pattern, text_column=text_column, order_column=order_column,
            min_chunk_count=min_chunk_count, num_partitions=num_partitions, batch_size=batch_size,
        ):
            # a chunk comes once, unless Ray split a partition's block in two: add, never overwrite
            counts[chunk] = counts.get(chunk, 0) + count
    return counts


@contextlib.contextmanager
def _shuffle_strategy(ds: ray.data.Dataset, strategy: str | None) -> Iterator[None]:
    """Run with ``ds.context.shuffle_strategy = strategy`` and put the dataset's own back after."""
    if strategy is None:
        yield
        return
    from ray.data.context import ShuffleStrategy

    context = ds.context
    before = context.shuffle_strategy
    context.shuffle_strategy = ShuffleStrategy(strategy)
    try:
        yield
    finally:
        context.shuffle_strategy = before


def iter_chunk_counts(
    ds: ray.data.Dataset,
    pattern: Any,
    *,
    text_column: str = "text",
    order_column: str | None = None,
    min_chunk_count: int = 1,
    num_partitions: int | None = None,
    batch_size: int = 4096,
) -> Iterator[tuple[str, int]]:
    """:func:`count_chunks` as a stream of ``(chunk, count)`` (with the dataset's own shuffle
    strategy). Each chunk comes once, unless Ray splits a partition's block; the counts of a chunk
    that comes twice add up."""
    require_ray()
    if min_chunk_count < 1:
        raise ValueError(f"min_chunk_count must be >= 1, got {min_chunk_count}")
    split_pattern = _split_pattern(pattern)
    columns = ds.columns() or []
    for name in (text_column, order_column):
        if name is not None and name not in columns:
            raise ValueError(f"the dataset has no column {name!r} (its columns: {', '.join(columns)})")
    partial = blocks_of_at_most(ds, batch_size).map_batches(
        _PartialCounts(split_pattern, text_column, order_column),
        batch_format="pyarrow",
        batch_size=batch_size,
        zero_copy_batch=True,
    )
    partitions = num_partitions or cluster_cpus()
    totals = partial.repartition(partitions, keys=["chunk"]).map_batches(
        _Totals(order_column is not None, min_chunk_count), batch_format="pyarrow", batch_size=None
    )
    if order_column is not None:
        totals = totals.sort("first")
    for batch in totals.iter_batches(batch_size=_STREAM_ROWS, batch_format="pyarrow"):
        yield from zip(batch.column("chunk").to_pylist(), batch.column("count").to_pylist())


def _split_pattern(pattern: Any) -> Any:
    """How to split: a tokenizer's own chunking (its plain pattern, or its normalize-and-split
    pipeline as a callable), or ``pattern`` resolved by name."""
    if hasattr(pattern, "chunking"):
        return pattern.chunking.counting_spec
    return resolve_pattern(pattern) or None


class _PartialCounts:
    """A ``map_batches`` function: one batch of documents -> its table of ``(chunk, count[, first])``."""

    def __init__(self, pattern: Any, text_column: str, order_column: str | None) -> None:
        self.pattern = pattern
        self.text_column = text_column
        self.order_column = order_column

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        docs = batch.column(self.text_column).to_pylist()
        if self.order_column is None and isinstance(self.pattern, str) and available(self.pattern):
            return _counts_table(count_native(docs, self.pattern, num_threads=1, progress=False))
        if self.order_column is None:
            counts = count_document_chunks(docs, self.pattern, num_workers=1, progress=False)
            return pa.table({
                "chunk": pa.array(list(counts), pa.string()),
                "count": pa.array(list(counts.values()), pa.int64()),
            })
        counts, first = _ordered_counts(docs, batch.column(self.order_column).to_pylist(), self.pattern, self.order_column)
        return pa.table({
            "chunk": pa.array(list(counts), pa.string()),
            "count": pa.array(list(counts.values()), pa.int64()),
            "first": pa.array([first[chunk] for chunk in counts], pa.int64()),
        })


def _counts_table(counts: ChunkCounts) -> pa.Table:
    """The C counter's counts as a ``(chunk, count)`` table over its own buffers: the chunks a
    ``large_string`` column whose data is the counter's symbols, offsets the running sum of its
    lengths (the order of first appearance kept)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    symbols, lengths, totals = counts.buffers()
    n = len(counts)
    lengths = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(lengths)]).cast(pa.int64())
    offsets = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(lengths)])
    return pa.table({
        "chunk": pa.Array.from_buffers(pa.large_string(), n, [None, offsets.buffers()[1], pa.py_buffer(symbols)]),
        "count": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(totals)]),
    })


def _ordered_counts(
    docs: list[str], positions: list[int], pattern: Any, order_column: str
) -> tuple[dict[str, int], dict[str, int]]:
    """Chunk counts of ``docs`` and each chunk's first position ``position << 32 | chunk index``."""
    if callable(pattern):
        split = pattern
    else:
        split = chunk_splitter(pattern) if pattern is not None else (lambda doc: [doc] if doc else [])
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for doc, position in zip(docs, positions):
        if not isinstance(doc, str):
            raise TypeError(f"training documents must be str, got {type(doc).__name__}")
        if not isinstance(position, int) or not 0 <= position < 1 << (63 - _POSITION_BITS):
            raise ValueError(f"column {order_column!r} must hold document positions 0 <= n < 2**31, got {position!r}")
        base = position << _POSITION_BITS
        for index, chunk in enumerate(split(doc)):
            if chunk in counts:
                counts[chunk] += 1
                if base + index < first[chunk]:
                    first[chunk] = base + index
            else:
                counts[chunk] = 1
                first[chunk] = base + index
    return counts, first


class _Totals:
    """The reduce: one hash partition of partial counts -> each chunk's total (and first position),
    keeping the chunks counted at least ``minimum`` times."""

    def __init__(self, ordered: bool, minimum: int) -> None:
        self.ordered = ordered
        self.minimum = minimum

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow.compute as pc

        aggregates = [("count", "sum"), ("first", "min")] if self.ordered else [("count", "sum")]
        totals = batch.group_by("chunk", use_threads=False).aggregate(aggregates)
        totals = totals.rename_columns([{"count_sum": "count", "first_min": "first"}.get(n, n) for n in totals.column_names])
        if self.minimum > 1:
            totals = totals.filter(pc.greater_equal(totals.column("count"), self.minimum))
        return totals
