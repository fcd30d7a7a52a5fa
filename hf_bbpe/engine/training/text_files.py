"""Training files: which documents a ``.txt``, ``.jsonl`` or ``.parquet`` file holds.

A document is:

* in a text file (any name but the two below), by ``docs`` (:data:`DOC_MODES`): one line with
  its ``\\n`` (``"line"``, the default), as ``open(path, encoding="utf-8", newline="\\n")``
  yields it and as ``tokenizers``' ``train(files)`` reads it: a ``\\r`` stays as it is
  (``open(path)`` in its default mode would also turn ``\\r\\n`` and a lone ``\\r`` into
  ``\\n``); or a paragraph (``"paragraph"``): lines up to a run of blank lines, with that run, as
  ``chunk_counting.paragraphs(open(path, newline=""))`` cuts them (a blank line holds nothing but
  ``\\r`` before its ``\\n``); or the whole file (``"file"``);
* in a ``.jsonl`` file, the string in field ``text_column`` of the JSON object on each line
  (lines of whitespace only are skipped), read as Python's ``json`` reads it but without its
  limits on digits and on nesting: numbers may have any length, and a line may nest arrays and
  objects :data:`JSON_MAX_DEPTH` (1000) levels deep, its own object included, never deeper
  (:func:`json_record`; the C kernel has the same rule);
* in a ``.parquet`` file, the string in column ``text_column`` of each row (read with pyarrow,
  the ``parquet`` extra).

Files must be UTF-8. Bad input is an error naming the file and the line (or row): bytes that are
not UTF-8, a line that is not JSON, a record without the field or whose field is not a string,
a null row.

:func:`iter_file_documents` reads them in Python, one document at a time: the readable twin of
the C kernel's reader (``csrc/count/``), which the tests hold to it, and the path for patterns
that kernel does not split. :func:`parquet_text_arrays` gives a parquet file's column as Arrow
arrays, which the kernel counts without making a str per row.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .counting_reference import paragraphs

TEXT, JSONL, PARQUET = "text", "jsonl", "parquet"
DOC_MODES = ("line", "paragraph", "file")
"""How a text file is cut into documents (``docs=``): lines, paragraphs, or the whole file."""
DOCS_RULE = ("a text file is cut into documents by lines ('line': each with its line break, as open(f) and "
             "tokenizers' train(files) give them), paragraphs ('paragraph': lines up to a run of blank lines) or "
             "not at all ('file'); a .jsonl or .parquet file holds a document per record. The default follows the "
             "job: the Python API's train(files=...) reads lines, as tokenizers does; hf-bbpe train, extend and "
             "count read paragraphs (almost every chunk of the whole file, counted in parallel); encode-corpus reads "
             "whole files, so that EOS ends each file")
"""The one statement of how text files become documents and of each job's default, which every
``--docs`` help and ``Tokenizer.train``'s docstring show."""
PARQUET_BATCH_ROWS = 1 << 16
NOT_UTF8_HINT = "a binary file, or another encoding such as Latin-1?"

_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}


def file_kind(path: str | os.PathLike) -> str:
    """:data:`TEXT`, :data:`JSONL` or :data:`PARQUET`, by the file's suffix."""
    suffix = Path(path).suffix.lower()
    return JSONL if suffix == ".jsonl" else PARQUET if suffix == ".parquet" else TEXT


def training_files(files: str | os.PathLike | Iterable[str | os.PathLike]) -> list[str]:
    """The paths of ``files`` (one path or several), each checked to be a file: a missing one
    raises FileNotFoundError, a folder IsADirectoryError, naming it."""
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    paths = []
    for file in files:
        if not isinstance(file, (str, os.PathLike)):
            raise TypeError(f"files must be paths (str or os.PathLike), got {type(file).__name__}")
        path = os.fspath(file)
        if os.path.isdir(path):
            raise IsADirectoryError(f"{path}: is a directory (give its files)")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file")
        paths.append(path)
    return paths


def check_doc_mode(docs: str) -> str:
    """``docs`` if it is one of :data:`DOC_MODES`, else a ValueError listing them."""
    if docs not in DOC_MODES:
        raise ValueError(f"docs must be one of {', '.join(map(repr, DOC_MODES))} (how text files are cut into "
                         f"documents), got {docs!r}")
    return docs


def iter_file_documents(paths: Iterable[str], text_column: str = "text", docs: str = "line") -> Iterator[str]:
    """The documents of the files, file after file, in order (see the module doc)."""
    check_doc_mode(docs)
    for path in paths:
        kind = file_kind(path)
        if kind == PARQUET:
            yield from _parquet_documents(path, text_column)
        elif kind == JSONL:
            yield from _jsonl_documents(path, text_column)
        elif docs == "paragraph":
            yield from paragraphs(_text_lines(path))
        elif docs == "file":
            whole = "".join(_text_lines(path))
            if whole:
                yield whole
        else:
            yield from _text_lines(path)


def _lines(path: str) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, line)`` of a file, its lines ending after each ``\\n``; a
    ValueError (:func:`changed_while_read`) if the file changes while it is read."""
    offset = 0
    with open(path, "rb") as handle:
        before = os.fstat(handle.fileno())
        for number, line in enumerate(handle, 1):
            yield number, offset, line
            offset += len(line)
    try:
        now = os.stat(path)
    except FileNotFoundError:
        now = None
    if offset != before.st_size or now is None or (now.st_size, now.st_mtime_ns) != (before.st_size,
                                                                                      before.st_mtime_ns):
        raise ValueError(changed_while_read(path, before.st_size, None if now is None else now.st_size))


def changed_while_read(source: str, before: int, now: int | None) -> str:
    """The message for a file that was written to while it was read (``before``: its size when
    reading began, ``now``: its size now, None if it is gone): its counts would be of no one
    version of it. The C kernel words it the same."""
    return (f"{source}: changed while it was read ({before} bytes when counting began, "
            f"{'gone' if now is None else now} now); count it again once nothing writes to it")


def not_utf8(source: str, line: int, offset: int, found: bytes) -> str:
    """The message for bytes that are not UTF-8 at byte ``offset`` (on ``line``) of ``source``;
    ``found``: the bytes from there (up to 4). The C kernel words it the same."""
    return f"{source}, line {line}: not UTF-8 text (byte {offset}: {found!r}; {NOT_UTF8_HINT})"


def _decoded(path: str, number: int, offset: int, line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(not_utf8(path, number, offset + exc.start, line[exc.start:exc.start + 4])) from None


def _text_lines(path: str) -> Iterator[str]:
    for number, offset, line in _lines(path):
        yield _decoded(path, number, offset, line)


def _jsonl_documents(path: str, column: str) -> Iterator[str]:
    for number, offset, line in _lines(path):
        if not line.strip(b" \t\r\n"):
            continue
        text = _decoded(path, number, offset, line)
        try:
            record = json_record(text)
        except ValueError as exc:
            raise ValueError(f"{path}, line {number}: not JSON ({exc})") from None
        if not isinstance(record, dict) or column not in record:
            what = "object" if isinstance(record, dict) else _JSON_TYPES.get(type(record), "value")
            raise ValueError(f"{path}, line {number}: no field {column!r} in the JSON {what} "
                             f"({_field_names(record)}text_column= names the field)")
        value = record[column]
        if not isinstance(value, str):
            raise ValueError(f"{path}, line {number}: field {column!r} is not a string "
                             f"(a JSON {_JSON_TYPES[type(value)]})")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{path}, line {number}: field {column!r} holds a lone surrogate (\\ud800-\\udfff), "
                             "which is not text") from None
        yield value


JSON_MAX_DEPTH = 1000
"""The deepest a line of a .jsonl file may nest arrays and objects (the C kernel's limit too)."""
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def json_record(text: str) -> Any:
    """The JSON value of a line, as ``json.loads`` reads it but for two limits of Python's that
    the C kernel does not have: any number of digits (``sys.get_int_max_str_digits``; numbers are
    never used, only their type) and nesting up to :data:`JSON_MAX_DEPTH` whatever the recursion
    limit. Deeper lines are refused, as the C kernel refuses them. ValueError: not JSON."""
    if text.count("[") + text.count("{") > JSON_MAX_DEPTH and _json_depth(text) > JSON_MAX_DEPTH:
        raise ValueError(f"nested deeper than {JSON_MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_int=float)
    except RecursionError:
        pass
    with _recursion_room(JSON_MAX_DEPTH + 100):
        return json.loads(text, parse_int=float)


def _json_depth(text: str) -> int:
    """How deep the arrays and objects of a line nest (brackets in strings do not count)."""
    depth = deepest = 0
    for token in _JSON_TOKENS.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in ("]", "}"):
            depth -= 1
    return deepest


_recursion_lock = threading.Lock()


@contextlib.contextmanager
def _recursion_room(frames: int) -> Iterator[None]:
    """Python's recursion limit raised by ``frames`` for the block (json's parser recurses per
    level of nesting)."""
    with _recursion_lock:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + frames)
        try:
            yield
        finally:
            sys.setrecursionlimit(limit)


def _field_names(record: Any) -> str:
    """``its fields: 'a', 'b'; `` (cut at 80 characters) for an object that has some, else ``""``."""
    if not isinstance(record, dict) or not record:
        return ""
    names = ""
    for name in record:
        part = f"{', ' if names else ''}{name!r}"
        if len(names) + len(part) >= 80:
            names += ", ..." if names else "..."
            break
        names += part
    return f"its fields: {names}; "


def _parquet_documents(path: str, column: str) -> Iterator[str]:
    for row, array in parquet_text_arrays(path, column)[1]:
        for k, text in enumerate(array.to_pylist()):
            if text is None:
                raise ValueError(f"{path}, row {row + k}: the text is null, not a string")
            yield text


def parquet_text_arrays(path: str, column: str) -> tuple[int, Iterator[tuple[int, Any]]]:
    """The rows of a parquet file, and ``(first row, pyarrow string array)`` for its column
    ``column`` in batches. Needs pyarrow (ImportError naming the ``parquet`` extra); a file that
    is not parquet, a missing column or one that does not hold strings is a ValueError naming the
    file."""
    pa, pq = _pyarrow()
    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a parquet file ({exc})") from None
    names = parquet.schema_arrow.names
    if column not in names:
        raise ValueError(f"{path}: no column {column!r} (its columns: {', '.join(names)}; text_column= names the "
                         "column)")
    kind = parquet.schema_arrow.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or _is_string_view(pa, kind)):
        raise ValueError(f"{path}: column {column!r} holds {kind}, not strings")

    def arrays() -> Iterator[tuple[int, Any]]:
        row = 0
        for batch in parquet.iter_batches(columns=[column], batch_size=PARQUET_BATCH_ROWS):
            array = batch.column(0)
            yield row, array
            row += len(array)

    return parquet.metadata.num_rows, arrays()


def _is_string_view(pa: Any, kind: Any) -> bool:
    check = getattr(pa.types, "is_string_view", None)
    return bool(check and check(kind))


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError("reading .parquet files needs pyarrow: pip install 'hf_bbpe[parquet]'") from None
    return pyarrow, pyarrow.parquet
