"""minbpe's ``.model`` file (read and written) and its human-readable ``.vocab`` listing.

``.model`` (minbpe v1)::

    minbpe v1
    <split pattern, empty for BasicTokenizer>
    <number of special tokens>
    <special> <id>        one line each
    <left> <right>        one line per merge, in order; the merge gets id 256, 257, ...

That layout fixes byte ids to 0..255 and merge ids to 256 upwards. A tokenizer outside it (GPT-2
and cl100k permute the byte ids; an extended vocabulary skips ids taken by special tokens) is
written as ``hf_bbpe v1``: the same layout plus one line with the 256 byte ids, and merge
lines ``<left> <right> <id>``. A tokenizer with a normalizer or a pre-tokenizer pipeline (not
one plain split pattern) is written as ``hf_bbpe v2``: v1 with one more line after the pattern,
a JSON object ``{"normalizer": ..., "pre_tokenizer": ...}`` in ``tokenizers``' JSON forms (the
pipeline's patterns in Python ``regex`` syntax; the pattern line is then empty). minbpe reads
neither variant; hf_bbpe reads all three, and writes the first one that holds the tokenizer.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .atomic_write import write_text_atomic
from .byte_unicode import render_token

MINBPE_HEADER = "minbpe v1"
EXTENDED_HEADER = "hf_bbpe v1"
PIPELINE_HEADER = "hf_bbpe v2"
HEADERS = (MINBPE_HEADER, EXTENDED_HEADER, PIPELINE_HEADER)


class ModelFileError(ValueError):
    """A ``.model`` file that cannot be read; the message names the file and line."""


@dataclass
class ModelFileContents:
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    merges: dict[tuple[int, int], int] = field(default_factory=dict)
    byte_ids: list[int] = field(default_factory=lambda: list(range(256)))
    normalizer: dict | None = None
    """JSON form of the normalizer (None: none)."""
    pre_tokenizer: dict | None = None
    """JSON form of a pre-tokenizer pipeline; None when ``pattern`` says how text is split."""


def is_minbpe_layout(merges: dict[tuple[int, int], int], byte_ids: list[int]) -> bool:
    """True if minbpe's own format can hold this vocabulary (identity bytes, ids 256, 257, ...)."""
    return list(byte_ids) == list(range(256)) and all(new == 256 + i for i, new in enumerate(merges.values()))


def write_model_file(path: str | os.PathLike, contents: ModelFileContents) -> None:
    """Write ``path`` atomically, in minbpe's layout when it fits, else the extended one.

    The format is line-based, so a pattern or special token with a line break cannot be written:
    that raises ValueError naming it (write the pattern's line breaks as ``\\n`` instead).
    """
    for what, text in [("split pattern", contents.pattern), *(("special token", t) for t in contents.special_tokens)]:
        if "\n" in text or "\r" in text:
            raise ValueError(
                f"cannot write {path}: the {what} {text!r} contains a line break, which the .model "
                "format cannot hold (in a regex, write it as \\n)"
            )
    pipeline = contents.normalizer is not None or contents.pre_tokenizer is not None
    minbpe = not pipeline and is_minbpe_layout(contents.merges, contents.byte_ids)
    header = PIPELINE_HEADER if pipeline else MINBPE_HEADER if minbpe else EXTENDED_HEADER
    lines = [header, contents.pattern]
    if pipeline:
        options = {"normalizer": contents.normalizer, "pre_tokenizer": contents.pre_tokenizer}
        lines.append(json.dumps(options, ensure_ascii=True, separators=(",", ":")))
    lines.append(str(len(contents.special_tokens)))
    lines += [f"{token} {idx}" for token, idx in contents.special_tokens.items()]
    if minbpe:
        lines += [f"{a} {b}" for a, b in contents.merges]
    else:
        lines.append(" ".join(map(str, contents.byte_ids)))
        lines += [f"{a} {b} {new}" for (a, b), new in contents.merges.items()]
    write_text_atomic(path, "\n".join(lines) + "\n")


def model_file_path(path: str | os.PathLike) -> Path:
    """The file that ``path`` names: ``path`` itself if it is a file, else ``<path>.model``.

    So loading takes the prefix that saving took (``save("tok")`` writes ``tok.model``, and
    ``load("tok")`` reads it), as well as the full file name. Neither existing raises
    FileNotFoundError naming both paths.
    """
    path = Path(path)
    if path.is_file():
        return path
    if path.name:
        with_suffix = path.with_name(path.name + ".model")
        if with_suffix.is_file():
            return with_suffix
        raise FileNotFoundError(f"no tokenizer file at {path} or {with_suffix}")
    raise FileNotFoundError(f"no tokenizer file at {path}")


def read_model_file(path: str | os.PathLike) -> ModelFileContents:
    """Read a ``.model`` file written by minbpe or by hf_bbpe (its path, or the prefix it was saved under)."""
    path = model_file_path(path)
    if path.suffix != ".model":
        raise ModelFileError(f"{path}: expected a .model file")
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{path}: not UTF-8 text ({exc})") from None
    if lines and lines[-1] == "":
        lines.pop()

    def fail(lineno: int, message: str) -> ModelFileError:
        return ModelFileError(f"{path}:{lineno}: {message}")

    if not lines or lines[0] not in HEADERS:
        raise fail(1, f"expected the header {MINBPE_HEADER!r}, {EXTENDED_HEADER!r} or {PIPELINE_HEADER!r}")
    extended = lines[0] != MINBPE_HEADER
    contents = ModelFileContents(pattern=lines[1] if len(lines) > 1 else "")
    lineno = 2
    if lines[0] == PIPELINE_HEADER:
        lineno = 3
        try:
            options = json.loads(lines[2]) if len(lines) > 2 else None
        except ValueError as exc:
            raise fail(3, f"expected a JSON object with the normalizer and pre_tokenizer ({exc})") from None
        if not isinstance(options, dict) or not all(v is None or isinstance(v, dict) for v in options.values()):
            raise fail(3, f"expected a JSON object with the normalizer and pre_tokenizer, got {lines[2]!r}")
        contents.normalizer = options.get("normalizer")
        contents.pre_tokenizer = options.get("pre_tokenizer")
    if len(lines) <= lineno:
        raise fail(len(lines) + 1, "file ends before the special-token count")
    try:
        num_special = int(lines[lineno])
    except ValueError:
        raise fail(lineno + 1, f"expected the number of special tokens, got {lines[lineno]!r}") from None
    lineno += 1
    for _ in range(num_special):
        lineno += 1
        if lineno > len(lines):
            raise fail(lineno, "file ends inside the special tokens")
        token, _, idx = lines[lineno - 1].rpartition(" ")
        if not token or not idx.isdigit():
            raise fail(lineno, f"expected '<special token> <id>', got {lines[lineno - 1]!r}")
        if token in contents.special_tokens:
            raise fail(lineno, f"special token {token!r} appears twice")
        contents.special_tokens[token] = int(idx)
    if extended:
        lineno += 1
        fields = lines[lineno - 1].split() if lineno <= len(lines) else []
        if len(fields) != 256 or not all(f.isdigit() for f in fields):
            raise fail(lineno, "expected the 256 byte ids")
        contents.byte_ids = [int(f) for f in fields]
    known = set(contents.byte_ids)
    next_id = 256
    for line in lines[lineno:]:
        lineno += 1
        fields = line.split()
        if len(fields) != (3 if extended else 2) or not all(f.isdigit() for f in fields):
            raise fail(lineno, f"expected a merge '<left> <right>{' <id>' if extended else ''}', got {line!r}")
        a, b = int(fields[0]), int(fields[1])
        new = int(fields[2]) if extended else next_id
        for side in (a, b):
            if side not in known:
                raise fail(lineno, f"merge names token {side}, which no earlier line defines")
        if new in known or (a, b) in contents.merges:
            raise fail(lineno, f"merge ({a}, {b}) -> {new} repeats an id or a pair")
        contents.merges[(a, b)] = new
        known.add(new)
        next_id += 1
    taken = known & set(contents.special_tokens.values())
    if taken:
        raise fail(3, f"special token id {min(taken)} is also a normal token id")
    return contents


def write_vocab_file(path: str | os.PathLike, vocab: dict[int, bytes], merges: dict[tuple[int, int], int]) -> None:
    """minbpe's ``.vocab`` listing: ``[left][right] -> [token] id`` for merges, ``[token] id`` else."""
    parents = {new: pair for pair, new in merges.items()}
    lines = []
    for idx, token in vocab.items():
        shown = render_token(token)
        if idx in parents:
            a, b = parents[idx]
            lines.append(f"[{render_token(vocab[a])}][{render_token(vocab[b])}] -> [{shown}] {idx}")
        else:
            lines.append(f"[{shown}] {idx}")
    write_text_atomic(path, "\n".join(lines) + "\n")
