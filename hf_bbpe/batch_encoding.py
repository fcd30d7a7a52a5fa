"""``encode_batch``: many texts through several processes, results in input order."""

from __future__ import annotations

import itertools
import multiprocessing
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

_PARALLEL_MIN_CHARS = 1 << 20  # below this, process start-up costs more than it saves
_TASK_CHARS = 1 << 19  # characters of text per task sent to a worker
_worker_tokenizer = None
_worker_options: dict = {}
_worker_texts: list[str] = []


def encode_batch(tokenizer: Tokenizer, texts: Sequence[str], *, num_workers: int, **options) -> list[list[int]]:
    """Encode ``texts`` with ``tokenizer.encode(text, **options)``, in parallel when it pays.

    Workers inherit the tokenizer and the texts through fork (a task is only a range of
    indices, so no text is pickled) and send back each task's ids as one flat int32 array plus
    lengths, which costs far less to pass between processes than lists of ints.
    """
    texts = list(texts)
    total = sum(map(len, texts))
    if multiprocessing.current_process().daemon:  # a Pool or DataLoader worker may not fork
        num_workers = 1
    if num_workers <= 1 or len(texts) < 2 or total < _PARALLEL_MIN_CHARS or "fork" not in multiprocessing.get_all_start_methods():
        return [tokenizer.encode(text, **options) for text in texts]
    global _worker_tokenizer, _worker_options, _worker_texts
    _worker_tokenizer, _worker_options, _worker_texts = tokenizer, options, texts
    try:
        with multiprocessing.get_context("fork").Pool(num_workers) as pool:
            results: list[list[int]] = []
            for flat, lengths in pool.imap(_encode_task, _task_ranges(texts)):
                ids = flat.tolist()
                ends = itertools.accumulate(lengths)
                start = 0
                for end in ends:
                    results.append(ids[start:end])
                    start = end
            return results
    finally:
        _worker_tokenizer, _worker_options, _worker_texts = None, {}, []


def _task_ranges(texts: list[str]):
    """``(start, stop)`` index ranges of about ``_TASK_CHARS`` characters each."""
    start = size = 0
    for i, text in enumerate(texts):
        size += len(text)
        if size >= _TASK_CHARS:
            yield start, i + 1
            start, size = i + 1, 0
    if start < len(texts):
        yield start, len(texts)


def _encode_task(span: tuple[int, int]) -> tuple[array, array]:
    flat = array("i")
    lengths = array("i")
    for text in _worker_texts[span[0] : span[1]]:
        ids = _worker_tokenizer.encode(text, **_worker_options)
        flat.extend(ids)
        lengths.append(len(ids))
    return flat, lengths
