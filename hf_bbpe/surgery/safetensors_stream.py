"""Read rows of one tensor of a safetensors file, and rewrite a file with some tensors grown.

The safetensors format is an 8-byte little-endian header length, a JSON header
``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}`` padded with
spaces, then the data. The ``safetensors`` package only writes whole dicts of tensors held in
memory; here untouched tensors are copied as raw bytes through a fixed buffer and grown tensors
are streamed row-chunk by row-chunk, so rewriting a shard costs a few chunks of memory however big
the shard or the embedding.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import torch

from ..engine.files.atomic_write import atomic_open
from .row_init import chunk_rows

COPY_BUFFER_BYTES = 4 << 20

# Element sizes of the dtypes safetensors knows; sub-byte types are copied but never grown.
DTYPE_SIZES = {
    "F64": 8, "I64": 8, "U64": 8, "C64": 8,
    "F32": 4, "I32": 4, "U32": 4,
    "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
    "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1,
}  # fmt: skip

# Dtypes a grown (embedding-like) tensor may have.
FLOAT_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    **{name: getattr(torch, attr) for name, attr in (("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"))},
}


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    begin: int  # offset in the data section
    end: int


@dataclass(frozen=True)
class SafetensorsHeader:
    path: Path
    tensors: dict[str, TensorInfo]
    metadata: dict[str, str] | None
    data_start: int  # file offset of the data section


def read_header(path: str | os.PathLike) -> SafetensorsHeader:
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: not a safetensors file (shorter than 8 bytes)")
        (length,) = struct.unpack("<Q", raw)
        if length > 100 << 20:
            raise ValueError(f"{path}: not a safetensors file (header length {length})")
        try:
            header = json.loads(f.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: unreadable safetensors header: {exc}") from None
    metadata = header.pop("__metadata__", None)
    tensors = {
        name: TensorInfo(entry["dtype"], tuple(entry["shape"]), *entry["data_offsets"])
        for name, entry in header.items()
    }
    return SafetensorsHeader(path, tensors, metadata, 8 + length)


def torch_dtype(header: SafetensorsHeader, name: str) -> torch.dtype:
    """The torch dtype of a tensor that may be grown; ValueError naming it otherwise."""
    info = header.tensors[name]
    if info.dtype not in FLOAT_DTYPES:
        raise ValueError(
            f"tensor {name!r} in {header.path.name} has dtype {info.dtype}; only floating point "
            f"{sorted(FLOAT_DTYPES)} embeddings can be grown"
        )
    return FLOAT_DTYPES[info.dtype]


def _row_bytes(info: TensorInfo) -> int:
    return math.prod(info.shape[1:]) * DTYPE_SIZES[info.dtype]


class RowReader:
    """``reader(start, stop)`` -> rows [start, stop) of one tensor as a CPU tensor, read from disk."""

    def __init__(self, header: SafetensorsHeader, name: str) -> None:
        self.info = header.tensors[name]
        self.dtype = torch_dtype(header, name)
        self.width = math.prod(self.info.shape[1:])
        self.row_bytes = _row_bytes(self.info)
        self.offset = header.data_start + self.info.begin
        self._file = open(header.path, "rb")

    def __call__(self, start: int, stop: int) -> torch.Tensor:
        buf = bytearray((stop - start) * self.row_bytes)
        self._file.seek(self.offset + start * self.row_bytes)
        if self._file.readinto(buf) != len(buf):
            raise ValueError(f"{self._file.name}: truncated tensor data")
        return torch.frombuffer(buf, dtype=self.dtype).reshape(stop - start, self.width)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RowReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Growth:
    """Grow a tensor to ``new_rows``: ``rows[i]`` gets ``values[i]`` (rows sorted; every row >= the old
    count must be listed, rows below it are overwritten)."""

    new_rows: int
    rows: tuple[int, ...]
    values: torch.Tensor  # [len(rows), width] in the tensor's dtype


def _copy_range(src: BinaryIO, dst: BinaryIO, offset: int, length: int, buf: memoryview) -> None:
    src.seek(offset)
    while length:
        n = src.readinto(buf[: min(length, len(buf))])
        if not n:
            raise ValueError(f"{src.name}: truncated tensor data")
        dst.write(buf[:n])
        length -= n


def _as_bytes(values: torch.Tensor) -> memoryview:
    return memoryview(values.contiguous().reshape(-1).view(torch.uint8).numpy())


def _write_grown(src: BinaryIO, dst: BinaryIO, header: SafetensorsHeader, name: str, growth: Growth) -> None:
    info = header.tensors[name]
    old_rows, row_bytes = info.shape[0], _row_bytes(info)
    patches = {row: i for i, row in enumerate(growth.rows) if row < old_rows}
    appended = [i for i, row in enumerate(growth.rows) if row >= old_rows]
    if [growth.rows[i] for i in appended] != list(range(old_rows, growth.new_rows)):
        raise ValueError(f"{name}: rows {old_rows}..{growth.new_rows - 1} must all get values")
    step = chunk_rows(max(1, row_bytes))
    src.seek(header.data_start + info.begin)
    for start in range(0, old_rows, step):
        stop = min(old_rows, start + step)
        chunk = bytearray((stop - start) * row_bytes)
        if src.readinto(chunk) != len(chunk):
            raise ValueError(f"{src.name}: truncated data of {name!r}")
        for row, i in patches.items():
            if start <= row < stop:
                chunk[(row - start) * row_bytes : (row - start + 1) * row_bytes] = _as_bytes(growth.values[i])
        dst.write(chunk)
    if appended:
        dst.write(_as_bytes(growth.values[appended[0] :]))


def rewrite_with_growth(header: SafetensorsHeader, dst: str | os.PathLike, growths: Mapping[str, Growth]) -> int:
    """Write ``header.path`` to ``dst`` with the named tensors grown; returns the bytes added.

    Tensors are laid out like safetensors does (larger element size first, then by name), so every
    tensor stays aligned to its element size.
    """
    entries: dict[str, dict] = {}
    sizes: dict[str, int] = {}
    for name, info in header.tensors.items():
        if name in growths:
            shape = (growths[name].new_rows, *info.shape[1:])
            sizes[name] = math.prod(shape) * DTYPE_SIZES[info.dtype]
        else:
            shape, sizes[name] = info.shape, info.end - info.begin
        entries[name] = {"dtype": info.dtype, "shape": list(shape)}
    offset = 0
    order = sorted(entries, key=lambda n: (-DTYPE_SIZES.get(entries[n]["dtype"], 1), n))
    for name in order:
        entries[name]["data_offsets"] = [offset, offset + sizes[name]]
        offset += sizes[name]
    head = {"__metadata__": header.metadata} if header.metadata is not None else {}
    raw = json.dumps({**head, **{n: entries[n] for n in order}}, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)

    buf = memoryview(bytearray(COPY_BUFFER_BYTES))
    with open(header.path, "rb") as src, atomic_open(dst, "wb") as out:
        out.write(struct.pack("<Q", len(raw)))
        out.write(raw)
        for name in order:
            if name in growths:
                _write_grown(src, out, header, name, growths[name])
            else:
                info = header.tensors[name]
                _copy_range(src, out, header.data_start + info.begin, info.end - info.begin, buf)
    return sum(sizes.values()) - sum(i.end - i.begin for i in header.tensors.values())
