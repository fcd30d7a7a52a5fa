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

Text that no chunk covers (a pattern such as ``\\w+`` skips spaces and punctuation) is counted
too: encoding drops it in the same way, so training warns, naming the characters. Counts that are
mostly control characters (a binary file read as text) get a warning too
(:func:`warn_if_mostly_control`).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping

from ..chunking.patterns import HOLD_GIL, chunk_splitter, compile_pattern
from ..worker_pool import forked_pool, shared, usable_workers

_BATCH_CHARS = 1 << 20  # characters of text sent to a worker at a time
_SEGMENT_CHARS = 1 << 22  # a str longer than two segments is counted in parallel segments
_SEAM_CHARS = 1 << 16  # how far past a cut the two scans may take to agree


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
    ``num_workers`` defaults to the CPUs available; 1 counts in this process, and so does a
    process that cannot fork (see worker_pool.py). Warns if a pattern's chunks leave text out.
    """
    from ..progress import progress_bar

    workers = usable_workers(num_workers)
    bar = progress_bar(desc="counting chunks", unit="MB", enabled=progress, scale=1 / 1e6)
    if isinstance(documents, str) and isinstance(pattern, str) and workers > 1 and len(documents) > 2 * _SEGMENT_CHARS:
        counts = _count_long_text(documents, pattern, workers, bar)
        bar.close()
        if sum(len(chunk) * n for chunk, n in counts.items()) != len(documents):
            _warn_uncovered(_uncovered(documents, pattern), len(documents))
        return dict(counts)
    counts: Counter[str] = Counter()
    uncovered: Counter[str] = Counter()
    total_chars = 0
    batches = document_batches(documents)
    first = next(batches, None)
    if first is None:
        bar.close()
        return {}
    second = next(batches, None)
    jobs = ((batch, pattern) for batch in _chain(first, second, batches))
    with contextlib.ExitStack() as stack:
        if second is None or workers == 1:
            results = map(_count_batch, jobs)
        else:
            results = stack.enter_context(forked_pool(workers)).imap(_count_batch, jobs, chunksize=1)
        for batch_counts, batch_uncovered, n_chars in results:
            counts.update(batch_counts)
            uncovered.update(batch_uncovered)
            total_chars += n_chars
            bar.update(n_chars)
    bar.close()
    if uncovered:
        _warn_uncovered(uncovered, total_chars)
    return dict(counts)


def paragraphs(lines: Iterable[str]) -> Iterator[str]:
    """The documents of a text in pieces (a file's lines): each ends after a run of blank lines,
    which stay with the text before them. This is how ``hf-bbpe train`` cuts files by default: it
    keeps almost every chunk the split pattern finds in the whole text (``"\\n\\n"`` included, which
    training on lines never sees) while documents can be counted in parallel.

    Lines end at ``"\\n"`` only, wherever the pieces end: a file opened with ``newline=""`` (which
    keeps ``"\\r\\n"`` as it is, as the command reads it) gives the command's documents.
    """
    doc: list[str] = []
    in_blank_run = False
    for line in _newline_ended(lines):
        blank = not line.strip("\r\n")
        if in_blank_run and not blank:
            yield "".join(doc)
            doc = []
        doc.append(line)
        in_blank_run = blank
    if doc:
        yield "".join(doc)


def _newline_ended(pieces: Iterable[str]) -> Iterator[str]:
    """The lines of text given in pieces, each ending at ``"\\n"`` (the last one may not)."""
    partial = ""
    for piece in pieces:
        if not partial and piece and piece.find("\n") == len(piece) - 1:
            yield piece  # one whole line, as a file's lines come
            continue
        lines = (partial + piece).split("\n")
        partial = lines.pop()
        yield from (line + "\n" for line in lines)
    if partial:
        yield partial


def _count_long_text(text: str, pattern: str, workers: int, bar) -> Counter[str]:
    """Count one long document in parallel segments with verified seams (see module doc)."""
    cuts = list(range(0, len(text), _SEGMENT_CHARS))
    jobs = [(i, start, cuts[i + 1] if i + 1 < len(cuts) else len(text), pattern) for i, start in enumerate(cuts)]
    counts: Counter[str] = Counter()
    with forked_pool(workers, long_text=text) as pool:
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
    return counts


def _count_segment(job: tuple[int, int, int, str]) -> tuple[list[tuple[int, int]], Counter[str], list[tuple[int, int]]]:
    """Scan from ``start``: the spans of matches in the seam after ``start`` (not yet known to be
    true), the counts of matches from there up to ``end``, and the spans in the seam after ``end``."""
    index, start, end, pattern = job
    text = shared("long_text")
    head_end = start + _SEAM_CHARS if index > 0 else start
    tail_end = end + _SEAM_CHARS if end < len(text) else end
    head: list[tuple[int, int]] = []
    middle: Counter[str] = Counter()
    tail: list[tuple[int, int]] = []
    matches = compile_pattern(pattern).finditer(text, start, **HOLD_GIL)
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


def _chain(first: list[str], second: list[str] | None, rest: Iterator[list[str]]) -> Iterator[list[str]]:
    yield first
    if second is not None:
        yield second
        yield from rest


def document_batches(documents: str | Iterable[str], batch_chars: int = _BATCH_CHARS) -> Iterator[list[str]]:
    """The documents (a str is one) in lists of about ``batch_chars`` characters; a document that
    is not a str is a TypeError."""
    if isinstance(documents, str):
        documents = (documents,)
    batch: list[str] = []
    size = 0
    for doc in documents:
        if not isinstance(doc, str):
            raise TypeError(f"training documents must be str, got {type(doc).__name__}")
        batch.append(doc)
        size += len(doc)
        if size >= batch_chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _count_batch(job: tuple[list[str], str | None]) -> tuple[Counter[str], Counter[str], int]:
    """The chunk counts of a batch of documents, the characters no chunk covers, and the size."""
    docs, pattern = job
    n_chars = sum(map(len, docs))
    uncovered: Counter[str] = Counter()
    if pattern is None:
        return Counter(doc for doc in docs if doc), uncovered, n_chars
    if not isinstance(pattern, str):  # a pipeline: what it leaves out is its own choice
        return Counter(chunk for doc in docs for chunk in pattern(doc)), uncovered, n_chars
    split = chunk_splitter(pattern)
    counts: Counter[str] = Counter()
    for doc in docs:
        chunks = split(doc)
        counts.update(chunks)
        if sum(map(len, chunks)) != len(doc):
            uncovered.update(_uncovered(doc, pattern))
    return counts, uncovered, n_chars


def _uncovered(text: str, pattern: str) -> Counter[str]:
    """The characters of ``text`` that lie outside every match of ``pattern``, counted."""
    found: Counter[str] = Counter()
    end = 0
    for match in compile_pattern(pattern).finditer(text):
        found.update(text[end : match.start()])
        end = match.end()
    found.update(text[end:])
    return found


def _warn_uncovered(uncovered: Counter[str], total_chars: int) -> None:
    n = sum(uncovered.values())
    if not n:
        return
    shown = ", ".join(f"{char!r} x{count}" for char, count in uncovered.most_common(8))
    more = f" and {len(uncovered) - 8} more" if len(uncovered) > 8 else ""
    warnings.warn(
        f"the split pattern leaves {n} of {total_chars} characters of the training text outside every chunk "
        f"({shown}{more}): encoding drops such text, so decode(encode(text)) will not give it back. "
        "Add an alternative that matches the rest, e.g. end the pattern with '|\\s+|\\S'",
        stacklevel=4,
    )


# Control characters (Unicode's Cc) but those that are whitespace in text: \t \n \v \f \r and U+0085.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")
CONTROL_SHARE = 0.5
"""More than this share of control characters in the training text draws a warning."""


def warn_if_mostly_control(counts: Mapping[str | bytes, int], *, stacklevel: int = 3) -> None:
    """Warn when most characters of the counted text are control characters: a binary file read
    as text (a file of NUL bytes is valid UTF-8) trains merges of them without a word otherwise.
    The C counter's counts (native_counting.ChunkCounts) carry their tallies, made in C."""
    tallied = getattr(counts, "control", None)
    if tallied is not None:
        _warn_control(Counter(tallied), counts.characters, stacklevel + 1)
        return
    try:  # a chunk that prints whole holds no control character: one C-level pass finds the others
        suspects = [chunk for chunk in itertools.filterfalse(str.isprintable, counts) if _CONTROL.search(chunk)]
    except TypeError:  # bytes keys (keys of other types are the caller's error to report)
        counts = {chunk if isinstance(chunk, str) else bytes(chunk).decode("utf-8", "replace"): count
                  for chunk, count in counts.items() if isinstance(chunk, (str, bytes, bytearray))}
        suspects = [chunk for chunk in itertools.filterfalse(str.isprintable, counts) if _CONTROL.search(chunk)]
    found: Counter[str] = Counter()
    for chunk in suspects:
        for char in _CONTROL.findall(chunk):
            found[char] += counts[chunk]
    n = sum(found.values())
    if not n:
        return
    total = 0
    for chunk, count in counts.items():
        total += len(chunk) * count
        if total >= n / CONTROL_SHARE:  # (soon, in text with a few control characters)
            return
    _warn_control(found, total, stacklevel + 1)


def _warn_control(found: Counter[str], total: int, stacklevel: int) -> None:
    """The warning, when the control characters ``found`` (with their counts, in order of first
    appearance) are more than :data:`CONTROL_SHARE` of ``total`` characters."""
    n = sum(found.values())
    if not n or total >= n / CONTROL_SHARE:
        return
    shown = ", ".join(f"{char!r} x{times:,}" for char, times in found.most_common(3))
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    warnings.warn(
        f"{n:,} of the {total:,} characters of the training text ({n / total:.0%}) are control characters "
        f"({shown}{more}): is it a binary file rather than text? Training learns merges of them all the same",
        stacklevel=stacklevel,
    )
