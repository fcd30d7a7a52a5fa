"""Reading the command line's text inputs: files, globs and ``-`` for stdin, strictly as UTF-8.

Files are read as bytes and decoded strictly, so ``\\r\\n`` survives (no newline translation)
and a file that is not UTF-8 is an error naming the file and the byte offset. Empty input is an
error in every command (:func:`reject_empty`): training on it, auditing or viewing it would
give a result that looks like one and means nothing.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..engine.training.counting_reference import paragraphs
from ..engine.training.text_files import TEXT, file_kind, iter_file_documents, not_utf8
from .errors import CommandError

STDIN = "-"


def expand_inputs(patterns: Sequence[str]) -> list[str]:
    """Paths for the given files and globs (``**`` recurses), in order; ``-`` stays ``-``.

    A name that is neither a file nor a glob matching a file is an error, and so is ``-`` twice.
    """
    if list(patterns).count(STDIN) > 1:
        raise CommandError("stdin ('-') can be given only once")
    paths: list[str] = []
    for pattern in patterns:
        if pattern == STDIN:
            paths.append(STDIN)
            continue
        if os.path.isdir(pattern):
            raise CommandError(f"{pattern}: is a directory (give files, or a glob like '{pattern}/**/*.txt')")
        if os.path.exists(pattern):
            paths.append(pattern)
            continue
        matches = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not matches:
            if glob.has_magic(pattern):
                raise CommandError(f"no file matches {pattern!r}")
            raise CommandError(f"{pattern}: no such file")
        paths.extend(matches)
    return paths


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as text; invalid UTF-8 is an error naming ``source``, the line and the byte offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(source, data.count(b"\n", 0, exc.start) + 1, exc.start, data[exc.start:exc.start + 4]) from None


def _not_utf8(source: str, line: int, offset: int, found: bytes) -> CommandError:
    return CommandError(not_utf8(source, line, offset, found))


def read_bytes(path: str) -> bytes:
    """The bytes of a file, or of stdin for ``-``; a missing file is a CommandError."""
    if path == STDIN:
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CommandError(f"{path}: is a directory") from None
    except PermissionError:
        raise CommandError(f"{path}: permission denied") from None


def read_text(path: str) -> str:
    """A file (or stdin for ``-``) as UTF-8 text, newlines untouched."""
    return decode_utf8(read_bytes(path), "<stdin>" if path == STDIN else path)


def reject_empty(sources: Sequence[str], n_chars: int) -> None:
    """The one check for empty input: a CommandError naming ``sources`` when they hold no text."""
    if n_chars == 0:
        names = [display_name(s) for s in sources]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        raise CommandError(f"{shown}: empty input (no text to work on)")


def read_texts(paths: Sequence[str], *, each: bool = False) -> list[tuple[str, str]]:
    """``(name, text)`` of each path; empty input is an error, for every file when ``each``."""
    texts = [(display_name(p), read_text(p)) for p in paths]
    if each:
        for name, text in texts:
            reject_empty([name], len(text))
    else:
        reject_empty([name for name, _ in texts], sum(len(text) for _, text in texts))
    return texts


def text_argument(file: str, text: str | None) -> tuple[str, str]:
    """The text of a ``FILE`` / ``--text`` pair of arguments, and a name for it in messages;
    empty text is an error."""
    if text is not None:
        if file != STDIN:
            raise CommandError("give either FILE or --text, not both")
        source = "--text"
    else:
        source = display_name(file)
        text = decode_utf8(read_bytes(file), source)
    reject_empty([source], len(text))
    return text, source


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


DOCUMENT_MODES = ("paragraph", "line", "file")


def iter_documents(paths: Sequence[str], mode: str = "paragraph") -> Iterator[str]:
    """Stream the documents of the given files for training.

    ``file``: each file is one document. ``line``: each line is one. ``paragraph``: documents
    end after a run of blank lines (:func:`hf_bbpe.paragraphs`, which the README's first
    example uses too), which keeps almost every chunk the split pattern would find in the whole
    file while letting counting run in parallel. Files are read line by line, so memory stays small. When the files
    hold no text at all, the stream ends with a CommandError (see :func:`reject_empty`).
    """
    if mode not in DOCUMENT_MODES:
        raise CommandError(f"unknown document mode {mode!r} (choose from {', '.join(DOCUMENT_MODES)})")
    n_chars = 0
    for path in paths:
        documents = [read_text(path)] if mode == "file" else _split_lines(_iter_lines(path), mode)
        for doc in documents:
            n_chars += len(doc)
            yield doc
    reject_empty(paths, n_chars)


def _iter_lines(path: str) -> Iterator[str]:
    name = display_name(path)
    handle = sys.stdin.buffer if path == STDIN else _open(path)
    offset = 0
    try:
        for lineno, raw in enumerate(handle, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _not_utf8(name, lineno, offset + exc.start, raw[exc.start:exc.start + 4]) from None
            offset += len(raw)
    finally:
        if path != STDIN:
            handle.close()


def _open(path: str):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CommandError(f"{path}: is a directory") from None


def _split_lines(lines: Iterator[str], mode: str) -> Iterator[str]:
    return lines if mode == "line" else paragraphs(lines)


def iter_corpus_documents(paths: Sequence[str], mode: str = "file", text_column: str = "text") -> Iterator[str]:
    """The documents of a corpus, file after file: each record's ``text_column`` in a ``.jsonl``
    file (one JSON object a line) or a ``.parquet`` file (one row each), read as the engine reads
    them (text_files.py), and text files cut by ``mode`` (see :func:`iter_documents`). A bad
    record is an error naming the file and the line or row; input with no text at all is an
    error, as everywhere (:func:`reject_empty`)."""
    n_chars = 0
    for path in paths:
        if path != STDIN and file_kind(path) != TEXT:
            documents = _record_documents(path, text_column)
        else:
            documents = [read_text(path)] if mode == "file" else _split_lines(_iter_lines(path), mode)
        for doc in documents:
            n_chars += len(doc)
            yield doc
    reject_empty(paths, n_chars)


class CorpusDocuments:
    """:func:`iter_corpus_documents` as an iterable that reads the files again each time it is
    iterated (stdin, which can be read once, is kept after the first pass)."""

    def __init__(self, paths: Sequence[str], mode: str, text_column: str) -> None:
        self.paths, self.mode, self.text_column = list(paths), mode, text_column
        self._stdin: list[str] | None = None

    def __iter__(self) -> Iterator[str]:
        if STDIN not in self.paths:
            return iter_corpus_documents(self.paths, self.mode, self.text_column)
        if self._stdin is None:
            self._stdin = list(iter_corpus_documents(self.paths, self.mode, self.text_column))
        return iter(self._stdin)


def _record_documents(path: str, column: str) -> Iterator[str]:
    try:
        yield from iter_file_documents([path], column)
    except (ValueError, ImportError) as exc:
        raise input_error(exc) from None


def input_error(exc: BaseException) -> CommandError:
    """The engine's error about a training file, worded for this CLI (its option is a flag here)."""
    return CommandError(str(exc).replace("text_column=", "--text-column"))


def train_on_inputs(learn: Callable[..., Any], paths: list[str], args: argparse.Namespace, size: int,
                    **more: Any) -> Any:
    """``learn`` (a tokenizer's ``train`` or ``extend``) to ``size`` on the documents of ``paths``
    (see :func:`count_on_inputs`), with the merge options; ``more``: further keywords for
    ``learn`` (``superwords``)."""
    return count_on_inputs(learn, paths, args, size, tie_break=args.tie_break, min_frequency=args.min_frequency,
                           **more)


def count_on_inputs(work: Callable[..., Any], paths: list[str], args: argparse.Namespace, *positional: Any,
                    **more: Any) -> Any:
    """``work(text, *positional, ...)`` (a tokenizer's ``train``, ``extend`` or ``count_chunks``)
    on the documents of ``paths`` with the counting options: the files themselves (the counting
    threads read them, text files cut into documents by ``--docs``), or with stdin the documents
    read here (again for each pass: superwords count the corpus twice; stdin is read once and
    kept). An error about a file names it and its line, as a one-line CommandError. ``more``:
    further keywords for ``work``."""
    options = {"num_workers": args.workers, "progress": False if args.no_progress else None,
               "text_column": args.text_column, "max_memory": args.max_memory, **more}
    try:
        if STDIN not in paths:
            if not any(os.path.getsize(path) for path in paths):
                reject_empty(paths, 0)
            return work(None, *positional, files=paths, docs=args.docs, **options)
        if more.get("superwords") is not None:
            documents = CorpusDocuments(paths, args.docs, args.text_column)
        else:
            documents = iter_corpus_documents(paths, args.docs, args.text_column)
        return work(documents, *positional, **options)
    except (ValueError, ImportError) as exc:
        raise input_error(exc) from None
