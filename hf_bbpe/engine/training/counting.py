"""Counting chunks with the C kernel ``csrc/count/``: the fast path of training's first step.

For a split pattern that a C scanner knows (GPT-2, GPT-4, o200k, Llama 3, Qwen2, Tekken, SuperBPE's
two and their other spellings, see patterns.py; SuperBPE's stage 2 as an isolated Split) and no
normalizer or other pipeline, the kernel splits and counts on
threads without the GIL and gives every distinct chunk, in order of first appearance, as three
flat buffers (:class:`ChunkCounts`) that the merge loop takes as they are: no Python object per
chunk from counting to the last merge. Inputs:

* files (text cut into lines, paragraphs or whole files, ``.jsonl``, ``.parquet``; see
  text_files.py), read in blocks by the threads (a parquet column through pyarrow, as Arrow
  buffers);
* a ``datasets.Dataset``: its Arrow column, without a str per row;
* a str, or any iterable of str: in batches of about 8 MB.

Everything else, and any process without the kernel (the copy of this code that a saved folder
carries), takes engine/training/counting_reference.py, the readable twin; both give the same counts in the same order.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import tempfile
from typing import Any

from ..chunking.patterns import native_scanner
from ..progress import progress_bar
from ..worker_pool import available_cpus
from .chunk_counts import ChunkCounts, counting_kernel
from .counting_reference import document_batches
from .counts_file import load_counts, write_counts_file
from .text_files import DOC_MODES, JSONL, PARQUET, check_doc_mode, file_kind, iter_file_documents, parquet_text_arrays

_kernel = counting_kernel()  # (tests set it to None: a saved folder's copy, no compiled module)

_BATCH_CHARS = 1 << 23  # characters of an iterable's documents counted in one call


def available(pattern: str | None, *, isolated: bool = False) -> bool:
    """Whether the C kernel counts the chunks of ``pattern`` here (``isolated``: of
    ``Split(pattern, "isolated")``, see ``patterns.native_scanner``)."""
    return _kernel is not None and native_scanner(pattern, isolated=isolated) is not None


def count_native(
    source: Any,
    pattern: str,
    *,
    files: list[str] | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    text_column: str = "text",
    docs: str = "line",
    max_memory: int | str | None = None,
    out: str | os.PathLike | None = None,
    spill_dir: str | os.PathLike | None = None,
    isolated: bool = False,
) -> ChunkCounts:
    """Count the chunks of ``files`` (checked paths; text files cut into documents by ``docs``,
    see text_files.py) or of ``source`` (a str, an iterable of str, or a ``datasets.Dataset``)
    with the C kernel: the matches of ``pattern``, or with ``isolated`` the pieces of
    ``Split(pattern, "isolated")`` (SuperBPE's stage 2). Call only when :func:`available` says so.

    ``max_memory`` (bytes, or a size such as ``"4G"``; see :func:`memory_size`) bounds the
    counting's memory: the tables spill to a folder in ``spill_dir`` (default: the system's
    temporary folder, see :func:`spill_folder`) in hash partitions that are merged at the end,
    exactly, in order of first appearance, into a counts file that is then mapped (not read into
    memory). ``out``: write the counts to this counts file too (see counts_file.py)."""
    check_doc_mode(docs)
    threads = max(1, num_threads or available_cpus())
    counter = _kernel.Counter(native_scanner(pattern, isolated=isolated), threads)
    total = sum(os.path.getsize(path) for path in files) if files is not None else None
    spill, block = None, 0
    if max_memory is not None:
        limit, table_limit, block = _spill_limits(memory_size(max_memory), threads)
        spill = spill_folder(spill_dir)
        counter.spill_to(spill, limit, table_limit)
    bar = progress_bar(desc="counting chunks", total=total, unit="MB", enabled=progress, scale=1 / 1e6)
    try:
        try:
            if files is not None:
                _count_files(counter, files, text_column, docs, bar, block)
            elif is_arrow_dataset(source):
                _count_dataset(counter, source, text_column, bar)
            else:
                for batch in document_batches(source, _BATCH_CHARS):
                    bar.update(counter.count_texts(batch))
        finally:
            bar.close()
        if counter.spilled:
            counts = _merged_spills(counter, pattern, out if out is not None else os.path.join(spill, "counts.bin"))
            counts.spills = counter.spilled
            return counts
        counts = collected(counter, pattern)
        if out is not None:
            counts.save(out)
        return counts
    finally:
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)  # (a mapped counts file in it stays readable)


SPILL_PREFIX = "hf_bbpe-spill-"
_SPILL_NAME = re.compile(rf"{re.escape(SPILL_PREFIX)}(\d+)-(\d+|x)-[A-Za-z0-9_]+")
logger = logging.getLogger("hf_bbpe")


def spill_folder(spill_dir: str | os.PathLike | None = None) -> str:
    """A new folder in ``spill_dir`` (default: the system's temporary folder) for a counting run's
    spill, named after this process: ``hf_bbpe-spill-<pid>-<start time>-<random>`` (the start
    time tells this process from a later one given the same pid). The run removes it when it
    ends; one that was killed cannot, so the spill folders of processes that are gone are
    removed first (:func:`remove_dead_spills`)."""
    folder = os.fspath(spill_dir) if spill_dir is not None else tempfile.gettempdir()
    remove_dead_spills(folder)
    return tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{_process_tag(os.getpid())}-", dir=folder)


def remove_dead_spills(folder: str | os.PathLike) -> list[str]:
    """Remove the spill folders in ``folder`` of counting runs whose process is gone (killed, or
    lost with its machine), saying so in one line (a warning on the ``hf_bbpe`` logger); returns
    their paths. Folders of running processes, and of other users' processes, are left alone."""
    removed, freed = [], 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _SPILL_NAME.fullmatch(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False) or _running(int(match[1]), match[2]):
            continue
        size = _folder_bytes(entry.path)
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(entry.path)
            freed += size
    if removed:
        logger.warning(f"hf_bbpe: removed {len(removed)} spill folder(s) of counting runs that were killed "
                       f"({freed / 1e6:.1f} MB) in {folder}: {', '.join(os.path.basename(p) for p in removed)}")
    return removed


def _process_tag(pid: int) -> str:
    """``<pid>-<start time>`` (``x`` for the time where the system does not say it)."""
    return f"{pid}-{_start_time(pid) or 'x'}"


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks after boot, from ``/proc``), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
        return stat.rsplit(")", 1)[1].split()[19]  # (field 22; the name before ")" may hold spaces)
    except (OSError, IndexError):
        return None


def _running(pid: int, start: str) -> bool:
    """Whether the process that made a spill folder (``pid`` and its start time) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    now = _start_time(pid)
    return start == "x" or now is None or now == start


def _folder_bytes(path: str) -> int:
    """The bytes the files in a folder take on disk (spill files may be sparse)."""
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                stat = os.lstat(os.path.join(root, name))
                total += stat.st_blocks * 512 if hasattr(stat, "st_blocks") else stat.st_size
            except OSError:
                pass
    return total


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*", re.IGNORECASE)


def memory_size(value: int | str) -> int:
    """Bytes from an int or a size such as ``"512M"``, ``"4G"``, ``"1.5GB"``, ``"8GiB"`` (powers of
    1024 either way); ValueError for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        match = _SIZE.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise ValueError(f"a memory size is bytes or a number with K, M, G or T (e.g. '4G'), got {value!r}")
        size = int(float(match[1]) * 1024 ** " kmgt".index(match[2].lower() or " "))
    if size <= 0:
        raise ValueError(f"a memory size must be positive, got {value!r}")
    return size


_MIN_TABLE = 8 << 20  # the least a thread's table may hold between spills


def _spill_limits(budget: int, threads: int) -> tuple[int, int, int]:
    """``(limit of all the tables, limit of a thread's table, bytes of a file unit)`` within
    ``budget``: each thread also holds a file unit (with its last document read on), its front
    cache and a run file's buffers while it spills (about 2 x unit + 5 MB)."""
    block = min(16 << 20, max(1 << 20, budget // (32 * threads)))
    tables = budget - threads * (2 * block + (5 << 20))
    if tables < threads * _MIN_TABLE:
        least = threads * (_MIN_TABLE + 2 * (1 << 20) + (5 << 20))
        raise ValueError(f"max_memory={budget:,} bytes is too little to count on {threads} thread(s): give at least "
                         f"{least / 2**20:.0f} MB (or fewer num_workers)")
    return tables, tables // threads, block


def _merged_spills(counter: Any, pattern: str, path: str | os.PathLike) -> ChunkCounts:
    """Spilled counts merged into a counts file at ``path`` (then mapped from it)."""
    chunks, symbol_bytes = counter.merge_spills()

    def fill(fd: int, offsets: dict[str, int]) -> dict[str, Any]:
        characters, control = counter.write_spilled(fd, offsets["counts"], offsets["lengths"], offsets["symbols"])
        return {"characters": characters, "control": [[char, n] for char, n in control]}

    write_counts_file(path, pattern, chunks, symbol_bytes, fill, documents=counter.documents,
                      input_bytes=counter.bytes)
    return load_counts(path)


def collected(counter: Any, pattern: str | None = None) -> ChunkCounts:
    """The counts of a ``_chunk_count.Counter`` (its memory given back)."""
    symbols, lengths, counts, characters, control = counter.result()
    return ChunkCounts(symbols, lengths, counts, documents=counter.documents, input_bytes=counter.bytes,
                       characters=characters, control=control, pattern=pattern)


def _file_format(path: str, docs: str) -> int:
    """How the kernel reads ``path`` (``count_files``' formats: text lines, .jsonl, paragraphs, whole)."""
    return 1 if file_kind(path) == JSONL else (0, 2, 3)[DOC_MODES.index(docs)]


def _count_files(counter: Any, paths: list[str], text_column: str, docs: str, bar: Any, block: int = 0) -> None:
    """Runs of text and .jsonl files in one call each (their blocks on the threads); parquet
    files column batch by column batch. The kernel numbers its work across calls, in order. The
    bar moves by file bytes (a parquet file's by the share of its rows counted)."""
    field = text_column.encode("utf-8")
    run: list[str] = []
    done = 0  # bytes of the files before the current call
    shown = 0  # where the bar is

    def move_to(at: int) -> None:
        nonlocal shown
        bar.update(at - shown)
        shown = at

    def flush() -> None:
        nonlocal done
        if run:
            start = done
            counter.count_files(run, [_file_format(path, docs) for path in run], field, block,
                                lambda n: move_to(start + n))
            done = start + sum(os.path.getsize(path) for path in run)
            move_to(done)
            run.clear()

    for path in paths:
        if file_kind(path) != PARQUET and not _kernel.READS_FILES:  # (no POSIX threads: read here)
            for batch in document_batches(iter_file_documents([path], text_column, docs), _BATCH_CHARS):
                counter.count_texts(batch)
            done += os.path.getsize(path)
            move_to(done)
            continue
        if file_kind(path) != PARQUET:
            run.append(path)
            continue
        flush()
        size = os.path.getsize(path)
        rows, arrays = parquet_text_arrays(path, text_column)
        for row, array in arrays:
            _count_array(counter, array, row, path)
            move_to(done + size * (row + len(array)) // max(1, rows))
        done += size
        move_to(done)
    flush()


def _count_array(counter: Any, array: Any, row: int, source: str) -> int:
    """Count one Arrow string array (a chunk of a column); its first row is ``row`` of ``source``."""
    import pyarrow as pa

    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        array = array.cast(pa.large_string())
    validity, offsets, data = array.buffers()[:3]
    wide = pa.types.is_large_string(array.type)
    width = 8 if wide else 4
    offsets = memoryview(offsets)[array.offset * width : (array.offset + len(array) + 1) * width]
    data = memoryview(data) if data is not None else b""
    return counter.count_column(offsets, wide, data, validity if array.null_count else None, array.offset,
                                len(array), row, source)


def is_arrow_dataset(source: Any) -> bool:
    """Whether ``source`` is a ``datasets.Dataset`` (Arrow-backed, not streaming)."""
    datasets = sys.modules.get("datasets")
    return datasets is not None and isinstance(source, datasets.Dataset)


def _count_dataset(counter: Any, dataset: Any, text_column: str, bar: Any) -> None:
    """A ``datasets.Dataset``'s column as Arrow arrays (its indices, if any, respected)."""
    import pyarrow as pa

    columns = dataset.column_names
    if text_column not in columns:
        raise ValueError(f"the dataset has no column {text_column!r} (its columns: {', '.join(columns)}); "
                         "pass text_column=")
    kind = dataset.features[text_column]
    row = 0
    for table in dataset.select_columns([text_column]).with_format("arrow").iter(batch_size=1 << 16):
        column = table.column(0)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            raise TypeError(f"training documents must be str: column {text_column!r} holds {kind}")
        for array in column.chunks:
            bar.update(_count_array(counter, array, row, "the dataset"))
            row += len(array)
