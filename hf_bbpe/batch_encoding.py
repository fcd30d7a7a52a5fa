"""``encode_batch``: many texts through several processes, results in input order."""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

_PARALLEL_MIN_CHARS = 1 << 20  # below this, process start-up costs more than it saves
_worker_tokenizer = None
_worker_options: dict = {}


def encode_batch(tokenizer: Tokenizer, texts: Sequence[str], *, num_workers: int, **options) -> list[list[int]]:
    """Encode ``texts`` with ``tokenizer.encode(text, **options)``, in parallel when it pays."""
    texts = list(texts)
    total = sum(map(len, texts))
    if num_workers <= 1 or len(texts) < 2 or total < _PARALLEL_MIN_CHARS or "fork" not in multiprocessing.get_all_start_methods():
        return [tokenizer.encode(text, **options) for text in texts]
    # Workers inherit the tokenizer through fork instead of unpickling it per task.
    global _worker_tokenizer, _worker_options
    _worker_tokenizer, _worker_options = tokenizer, options
    try:
        per_task = max(1, len(texts) // (num_workers * 8))
        with multiprocessing.get_context("fork").Pool(num_workers) as pool:
            return pool.map(_encode_one, texts, chunksize=per_task)
    finally:
        _worker_tokenizer, _worker_options = None, {}


def _encode_one(text: str) -> list[int]:
    return _worker_tokenizer.encode(text, **_worker_options)
