"""Worker processes for the engine's parallel jobs (chunk counting, ``encode_batch``).

Workers are forked, so they inherit what the parent holds (a tokenizer, the texts, one long
string) instead of receiving it pickled: the parent passes it to :func:`forked_pool`, and a
task reads it back with :func:`shared`. Where fork does not exist (Windows), or in a daemonic
process (a Pool or DataLoader worker, which may not have children), :func:`usable_workers`
says 1 and the caller does the work in this process.

``multiprocessing`` is imported on first use, so that ``import hf_bbpe`` does not load it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

_shared: dict[str, Any] = {}  # what forked workers inherit; set only while a pool is open


def available_cpus() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def usable_workers(requested: int | None) -> int:
    """How many worker processes to use: ``requested`` (default: the CPUs available), or 1 when
    this process cannot fork children."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods() or multiprocessing.current_process().daemon:
        return 1
    return max(1, requested or available_cpus())


@contextlib.contextmanager
def forked_pool(num_workers: int, **inherited: Any) -> Iterator[Any]:
    """A ``multiprocessing.Pool`` of forked workers that see ``inherited`` through :func:`shared`.

    Call it only when :func:`usable_workers` allowed more than one worker.
    """
    import multiprocessing

    global _shared
    _shared = inherited
    try:
        with multiprocessing.get_context("fork").Pool(num_workers) as pool:
            yield pool
    finally:
        _shared = {}


def shared(name: str) -> Any:
    """In a worker of :func:`forked_pool`: the value the parent passed as ``name``."""
    return _shared[name]
