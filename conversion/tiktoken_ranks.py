"""tiktoken rank files (``<base64 token> <rank>`` per line) and ``tiktoken.Encoding`` objects.

Reading gives a tokenizer in ``"ranks"`` mode, tiktoken's own algorithm (hf_bbpe/engine/tokenizer.py):
ids are the ranks, so cl100k's permuted single-byte ranks, holes in the id space, special
tokens above the ranks and tokens that no merge builds (Llama 3 has 678) all come out as
tiktoken has them; the merge list is recovered from the ranks only when something asks for it.
Writing lists every non-special token by id, so a file read and written again is
byte-identical to the original.

The reader accepts what tiktoken's ``load_tiktoken_bpe`` + ``Encoding`` accept and decodes it
to the same ranks: a UTF-8 byte-order mark, an empty token (a line ``= 5``), ranks written
``+5`` or ``1_000``, base64 with characters outside its alphabet (dropped, as tiktoken drops
them, with a warning naming the line), a token listed twice (``load_tiktoken_bpe`` builds a
dict: the last rank wins and the earlier one is a hole in the id space, which decodes as no
token, as in tiktoken; a warning names both lines). It refuses, naming the file and line, what
they refuse (a line without exactly two fields, bad padding, a rank that is not an integer, two
tokens with one rank, a rank above 2**32 - 1, where tiktoken's u32 ``Rank`` overflows). Every
rank up to 2**32 - 1 loads with its own id; the token of rank 2**32 - 1 is, as in tiktoken, never
made by a merge (tiktoken reads that value as "no rank"), only reached as a whole chunk.

A single byte without a rank loads (tiktoken loads it too) but cannot be encoded: text whose
encoding needs that byte on its own raises :class:`~hf_bbpe.engine.encoding.encoder.MissingByteError`
naming the byte, where tiktoken panics; everything else encodes as tiktoken encodes it.

Writing a tokenizer in another mode checks that the ranks mean the same thing as the merges
(see representability.py): tiktoken merges any two adjacent pieces whose bytes form a token,
by that token's rank, while merges are pairs of ids.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import sys
import warnings
from array import array
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hf_bbpe.engine.files.atomic_write import write_bytes_atomic
from hf_bbpe.engine.encoding.encoder import DuplicateTokensError, TokenTable
from hf_bbpe.engine.chunking.patterns import resolve_pattern
from hf_bbpe.engine.encoding.token_ids import MAX_TOKEN_ID
from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError
from .reading import read_bytes
from .representability import RepresentabilityError, check_rank_representable

if sys.version_info >= (3, 11):
    _b64decode = functools.partial(binascii.a2b_base64, strict_mode=True)
else:  # pragma: no cover - strict_mode is new in 3.11
    _b64decode = functools.partial(base64.b64decode, validate=True)


_BOM = b"\xef\xbb\xbf"
MAX_RANK = MAX_TOKEN_ID
"""The largest rank tiktoken takes (its ``Rank`` is a u32)."""
_RANK_LIMIT_NOTE = "tiktoken's ranks are u32; it overflows above 2**32 - 1"


def read_tiktoken_file(path: str | os.PathLike) -> tuple[list[bytes], list[int]]:
    """The tokens and ranks of a rank file, in file order; any defect raises FormatError.

    Accepts what tiktoken's ``load_tiktoken_bpe`` accepts (see the module doc): a token listed
    twice keeps its last rank, with a warning naming both lines.
    """
    path = Path(path)
    data = read_bytes(path)
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    tokens, ranks, linenos = _read_lines_slowly(path, data.splitlines())
    tokens, ranks, linenos = _last_rank_of_each_token(path, tokens, ranks, linenos)
    first_line_of_rank: dict[int, int] = {}
    for rank, lineno in zip(ranks, linenos):
        first = first_line_of_rank.setdefault(rank, lineno)
        if first != lineno:
            raise FormatError(f"{path}:{lineno}: rank {rank} is already used on line {first}")
    if not tokens:
        raise FormatError(f"{path}: no ranks in the file")
    return tokens, ranks


def _last_rank_of_each_token(
    path: Path, tokens: list[bytes], ranks: list[int], linenos: list[int]
) -> tuple[list[bytes], list[int], list[int]]:
    """``load_tiktoken_bpe``'s dict semantics: a token listed again takes the later rank; the
    earlier line is dropped (its rank becomes a hole) with a warning naming both lines."""
    last = {token: i for i, token in enumerate(tokens)}
    if len(last) == len(tokens):
        return tokens, ranks, linenos
    dropped = [i for i, token in enumerate(tokens) if last[token] != i]
    first = dropped[0]
    kept = last[tokens[first]]
    warnings.warn(f"{path}:{linenos[kept]}: token {tokens[first]!r} is listed again (rank {ranks[kept]}; line "
                  f"{linenos[first]} gave it rank {ranks[first]}): as tiktoken's load_tiktoken_bpe, the last rank "
                  f"is kept and id {ranks[first]} is left unused ({len(dropped)} such line(s))", stacklevel=3)
    keep = sorted(last.values())
    return [tokens[i] for i in keep], [ranks[i] for i in keep], [linenos[i] for i in keep]


def read_tiktoken_arrays(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(buf, lengths, ranks)`` of a rank file, decoded with numpy (see merge_recovery.py).

    Files in tiktoken's own layout (one ``<base64> <rank>\n`` per line) are decoded in bulk;
    anything else goes through :func:`read_tiktoken_file`, which names the line at fault.
    """
    path = Path(path)
    data = read_bytes(path)
    decoded = _decode_regular(data)
    if decoded is None:
        return _arrays_of_file(path)
    buf, lengths, ranks = decoded
    if len(ranks) and int(ranks.max()) > MAX_RANK:
        return _arrays_of_file(path)  # names the line
    if not bool(np.all(ranks[1:] > ranks[:-1])):
        ordered = np.sort(ranks)
        if bool(np.any(ordered[1:] == ordered[:-1])):
            return _arrays_of_file(path)  # a rank used twice is an error unless a token listed again frees it
    return buf, lengths, ranks


def _arrays_of_file(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(buf, lengths, ranks)`` from the line-by-line reader (dict semantics, errors name lines)."""
    tokens, ranks = read_tiktoken_file(path)
    buf = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    return buf, lengths, np.asarray(ranks, dtype=np.int64)


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


def _read_lines_slowly(path: Path, lines: list[bytes]) -> tuple[list[bytes], list[int], list[int]]:
    """Line by line, as ``load_tiktoken_bpe`` reads them, to name the first bad line: the
    tokens, ranks and line numbers, in file order."""
    tokens: list[bytes] = []
    ranks: list[int] = []
    linenos: list[int] = []
    lenient: list[int] = []
    for lineno, line in enumerate(lines, 1):
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise FormatError(f"{path}:{lineno}: expected '<base64 token> <rank>', got {len(parts)} fields: {line[:80]!r}")
        try:
            token = _b64decode(parts[0]) if parts[0].strip(b"=") else b""  # "=": the empty token
        except (ValueError, binascii.Error):
            try:
                token = binascii.a2b_base64(parts[0])  # tiktoken's decoding: other characters are dropped
            except (ValueError, binascii.Error) as exc:
                raise FormatError(f"{path}:{lineno}: bad base64 {parts[0][:80]!r} ({exc})") from None
            lenient.append(lineno)
        tokens.append(token)
        try:
            rank = int(parts[1])
        except ValueError:
            raise FormatError(f"{path}:{lineno}: rank {parts[1][:40]!r} is not an integer") from None
        if not 0 <= rank <= MAX_RANK:
            raise FormatError(f"{path}:{lineno}: rank {parts[1][:40]!r} is out of range 0 .. {MAX_RANK} "
                              f"({_RANK_LIMIT_NOTE})")
        ranks.append(rank)
        linenos.append(lineno)
    if lenient:
        warnings.warn(f"{path}:{lenient[0]}: base64 with characters outside its alphabet, dropped as tiktoken drops "
                      f"them ({len(lenient)} line(s))", stacklevel=3)
    return tokens, ranks, linenos


def encode_tiktoken_file(ranks: Mapping[bytes, int]) -> bytes:
    """The bytes of a rank file: ``<base64> <rank>\\n`` per token, by rank (tiktoken's layout)."""
    ordered = sorted(ranks.items(), key=lambda item: item[1])
    return b"".join([base64.b64encode(token) + b" " + str(rank).encode() + b"\n" for token, rank in ordered])


def from_tiktoken(
    source: Any,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
) -> Tokenizer:
    """A tokenizer with tiktoken's ids, from a rank file or a ``tiktoken.Encoding``.

    A rank file records neither the split pattern nor the special tokens. A known file (a
    preset's, by its sha256: OpenAI's, Whisper's, Llama 3's and Llama 4's ``tokenizer.model``)
    gets its preset's pattern, special tokens and token roles; ``pattern`` (a registered name or
    a regex; "" for none) and ``special_tokens`` given here replace the preset's. Any other file
    needs ``pattern``: without it, GPT-4's (cl100k_base's) is assumed, with a warning that says so.
    For an Encoding, its own pattern and special tokens are used and the two arguments must be
    left out.
    """
    if hasattr(source, "_mergeable_ranks") and hasattr(source, "_pat_str"):
        if special_tokens is not None or pattern is not None:
            raise TypeError("from_tiktoken(encoding) takes the pattern and special tokens from the encoding")
        name = f"tiktoken.Encoding {getattr(source, 'name', '?')!r}"
        return tokenizer_from_ranks(source._mergeable_ranks, pattern=source._pat_str,
                                    special_tokens=dict(source._special_tokens), source=name)
    return rank_file_tokenizer(Path(source), pattern, special_tokens, unknown="warn")


ASSUMED_PATTERN = "gpt4"
"""The split pattern :func:`from_tiktoken` assumes for a rank file that is no preset's."""


def rank_file_tokenizer(path: Path, pattern: str | None, special_tokens: Mapping[str, int] | None, *,
                        unknown: str) -> Tokenizer:
    """:func:`from_tiktoken` for a file. For a file that is no preset's and no ``pattern``,
    ``unknown`` says what to do: ``"warn"`` (assume :data:`ASSUMED_PATTERN`, with a warning) or
    ``"raise"`` (a FormatError asking for the pattern)."""
    from .presets import PRESETS, preset_of_file

    preset = None
    if pattern is None or special_tokens is None:
        name = preset_of_file(path)
        preset = PRESETS[name] if name is not None and PRESETS[name].reader == "tiktoken" else None
    if preset is not None:
        pattern = preset.pattern if pattern is None else pattern
        special_tokens = preset.special_tokens if special_tokens is None else special_tokens
    elif pattern is None:
        if unknown == "raise":
            raise FormatError(f"{path}: a tiktoken rank file records no split pattern and this is no known file: "
                              "pass pattern= (a regex or gpt2, gpt4, o200k, llama3, qwen2, tekken) and "
                              "special_tokens=, or use load_preset(name, path)", option="pattern")
    assumed = pattern is None
    buf, lengths, ranks = read_tiktoken_arrays(path)
    options = {"pattern": ASSUMED_PATTERN if assumed else pattern, "special_tokens": special_tokens, "source": path}
    try:
        tok = tokenizer_from_arrays(buf, lengths, ranks, **options)
    except _TokenListedTwice:  # the bulk reader keeps every line: read the file as a dict, as tiktoken does
        tok = tokenizer_from_arrays(*_arrays_of_file(path), **options)
    if preset is not None:
        tok.roles = preset.roles.kept(tok.special_tokens)
    if assumed:  # said once the file has loaded, so that a bad file gets only its error
        warnings.warn(f"{path}: a rank file records no split pattern, and this one is no known preset's (by its "
                      f"sha256): assumed GPT-4's ({ASSUMED_PATTERN}, cl100k_base's) and no special tokens; give the "
                      "pattern (pattern=, or --pattern on the command line) to choose another", stacklevel=3)
    return tok


class _TokenListedTwice(FormatError):
    """Two ranks of the arrays given to :func:`tokenizer_from_arrays` spell the same token."""


def tokenizer_from_ranks(
    ranks: Mapping[bytes, int], *, pattern: str | None, special_tokens: Mapping[str, int] | None, source: object
) -> Tokenizer:
    """A ``"ranks"``-mode tokenizer from ``{token bytes: rank}``; errors name ``source``."""
    tokens = list(ranks)
    return tokenizer_from_arrays(
        np.frombuffer(b"".join(tokens), dtype=np.uint8),
        np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)),
        np.fromiter(ranks.values(), dtype=np.int64, count=len(tokens)),
        pattern=pattern, special_tokens=special_tokens, source=source,
    )


def tokenizer_from_arrays(
    buf: np.ndarray,
    lengths: np.ndarray,
    ranks: np.ndarray,
    *,
    pattern: str | None,
    special_tokens: Mapping[str, int] | None,
    source: object,
) -> Tokenizer:
    """A ``"ranks"``-mode tokenizer from tokens laid end to end in ``buf`` (cut by ``lengths``)
    with distinct ``ranks``; a token listed twice or a bad special token raises FormatError naming
    ``source`` (a missing single byte loads: see the module doc). Nothing here makes a Python object per token."""
    if len(ranks) and (int(ranks.min()) < 0 or int(ranks.max()) > MAX_RANK):
        bad = int(ranks[(ranks < 0) | (ranks > MAX_RANK)][0])
        raise FormatError(f"{source}: rank {bad} is out of range 0 .. {MAX_RANK} ({_RANK_LIMIT_NOTE})")
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    singles = np.flatnonzero(lengths == 1)
    byte_rank = np.full(256, -1, dtype=np.int64)
    order = singles[np.argsort(-ranks[singles], kind="stable")]  # the lowest rank of a byte listed twice wins
    byte_rank[buf[starts[order]]] = ranks[order]
    table = TokenTable(np.ascontiguousarray(buf, dtype=np.uint8).tobytes(),
                       array("q", np.ascontiguousarray(lengths, dtype=np.int64).tobytes()),
                       array("q", np.ascontiguousarray(ranks, dtype=np.int64).tobytes()))
    try:
        tok = Tokenizer.from_token_table(table, byte_rank.tolist(), pattern=resolve_pattern(pattern or None),
                                          special_tokens=special_tokens)
    except DuplicateTokensError as exc:
        first, second = sorted((exc.first, exc.second))  # ids, which are the ranks
        raise _TokenListedTwice(f"{source}: token {exc.token!r} has two ranks, {first} and {second}") from None
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
    return tok


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
