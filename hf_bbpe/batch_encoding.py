"""``encode_batch``: many texts through several processes, results in input order."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .worker_pool import forked_pool, shared, usable_workers

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

_PARALLEL_MIN_CHARS = 1 << 20  # below this, process start-up costs more than it saves
_TASK_CHARS = 1 << 19  # characters of text per task sent to a worker


def encode_batch(tokenizer: Tokenizer, texts: Sequence[str], *, num_workers: int, **options) -> list[list[int]]:
    """Encode ``texts`` with ``tokenizer.encode(text, **options)``, in parallel when it pays.

    Workers inherit the tokenizer and the texts through fork (a task is only a range of
    indices, so no text is pickled) and send back each task's ids as one flat int32 array plus
    lengths, which costs far less to pass between processes than lists of ints.
    """
    texts = list(texts)
    worth_it = len(texts) >= 2 and sum(map(len, texts)) >= _PARALLEL_MIN_CHARS
    num_workers = usable_workers(num_workers) if worth_it and num_workers > 1 else 1
    if num_workers == 1:
        return [tokenizer.encode(text, **options) for text in texts]
    with forked_pool(num_workers, tokenizer=tokenizer, options=options, texts=texts) as pool:
        results: list[list[int]] = []
        for flat, lengths in pool.imap(_encode_task, _task_ranges(texts)):
            ids = flat.tolist()
            start = 0
            for end in itertools.accumulate(lengths):
                results.append(ids[start:end])
                start = end
        return results


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
    tokenizer, options = shared("tokenizer"), shared("options")
    flat = array("i")
    lengths = array("i")
    for text in shared("texts")[span[0] : span[1]]:
        ids = tokenizer.encode(text, **options)
        flat.extend(ids)
        lengths.append(len(ids))
    return flat, lengths
