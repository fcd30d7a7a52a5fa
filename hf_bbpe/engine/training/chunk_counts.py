"""Chunk counts (:class:`ChunkCounts`), the C counting kernel's handle, and the writing of a
counts file (its layout is counts_file.py's module doc; reading and checking one is there).

These are what counting (counting.py) and counts files (counts_file.py) share; both import this
module and it imports neither.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..chunking.patterns import scanner_name
from ..files.atomic_write import atomic_open, remove_stale_temps

try:  # imported by name, not "from .", so that remote-code copies of this file load without it
    _kernel = importlib.import_module("._chunk_count", __package__)
except ImportError:
    _kernel = None

logger = logging.getLogger("hf_bbpe")

MAGIC = b"HFBBPECC"
VERSION = 1
PREFIX = struct.Struct("<8sIIIIII")  # magic, version, header length, header CRC, the three sections' CRCs
_ALIGN = 64
SECTIONS = ("counts", "lengths", "symbols")
_READ_STEP = 1 << 24


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def layout(header_bytes: int, chunks: int, symbol_bytes: int) -> dict[str, int]:
    """The sections' offsets, and the file's size (``"end"``), for a header of ``header_bytes``."""
    counts = _aligned(PREFIX.size + header_bytes)
    lengths = _aligned(counts + 8 * chunks)
    symbols = _aligned(lengths + 4 * chunks)
    return {"counts": counts, "lengths": lengths, "symbols": symbols, "end": symbols + symbol_bytes}


def write_counts_file(
    path: str | os.PathLike,
    pattern: str | None,
    chunks: int,
    symbol_bytes: int,
    fill: Callable[[int, dict[str, int]], dict[str, Any]],
    **about: Any,
) -> None:
    """Write a counts file of ``chunks`` chunks and ``symbol_bytes`` bytes atomically:
    ``fill(fd, offsets)`` writes the three sections at their offsets into the open file ``fd``
    and returns header fields it knows only then (``characters``, ``control``); ``about`` gives
    the others (``documents``, ``input_bytes``, ...)."""
    fields = {"pattern": pattern, "pattern_name": scanner_name(pattern) if pattern else None, "chunks": chunks,
              "symbol_bytes": symbol_bytes, **about}
    # the header's length fixes the offsets: reserve room for the fields fill() gives (a control list)
    probe = _header_bytes({**fields, "offsets": layout(0, chunks, symbol_bytes), "characters": 2**63,
                           "control": [["\x00", 2**63]] * 66})
    offsets = layout(len(probe), chunks, symbol_bytes)
    # a killed write leaves a full-size (sparse) temp file beside ``path``: the next write removes it
    if removed := remove_stale_temps(path):
        logger.warning("%s: removed %d temporary file(s) of a killed earlier write", path, removed)
    with atomic_open(path, "wb") as handle:
        fd = handle.fileno()
        os.ftruncate(fd, offsets["end"])
        fields.update(fill(fd, offsets))
        header = _header_bytes({**fields, "offsets": offsets})
        if len(header) > len(probe):
            raise AssertionError("the counts file's header outgrew its room")
        header = header.ljust(len(probe), b" ")
        crcs = [file_crc(fd, offsets[name], offsets[following] - offsets[name] if name != "symbols" else symbol_bytes)
                for name, following in zip(SECTIONS, ("lengths", "symbols", "end"))]
        os.pwrite(fd, PREFIX.pack(MAGIC, VERSION, len(header), zlib.crc32(header), *crcs) + header, 0)


def _header_bytes(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def file_crc(fd: int, offset: int, size: int) -> int:
    """The CRC-32 of ``size`` bytes of ``fd`` from ``offset``, read in steps (not through a
    mapping, which would count the whole file in this process's memory)."""
    crc = 0
    end = offset + size
    while offset < end:
        block = os.pread(fd, min(_READ_STEP, end - offset), offset)
        if not block:
            break
        crc = zlib.crc32(block, crc)
        offset += len(block)
    return crc


def save_counts(counts: ChunkCounts, path: str | os.PathLike, pattern: str | None = None) -> None:
    """Write ``counts`` (in memory or mapped) to a counts file at ``path`` (atomically);
    ``pattern``: the split pattern they were counted with (default: theirs)."""
    symbols, lengths, values = counts.buffers()
    pattern = counts.pattern if pattern is None else pattern

    def fill(fd: int, offsets: dict[str, int]) -> dict[str, Any]:
        for name, buffer in zip(SECTIONS, (values, lengths, symbols)):
            view = memoryview(buffer).cast("B")
            for start in range(0, len(view), _READ_STEP):
                os.pwrite(fd, view[start:start + _READ_STEP], offsets[name] + start)
        return {"characters": counts.characters, "control": [[char, n] for char, n in counts.control.items()]}

    write_counts_file(path, pattern, len(counts), len(symbols), fill, documents=counts.documents,
                      input_bytes=counts.input_bytes)


def counting_kernel() -> Any:
    """The C counting kernel (``_chunk_count``), or None where it is not built (a remote-code copy)."""
    return _kernel


class ChunkCounts:
    """Distinct chunks with their counts, in order of first appearance, as three flat buffers:
    ``symbols`` (every chunk's UTF-8 bytes end to end, uint8), ``lengths`` (int32 per chunk) and
    ``counts`` (int64 per chunk): what the merge loop takes.

    ``len()`` is the number of distinct chunks; :meth:`items` and :meth:`to_dict` make Python
    objects per chunk (for ``extend``, tests, or a look). :meth:`save` writes them to a counts
    file (counts_file.py), which ``train_from_counts(path)`` maps back. ``pattern`` is the split
    pattern they were counted with (None: no split), ``source`` the counts file they were mapped
    from, if any; ``private``: the buffers are nobody else's (a private mapping of a file), so a
    merge loop may work in the symbols; ``spills``: how often counting within ``max_memory``
    wrote its tables to disk.
    """

    def __init__(self, symbols: Any, lengths: Any, counts: Any, *, documents: int = 0, input_bytes: int = 0,
                 characters: int = 0, control: list[tuple[str, int]] | None = None, pattern: str | None = None,
                 source: str | None = None) -> None:
        self.symbols = memoryview(symbols).cast("B")
        self.lengths = memoryview(lengths).cast("B").cast("i")
        self.counts = memoryview(counts).cast("B").cast("q")
        if len(self.lengths) != len(self.counts):
            raise ValueError("lengths and counts must have one item per chunk")
        self.documents = documents
        self.input_bytes = input_bytes
        self.characters = characters  # of the counted text, and its control characters with their counts
        self.control = dict(control or ())  # (for chunk_counting.warn_if_mostly_control)
        self.pattern = pattern
        self.source = source
        self.private = False
        self.spills = 0  # run files the counting wrote (max_memory)

    @classmethod
    def from_dict(cls, counts: Mapping[str, int], pattern: str | None = None) -> ChunkCounts:
        """``{chunk: count}`` (Python's counting) as flat buffers, in the mapping's order."""
        from array import array

        chunks = [chunk.encode("utf-8") for chunk in counts]
        return cls(bytearray().join(chunks), array("i", map(len, chunks)), array("q", counts.values()),
                   characters=sum(len(chunk) * n for chunk, n in counts.items()), pattern=pattern)

    def save(self, path: str | os.PathLike) -> None:
        """Write these counts to a counts file (see counts_file.py), atomically."""
        save_counts(self, path)

    def __len__(self) -> int:
        return len(self.lengths)

    def buffers(self, *, spend: bool = False) -> tuple[memoryview, memoryview, memoryview]:
        """``(symbols, lengths, counts)``; with ``spend``, for a merge loop that works in the
        symbols: this object can then give no chunk any more (ValueError)."""
        if self.symbols is None:
            raise ValueError("these counts were spent by a merge loop that worked in their symbols")
        buffers = (self.symbols, self.lengths, self.counts)
        if spend:
            self.symbols = None
        return buffers

    @property
    def nbytes(self) -> int:
        """The memory the three buffers hold."""
        return sum(buffer.nbytes for buffer in self.buffers())

    def items(self) -> Iterator[tuple[bytes, int]]:
        """``(chunk bytes, count)`` in order of first appearance."""
        symbols = self.buffers()[0]
        start = 0
        for length, count in zip(self.lengths, self.counts):
            yield symbols[start : start + length].tobytes(), count
            start += length

    def to_dict(self) -> dict[str, int]:
        """``{chunk: count}`` as chunk_counting.count_chunks gives it."""
        return {chunk.decode("utf-8"): count for chunk, count in self.items()}

    def __repr__(self) -> str:
        where = f" from {self.source}" if self.source else ""
        return f"ChunkCounts({len(self)} distinct chunks{where})"
