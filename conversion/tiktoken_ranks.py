"""tiktoken rank files (``<base64 token> <rank>`` per line) and ``tiktoken.Encoding`` objects.

Reading recovers the merge pairs from the ranks (see merge_recovery.py); ids are the ranks, so
cl100k's permuted single-byte ranks, holes in the id space and special tokens above the ranks
all come out as tiktoken has them. Writing lists every non-special token by id, so a file read
and written again is byte-identical to the original.

Writing checks that the ranks mean the same thing as the merges (see representability.py):
tiktoken merges any two adjacent pieces whose bytes form a token, by that token's rank, while
our merges are pairs of ids.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hf_bbpe.atomic_write import write_bytes_atomic
from hf_bbpe.tokenizer import Tokenizer

from .assembly import assemble_tokenizer
from .errors import FormatError
from .merge_recovery import recover_merges, recover_merges_from_arrays
from .reading import read_bytes
from .representability import RepresentabilityError, check_rank_representable

if sys.version_info >= (3, 11):
    _b64decode = functools.partial(binascii.a2b_base64, strict_mode=True)
else:  # pragma: no cover - strict_mode is new in 3.11
    _b64decode = functools.partial(base64.b64decode, validate=True)


def read_tiktoken_file(path: str | os.PathLike) -> tuple[list[bytes], list[int]]:
    """The tokens and ranks of a rank file, in file order; any defect raises FormatError.

    Accepts what tiktoken's ``load_tiktoken_bpe`` accepts (blank lines, any whitespace between
    the two fields) but, unlike it, rejects invalid base64 and duplicate tokens or ranks.
    """
    path = Path(path)
    data = read_bytes(path)
    lines = data.splitlines()
    tokens, ranks = _read_lines_slowly(path, lines)
    if len(set(tokens)) != len(tokens) or len(set(ranks)) != len(ranks):
        _raise_duplicate(path, lines)
    if not tokens:
        raise FormatError(f"{path}: no ranks in the file")
    return tokens, ranks


def read_tiktoken_arrays(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(buf, lengths, ranks)`` of a rank file, decoded with numpy (see merge_recovery.py).

    Files in tiktoken's own layout (one ``<base64> <rank>\n`` per line) are decoded in bulk;
    anything else goes through :func:`read_tiktoken_file`, which names the line at fault.
    """
    path = Path(path)
    data = read_bytes(path)
    decoded = _decode_regular(data)
    if decoded is None:
        tokens, ranks = read_tiktoken_file(path)
        buf = np.frombuffer(b"".join(tokens), dtype=np.uint8)
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        return buf, lengths, np.asarray(ranks, dtype=np.int64)
    buf, lengths, ranks = decoded
    if not bool(np.all(ranks[1:] > ranks[:-1])):
        ordered = np.sort(ranks)
        if bool(np.any(ordered[1:] == ordered[:-1])):
            _raise_duplicate(path, data.splitlines())
    return buf, lengths, ranks


_B64_VALUES = np.full(256, 255, dtype=np.uint8)
_B64_VALUES[np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)] = np.arange(64)
_B64_VALUES[ord("=")] = 64


def _decode_regular(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Bulk-decode a file of ``<base64> <digits>\n`` lines; None if it is not exactly that."""
    if not data.endswith(b"\n"):
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(raw == 10)
    spaces = np.flatnonzero(raw == 32)
    count = len(newlines)
    if count == 0 or len(spaces) != count:
        return None
    line_starts = np.concatenate(([0], newlines[:-1] + 1))
    if not (np.all(line_starts < spaces) and np.all(spaces + 1 < newlines)):
        return None
    b64_len = spaces - line_starts
    if np.any(b64_len % 4):
        return None
    # base64: every field is whole 4-character groups, so the fields concatenate into groups
    b64_pos = np.repeat(line_starts - np.concatenate(([0], np.cumsum(b64_len)[:-1])), b64_len)
    b64_pos += np.arange(len(b64_pos))
    values = _B64_VALUES[raw[b64_pos]]
    if np.any(values == 255):
        return None
    ends = np.cumsum(b64_len)
    pad = (values[ends - 1] == 64).astype(np.int64) + (values[ends - 2] == 64)
    if int(np.count_nonzero(values == 64)) != int(pad.sum()) or np.any((pad == 2) & (b64_len < 4)):
        return None
    values[values == 64] = 0
    groups = values.reshape(-1, 4).astype(np.uint32)
    word = (groups[:, 0] << 18) | (groups[:, 1] << 12) | (groups[:, 2] << 6) | groups[:, 3]
    decoded = np.empty((len(word), 3), dtype=np.uint8)
    decoded[:, 0] = word >> 16
    decoded[:, 1] = (word >> 8) & 255
    decoded[:, 2] = word & 255
    decoded = decoded.ravel()
    keep = np.ones(len(decoded), dtype=bool)
    out_ends = ends // 4 * 3
    keep[out_ends[pad >= 1] - 1] = False
    keep[out_ends[pad == 2] - 2] = False
    buf = decoded[keep]
    lengths = b64_len // 4 * 3 - pad
    # ranks: decimal digits, at most 18 of them
    rank_len = newlines - spaces - 1
    if np.any(rank_len > 18):
        return None
    digit_pos = np.repeat(spaces + 1 - np.concatenate(([0], np.cumsum(rank_len)[:-1])), rank_len)
    digit_pos += np.arange(len(digit_pos))
    digits = raw[digit_pos].astype(np.int64) - 48
    if np.any((digits < 0) | (digits > 9)):
        return None
    field_end = np.repeat(newlines, rank_len)
    weights = 10 ** (field_end - 1 - digit_pos)
    ranks = np.add.reduceat(digits * weights, np.concatenate(([0], np.cumsum(rank_len)[:-1])))
    return buf, lengths.astype(np.int64), ranks


def _read_lines_slowly(path: Path, lines: list[bytes]) -> tuple[list[bytes], list[int]]:
    """Line by line, to name the first bad line."""
    tokens: list[bytes] = []
    ranks: list[int] = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise FormatError(f"{path}:{lineno}: expected '<base64 token> <rank>', got {len(parts)} fields: {line[:80]!r}")
        try:
            tokens.append(_b64decode(parts[0]))
        except (ValueError, binascii.Error) as exc:
            raise FormatError(f"{path}:{lineno}: bad base64 {parts[0][:80]!r} ({exc})") from None
        if not parts[1].isdigit():
            raise FormatError(f"{path}:{lineno}: rank {parts[1][:40]!r} is not a non-negative integer")
        ranks.append(int(parts[1]))
    return tokens, ranks


def _raise_duplicate(path: Path, lines: list[bytes]) -> None:
    seen_tokens: dict[bytes, int] = {}
    seen_ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(lines, 1):
        parts = line.split()
        if len(parts) != 2:
            continue
        token, rank = parts[0], str(int(parts[1])).encode()
        if token in seen_tokens:
            raise FormatError(f"{path}:{lineno}: token {_b64decode(token)!r} already has a rank on line {seen_tokens[token]}")
        if rank in seen_ranks:
            raise FormatError(f"{path}:{lineno}: rank {int(rank)} is already used on line {seen_ranks[rank]}")
        seen_tokens[token] = lineno
        seen_ranks[rank] = lineno
    raise FormatError(f"{path}: duplicate tokens or ranks")  # pragma: no cover - found above


def encode_tiktoken_file(ranks: Mapping[bytes, int]) -> bytes:
    """The bytes of a rank file: ``<base64> <rank>\\n`` per token, by rank (tiktoken's layout)."""
    ordered = sorted(ranks.items(), key=lambda item: item[1])
    return b"".join([base64.b64encode(token) + b" " + str(rank).encode() + b"\n" for token, rank in ordered])


def from_tiktoken(
    source: Any,
    pattern: str | None = "gpt4",
    special_tokens: Mapping[str, int] | None = None,
) -> Tokenizer:
    """A tokenizer with tiktoken's ids, from a rank file or a ``tiktoken.Encoding``.

    For a file, ``pattern`` (a registered name or a regex; "" for none) and ``special_tokens``
    say what the file cannot. For an Encoding, its own pattern and special tokens are used and
    the two arguments must be left at their defaults.
    """
    if hasattr(source, "_mergeable_ranks") and hasattr(source, "_pat_str"):
        if special_tokens is not None or pattern != "gpt4":
            raise TypeError("from_tiktoken(encoding) takes the pattern and special tokens from the encoding")
        name = f"tiktoken.Encoding {getattr(source, 'name', '?')!r}"
        merges, byte_ids = recover_merges(source._mergeable_ranks, name)
        return assemble_tokenizer(merges, byte_ids, pattern=source._pat_str,
                                  special_tokens=dict(source._special_tokens), source=name, recovered=True)
    path = Path(source)
    buf, lengths, ranks = read_tiktoken_arrays(path)
    merges, byte_ids = recover_merges_from_arrays(buf, lengths, ranks, path)
    return assemble_tokenizer(merges, byte_ids, pattern=pattern, special_tokens=special_tokens,
                              source=path, recovered=True)


def to_tiktoken(tok: Tokenizer, path: str | os.PathLike, *, force: bool = False) -> None:
    """Write ``tok``'s non-special tokens as a rank file that ``load_tiktoken_bpe`` reads.

    Raises RepresentabilityError (a FormatError) naming the first token whose rank-based
    encoding would differ from the merges (see representability.py), and writes nothing;
    ``force=True`` writes anyway with a warning. Pattern and special tokens are not part of
    the format: pass ``tok.pattern`` and ``tok.special_tokens`` to ``tiktoken.Encoding``.
    """
    try:
        check_rank_representable(tok)
    except RepresentabilityError as exc:
        if not force:
            raise
        warnings.warn(f"writing {path} anyway (force=True): {exc}", stacklevel=2)
    write_bytes_atomic(path, encode_tiktoken_file(tok.mergeable_ranks()))
