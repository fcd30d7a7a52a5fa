"""Counting the chunks of a corpus: the input side of training.

Documents are never cut: a split pattern's matches depend on what follows (``\\s+(?!\\S)``,
``\\s*[\\r\\n]`` and ``\\s++$`` look across any cut, even at blank lines), so each document is
split in one sequential pass and parallelism is across documents only. Documents stream in
batches to worker processes; memory grows with the number of distinct chunks, not with the
corpus. Batches are merged in input order, so the result lists chunks in order of first
appearance, which minbpe's tie-break needs.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from collections.abc import Iterable, Iterator

from .patterns import compile_pattern

_BATCH_CHARS = 1 << 20  # characters of text sent to a worker at a time


def count_chunks(
    documents: Iterable[str],
    pattern: str | None,
    *,
    num_workers: int | None = None,
    progress: bool | None = None,
) -> dict[str, int]:
    """Count the chunks of every document, in order of first appearance.

    ``pattern=None`` makes each document one chunk (minbpe's BasicTokenizer).
    ``num_workers`` defaults to the CPUs available; 1 counts in this process.
    """
    from .progress import progress_bar

    workers = max(1, num_workers or available_cpus())
    counts: Counter[str] = Counter()
    bar = progress_bar(desc="counting chunks", unit="MB", enabled=progress, scale=1 / 1e6)
    batches = _batches(documents)
    first = next(batches, None)
    if first is None:
        bar.close()
        return {}
    second = next(batches, None)
    if second is None or workers == 1:
        for batch in _chain(first, second, batches):
            counts.update(_count_batch((batch, pattern)))
            bar.update(sum(map(len, batch)))
    else:
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        with context.Pool(workers) as pool:
            jobs = ((batch, pattern) for batch in _chain(first, second, batches))
            for batch_counts, n_chars in pool.imap(_count_batch_sized, jobs, chunksize=1):
                counts.update(batch_counts)
                bar.update(n_chars)
    bar.close()
    return dict(counts)


def available_cpus() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _chain(first: list[str], second: list[str] | None, rest: Iterator[list[str]]) -> Iterator[list[str]]:
    yield first
    if second is not None:
        yield second
        yield from rest


def _batches(documents: Iterable[str]) -> Iterator[list[str]]:
    if isinstance(documents, str):
        documents = (documents,)
    batch: list[str] = []
    size = 0
    for doc in documents:
        if not isinstance(doc, str):
            raise TypeError(f"training documents must be str, got {type(doc).__name__}")
        batch.append(doc)
        size += len(doc)
        if size >= _BATCH_CHARS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _count_batch(job: tuple[list[str], str | None]) -> Counter[str]:
    docs, pattern = job
    if pattern is None:
        return Counter(doc for doc in docs if doc)
    findall = compile_pattern(pattern).findall
    counts: Counter[str] = Counter()
    for doc in docs:
        counts.update(findall(doc))
    return counts


def _count_batch_sized(job: tuple[list[str], str | None]) -> tuple[Counter[str], int]:
    return _count_batch(job), sum(map(len, job[0]))
