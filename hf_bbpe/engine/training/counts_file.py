"""Chunk counts in a file: counted once (``Tokenizer.count_chunks(out=...)``),
trained from again at other vocab sizes (``train_from_counts(path)``) without counting again.

The file holds the three flat buffers of :class:`~native_counting.ChunkCounts`, chunks in order of
first appearance, which the merge loop maps from the file as they are. Layout (little-endian),
version 1:

====================  ========================================================================
bytes 0-7             ``HFBBPECC`` (the magic)
bytes 8-11            the format version (uint32: 1)
bytes 12-15           the header's length ``H`` (uint32)
bytes 16-19           the header's CRC-32 (uint32, as ``zlib.crc32``)
bytes 20-31           the CRC-32 of the counts, lengths and symbols sections (uint32 each)
bytes 32 to 32 + H    the header: UTF-8 JSON with ``pattern`` (the split pattern the chunks were
                      counted with, a regex, or null for no split), ``pattern_name`` (its
                      canonical name, if it has one), ``chunks``, ``symbol_bytes``, the three
                      sections' ``offsets``, and ``documents``, ``input_bytes``, ``characters`` and
                      ``control`` (``[[character, count], ...]``: what training's
                      control-character warning reads)
then zeros, then      ``counts``: int64 per chunk; ``lengths``: int32 per chunk; ``symbols``: the
each at a multiple    chunks' UTF-8 bytes end to end. The file ends where the symbols end. The
of 64 bytes           padding between sections is zeros (after the header it is checked, after
                      the counts and the lengths their checksums cover it).
====================  ========================================================================

Files are written atomically (atomic_write.py): a reader sees the old file or the whole new one.
Reading checks everything and refuses, naming the file, one that is not a counts file, is of a
newer version, is cut short or longer than its header says, fails a checksum or has other bytes
than zeros after its header; and, naming the record, one that holds what no counting makes: a
chunk of no bytes, a negative count, a chunk that is not UTF-8 on its own, lengths that do not add
up to the symbols (a checksum is no proof: anyone can compute one). Training refuses counts made
with another split pattern.
"""

from __future__ import annotations

import json
import mmap
import os
import zlib
from typing import Any

from ..chunking.patterns import scanner_name
from .chunk_counts import MAGIC, PREFIX, SECTIONS, VERSION, ChunkCounts, counting_kernel, file_crc, layout, \
    save_counts, write_counts_file

__all__ = ["MAGIC", "VERSION", "check_pattern", "first_bad_record", "is_counts_file", "layout", "load_counts",
           "save_counts", "write_counts_file"]



def is_counts_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file that starts as a counts file does (its magic)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def load_counts(path: str | os.PathLike) -> ChunkCounts:
    """The counts of a counts file, mapped from it (private: the merge loop may work in the
    symbols; the file is never written). Everything is checked first (see the module doc)."""
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY)
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such counts file") from None
    try:
        header = _checked_header(fd, name)
        offsets = header["offsets"]
        for section, following in zip(SECTIONS, ("lengths", "symbols", "end")):
            size = offsets[following] - offsets[section] if section != "symbols" else header["symbol_bytes"]
            if file_crc(fd, offsets[section], size) != header["crc"][section]:
                raise ValueError(f"{name}: corrupt counts file (its {section} fail their checksum)")
        _check_padding(fd, name, PREFIX.size + header["header_bytes"], offsets["counts"])
        size = offsets["end"]
        mapped = mmap.mmap(fd, size, access=mmap.ACCESS_COPY) if size else bytearray()
    finally:
        os.close(fd)
    view = memoryview(mapped)
    chunks = header["chunks"]
    counts = ChunkCounts(
        view[offsets["symbols"]:offsets["end"]],
        view[offsets["lengths"]:offsets["lengths"] + 4 * chunks],
        view[offsets["counts"]:offsets["counts"] + 8 * chunks],
        documents=header.get("documents", 0), input_bytes=header.get("input_bytes", 0),
        characters=header.get("characters", 0), control=[tuple(pair) for pair in header.get("control", ())],
        pattern=header["pattern"], source=name,
    )
    counts.private = True
    _check_records(counts, name)
    return counts


_PROBLEMS = {
    "empty": "its chunk is empty",
    "negative length": "its chunk's length is negative",
    "past the symbols": "the lengths do not add up to the symbols (this one runs past them)",
    "short": "the lengths do not add up to the symbols (they end before them)",
    "negative count": "its count is negative",
    "not UTF-8": "its chunk is not UTF-8 text",
}


def _check_records(counts: ChunkCounts, name: str) -> None:
    """Refuse counts that no counting makes (see the module doc), naming the first such record."""
    symbols, lengths, values = counts.buffers()
    kernel = counting_kernel()
    bad = (kernel.first_bad_record if kernel is not None else first_bad_record)(symbols, lengths, values)
    if bad is None:
        return
    record, what = bad
    detail = _PROBLEMS[what]
    if what == "negative count":
        detail += f" ({values[record]:,})"
    elif what == "not UTF-8":
        start = sum(lengths[:record])
        detail += f" ({symbols[start:start + min(lengths[record], 16)].tobytes()!r})"
    where = f"record {record:,} of {len(lengths):,}, from 0" if record < len(lengths) else f"{len(lengths):,} records"
    raise ValueError(f"{name}: corrupt counts file ({where}: {detail}); count again")


def first_bad_record(symbols: Any, lengths: Any, counts: Any) -> tuple[int, str] | None:
    """The first record that no counting makes, as ``(record, what)`` (a key of ``_PROBLEMS``), or
    None: the readable twin of the C kernel's ``first_bad_record``, for when it is not built."""
    symbols, lengths, counts = bytes(symbols), memoryview(lengths).cast("B").cast("i"), \
        memoryview(counts).cast("B").cast("q")
    at = 0
    for record, (length, count) in enumerate(zip(lengths, counts)):
        if length <= 0:
            return record, "empty" if length == 0 else "negative length"
        if length > len(symbols) - at:
            return record, "past the symbols"
        if count < 0:
            return record, "negative count"
        try:
            symbols[at:at + length].decode("utf-8")
        except UnicodeDecodeError:
            return record, "not UTF-8"
        at += length
    return None if at == len(symbols) else (len(lengths), "short")


def _check_padding(fd: int, name: str, start: int, end: int) -> None:
    """Refuse a file with other bytes than zeros in ``[start, end)``: the padding after the header,
    which no checksum covers."""
    padding = os.pread(fd, end - start, start)
    if padding.count(0) != len(padding):
        at = start + next(k for k, byte in enumerate(padding) if byte)
        raise ValueError(f"{name}: corrupt counts file (byte {at:,}, in the padding after its header, is not zero)")


def _checked_header(fd: int, name: str) -> dict[str, Any]:
    prefix = os.pread(fd, PREFIX.size, 0)
    if len(prefix) < len(MAGIC) or not prefix.startswith(MAGIC):
        raise ValueError(f"{name}: not a chunk counts file (Tokenizer.count_chunks(out=...) and hf-bbpe count "
                         "write them)")
    if len(prefix) < PREFIX.size:
        raise ValueError(f"{name}: cut short: it holds {len(prefix)} bytes, not even its header; write it again")
    _, version, length, header_crc, *crcs = PREFIX.unpack(prefix)
    if version != VERSION:
        raise ValueError(f"{name}: a counts file of version {version}; this hf_bbpe reads version {VERSION} "
                         "(count again, or upgrade hf_bbpe)")
    raw = os.pread(fd, length, PREFIX.size)
    if len(raw) < length or zlib.crc32(raw) != header_crc:
        raise ValueError(f"{name}: corrupt counts file (its header is cut short or fails its checksum)")
    try:
        header = json.loads(raw)
        chunks, symbol_bytes, offsets = header["chunks"], header["symbol_bytes"], header["offsets"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{name}: corrupt counts file (its header: {exc})") from None
    expected = layout(length, chunks, symbol_bytes)
    if {key: offsets.get(key) for key in expected} != expected:
        raise ValueError(f"{name}: corrupt counts file (its sections are not where its header says)")
    size = os.fstat(fd).st_size
    if size != expected["end"]:
        what = "cut short" if size < expected["end"] else "longer than its header says"
        raise ValueError(f"{name}: {what}: it holds {size:,} bytes, its header says {expected['end']:,} "
                         f"({chunks:,} chunks); write it again")
    header["crc"] = dict(zip(SECTIONS, crcs))
    header["header_bytes"] = length
    return header


def check_pattern(counts: ChunkCounts, pattern: str | None) -> None:
    """Refuse counts made with another split pattern than ``pattern`` (a tokenizer's), naming
    the file they came from."""
    made = counts.pattern
    same = made == pattern or (scanner_name(made) is not None and scanner_name(made) == scanner_name(pattern))
    if not same:
        raise ValueError(f"{counts.source}: these chunk counts were made with {_described(made)}, but this tokenizer "
                         f"splits with {_described(pattern)}: train a tokenizer of their pattern on them, or count again")


def _described(pattern: str | None) -> str:
    if pattern is None:
        return "no split pattern (each document one chunk)"
    name = scanner_name(pattern)
    return f"the split pattern {name!r}" if name else f"the split pattern {pattern!r}"
