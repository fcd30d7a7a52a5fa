"""Counting the chunks of a corpus: the input side of training.

The counts must equal one sequential pass of the split pattern over each document: a pattern's
matches depend on what follows (``\\s+(?!\\S)``, ``\\s*[\\r\\n]`` and ``\\s++$`` look across any
cut, even at blank lines), so documents are never cut blindly. An iterable of documents streams
in batches to worker processes; memory grows with the number of distinct chunks, not with the
corpus. A single long str is split in segments whose seams are verified: each worker starts
matching at its cut, and the previous worker goes on past the cut until both produce a match
at the same position, from where the two scans are identical (the scan from a position depends
only on the text, not on where scanning began); the matches before that point are taken from
the previous worker. If no such point is found near a cut, the text is counted sequentially.
Results are merged in input order, so chunks come out in order of first appearance, which
minbpe's tie-break needs.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from .patterns import chunk_splitter, compile_pattern

_BATCH_CHARS = 1 << 20  # characters of text sent to a worker at a time
_SEGMENT_CHARS = 1 << 22  # a str longer than two segments is counted in parallel segments
_SEAM_CHARS = 1 << 16  # how far past a cut the two scans may take to agree

_long_text = ""  # the str being counted in segments, shared with forked workers


def count_chunks(
    documents: Iterable[str],
    pattern: str | Callable[[str], list] | None,
    *,
    num_workers: int | None = None,
    progress: bool | None = None,
) -> dict[str, int]:
    """Count the chunks of every document, in order of first appearance.

    ``pattern=None`` makes each document one chunk (minbpe's BasicTokenizer); a callable
    (picklable) cuts a document into chunks itself (a normalizer and pre-tokenizer pipeline).
    ``num_workers`` defaults to the CPUs available; 1 counts in this process.
    """
    from .progress import progress_bar

    workers = max(1, num_workers or available_cpus())
    if multiprocessing.current_process().daemon:  # a Pool or DataLoader worker may not fork
        workers = 1
    bar = progress_bar(desc="counting chunks", unit="MB", enabled=progress, scale=1 / 1e6)
    if isinstance(documents, str) and isinstance(pattern, str) and workers > 1 and len(documents) > 2 * _SEGMENT_CHARS:
        counts = _count_long_text(documents, pattern, workers, bar)
        bar.close()
        return dict(counts)
    counts: Counter[str] = Counter()
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


def _count_long_text(text: str, pattern: str, workers: int, bar) -> Counter[str]:
    """Count one long document in parallel segments with verified seams (see module doc)."""
    global _long_text
    cuts = list(range(0, len(text), _SEGMENT_CHARS))
    jobs = [(i, start, cuts[i + 1] if i + 1 < len(cuts) else len(text), pattern) for i, start in enumerate(cuts)]
    counts: Counter[str] = Counter()
    _long_text = text
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(workers) as pool:
            previous_tail: list[tuple[int, int]] = []
            for (i, start, end, _), (head, middle, tail) in zip(jobs, pool.imap(_count_segment, jobs)):
                if i > 0:
                    seam = _join_seam(previous_tail, head)
                    if seam is None:
                        pool.terminate()
                        return Counter(chunk_splitter(pattern)(text))
                    counts.update(text[s:e] for s, e in seam)
                counts.update(middle)
                previous_tail = tail
                bar.update(end - start)
    finally:
        _long_text = ""
    return counts


def _count_segment(job: tuple[int, int, int, str]) -> tuple[list[tuple[int, int]], Counter[str], list[tuple[int, int]]]:
    """Scan from ``start``: the spans of matches in the seam after ``start`` (not yet known to be
    true), the counts of matches from there up to ``end``, and the spans in the seam after ``end``."""
    index, start, end, pattern = job
    text = _long_text
    head_end = start + _SEAM_CHARS if index > 0 else start
    tail_end = end + _SEAM_CHARS if end < len(text) else end
    head: list[tuple[int, int]] = []
    middle: Counter[str] = Counter()
    tail: list[tuple[int, int]] = []
    matches = compile_pattern(pattern).finditer(text, start)
    for match in matches:
        if match.start() >= head_end:
            break
        head.append(match.span())
    else:
        return head, middle, tail
    first_past_end = None

    def up_to_end(first):
        nonlocal first_past_end
        for m in itertools.chain([first], matches):
            if m.start() >= end:
                first_past_end = m
                return
            yield m.group()

    middle.update(up_to_end(match))
    if first_past_end is not None:
        for m in itertools.chain([first_past_end], matches):
            if m.start() >= tail_end:
                break
            tail.append(m.span())
    return head, middle, tail


def _join_seam(tail: list[tuple[int, int]], head: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The true matches around a cut: the earlier scan's until both scans start a match at the
    same position, the later scan's from there; None if they never meet."""
    starts = {s for s, _ in tail}
    for k, (s, _) in enumerate(head):
        if s in starts:
            return [span for span in tail if span[0] < s] + head[k:]
    return None


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
    split = chunk_splitter(pattern) if isinstance(pattern, str) else pattern
    counts: Counter[str] = Counter()
    for doc in docs:
        counts.update(split(doc))
    return counts


def _count_batch_sized(job: tuple[list[str], str | None]) -> tuple[Counter[str], int]:
    return _count_batch(job), sum(map(len, job[0]))
