"""minbpe's ``.model`` file (read and written) and its human-readable ``.vocab`` listing.

``.model`` (minbpe v1)::

    minbpe v1
    <split pattern, empty for BasicTokenizer>
    <number of special tokens>
    <special> <id>        one line each
    <left> <right>        one line per merge, in order; the merge gets id 256, 257, ...

That layout fixes byte ids to 0..255 and merge ids to 256 upwards. A tokenizer outside it (GPT-2
and cl100k permute the byte ids; an extended vocabulary skips ids taken by special tokens; a
tokenizer.json may lack the bytes UTF-8 never uses) is written as ``hf_bbpe v1``: the same layout
plus one line with the 256 byte ids (-1 for a byte without a token), and merge lines
``<left> <right> <id>``. A tokenizer that v1 cannot describe is written as ``hf_bbpe v2``:
v1 plus two sections. After the pattern, one line holding a JSON object ``{"normalizer": ...,
"pre_tokenizer": ...}`` in ``tokenizers``' JSON forms (the pipeline's patterns in Python
``regex`` syntax; the pattern line is then empty), for a normalizer or a pre-tokenizer pipeline,
``"normalized_special_tokens": [...]`` when some special tokens are found in the normalized text,
and ``"roles": {"bos_token": ..., "add_bos_token": true, ...}`` when special tokens play
transformers' roles (``Tokenizer.roles``).
After the byte ids, a line ``mode <merges|ignore_merges|ranks>``, the number of tokens that no
merge builds (Llama 3 has 678) and one ``<id> <base64 bytes>`` line for each. minbpe reads only
its own layout; hf_bbpe reads all three, and writes the first one that holds the tokenizer.

``.vocab`` is a listing derived from ``.model`` (minbpe never reads it). Ours starts with a line
``# listing of <name>.model sha256 <hex>`` naming the ``.model`` it lists: :func:`save_model_files`
writes ``.model`` and then ``.vocab``, each atomically, and a load (:func:`repair_vocab_listing`)
rewrites a ``.vocab`` that lists another ``.model`` (a save killed between the two files), so the
pair is one tokenizer after any kill. Temp files of a killed save are removed by the next save
(atomic_write.remove_stale_temps).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..chunking.byte_unicode import render_token
from .atomic_write import remove_stale_temps, write_bytes_atomic, write_text_atomic

MINBPE_HEADER = "minbpe v1"
EXTENDED_HEADER = "hf_bbpe v1"
EXTENDED_HEADER_V2 = "hf_bbpe v2"
HEADERS = (MINBPE_HEADER, EXTENDED_HEADER, EXTENDED_HEADER_V2)
MODES = ("merges", "ignore_merges", "ranks")
LISTING_HEADER = "# listing of "

logger = logging.getLogger("hf_bbpe")


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
    mode: str = "merges"
    unmerged: dict[int, bytes] = field(default_factory=dict)
    normalized_specials: list[str] = field(default_factory=list)
    """Special tokens found in the normalized text (``Tokenizer.normalized_special_tokens``)."""
    roles: dict = field(default_factory=dict)
    """The special tokens' roles for transformers (``TokenRoles.as_kwargs()``; empty: none)."""


def is_minbpe_layout(merges: dict[tuple[int, int], int], byte_ids: list[int]) -> bool:
    """True if minbpe's own format can hold this vocabulary (identity bytes, ids 256, 257, ...)."""
    return list(byte_ids) == list(range(256)) and all(new == 256 + i for i, new in enumerate(merges.values()))


def write_model_file(path: str | os.PathLike, contents: ModelFileContents) -> None:
    """Write ``path`` atomically, in minbpe's layout when it fits, else the extended one.

    The format is line-based, so a pattern or special token with a line break cannot be written:
    that raises ValueError naming it (write the pattern's line breaks as ``\\n`` instead).
    """
    write_text_atomic(path, model_file_text(path, contents))


class _Tokenizer(Protocol):
    """A tokenizer, as far as :func:`save_tokenizer` needs one (``Tokenizer`` is one)."""

    mode: str
    merges: dict[tuple[int, int], int]
    unmerged_tokens: dict[int, bytes]
    vocab: dict[int, bytes]
    special_tokens: dict[str, int]
    byte_ids: list[int]
    normalized_special_tokens: frozenset[str]
    plain_pattern: str | None
    is_plain: bool
    roles: Any
    normalizer: Any
    pre_tokenizer: Any

    def merge_list_mismatch(self) -> int | None: ...


def save_tokenizer(tok: _Tokenizer, file_prefix: str | os.PathLike) -> None:
    """``Tokenizer.save``: ``<prefix>.model`` (minbpe v1 when ``tok`` fits its layout, else this
    module's extension) and ``<prefix>.vocab``, from ``tok``'s public state."""
    mode = tok.mode
    if mode == "ranks" and tok.merge_list_mismatch() is None:
        mode = "merges"  # the merges alone encode alike (minbpe can read it)
    contents = ModelFileContents(tok.plain_pattern or "", dict(tok.special_tokens), dict(tok.merges),
                                 list(tok.byte_ids), mode=mode, unmerged=dict(tok.unmerged_tokens),
                                 normalized_specials=sorted(tok.normalized_special_tokens),
                                 roles=tok.roles.as_kwargs())
    if not tok.is_plain:
        contents.normalizer = None if tok.normalizer is None else tok.normalizer.to_json()
        contents.pre_tokenizer = None if tok.pre_tokenizer is None else tok.pre_tokenizer.to_json()
    save_model_files(Path(file_prefix), contents, tok.vocab, tok.merges)


def save_model_files(prefix: str | os.PathLike, contents: ModelFileContents, vocab: dict[int, bytes],
                     merges: dict[tuple[int, int], int]) -> None:
    """Write ``<prefix>.model``, then ``<prefix>.vocab`` listing it (its header names the
    ``.model``'s sha256), each atomically; see the module doc for what a kill between them leaves."""
    prefix = Path(prefix)
    model = prefix.with_name(prefix.name + ".model")
    listing = prefix.with_name(prefix.name + ".vocab")
    for path in (model, listing):
        remove_stale_temps(path)  # what a killed save left
    data = model_file_text(model, contents).encode("utf-8")
    write_bytes_atomic(model, data)
    write_vocab_file(listing, vocab, merges, listed=(model.name, data))


def repair_vocab_listing(model: str | os.PathLike, vocab: dict[int, bytes], merges: dict[tuple[int, int], int]) -> bool:
    """Rewrite the ``.vocab`` beside ``model`` if its header names another ``.model`` content (a
    save killed between its two files), saying so in one line; True if it was rewritten. A
    ``.vocab`` without our header (minbpe's) is left alone; a read-only folder only warns."""
    model = Path(model)
    listing = model.with_suffix(".vocab")
    try:
        with open(listing, encoding="utf-8", errors="replace") as handle:
            header = handle.readline().rstrip("\n")
    except OSError:
        return False
    if not header.startswith(LISTING_HEADER):
        return False
    data = model.read_bytes()
    if header == _listing_header(model.name, data):
        return False
    try:
        write_vocab_file(listing, vocab, merges, listed=(model.name, data))
    except OSError as exc:
        logger.warning("%s lists another %s (a save was killed between the two files); cannot rewrite it: %s",
                       listing, model.name, exc.strerror)
        return False
    logger.warning("%s listed another %s (a save was killed between the two files): rewrote it from %s",
                   listing, model.name, model)
    return True


def _listing_header(model_name: str, data: bytes) -> str:
    return f"{LISTING_HEADER}{model_name} sha256 {hashlib.sha256(data).hexdigest()}"


def model_file_text(path: str | os.PathLike, contents: ModelFileContents) -> str:
    """The text of the ``.model`` file ``path`` holding ``contents`` (see :func:`write_model_file`)."""
    for what, text in [("split pattern", contents.pattern), *(("special token", t) for t in contents.special_tokens)]:
        if "\n" in text or "\r" in text:
            raise ValueError(
                f"cannot write {path}: the {what} {text!r} contains a line break, which the .model "
                "format cannot hold (in a regex, write it as \\n)"
            )
    pipeline = contents.normalizer is not None or contents.pre_tokenizer is not None
    v2 = pipeline or contents.mode != "merges" or bool(contents.unmerged) or bool(contents.normalized_specials) \
        or bool(contents.roles)
    minbpe = not v2 and is_minbpe_layout(contents.merges, contents.byte_ids)
    header = EXTENDED_HEADER_V2 if v2 else MINBPE_HEADER if minbpe else EXTENDED_HEADER
    lines = [header, contents.pattern]
    if v2:
        options = {"normalizer": contents.normalizer, "pre_tokenizer": contents.pre_tokenizer}
        if contents.normalized_specials:
            options["normalized_special_tokens"] = sorted(contents.normalized_specials)
        if contents.roles:
            options["roles"] = contents.roles
        lines.append(json.dumps(options, ensure_ascii=True, separators=(",", ":")))
    lines.append(str(len(contents.special_tokens)))
    lines += [f"{token} {idx}" for token, idx in contents.special_tokens.items()]
    if minbpe:
        lines += [f"{a} {b}" for a, b in contents.merges]
    else:
        lines.append(" ".join(map(str, contents.byte_ids)))
        if v2:
            lines += [f"mode {contents.mode}", str(len(contents.unmerged))]
            lines += [f"{idx} {base64.b64encode(data).decode('ascii')}" for idx, data in contents.unmerged.items()]
        lines += [f"{a} {b} {new}" for (a, b), new in contents.merges.items()]
    return "\n".join(lines) + "\n"


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
        raise fail(1, f"expected the header {MINBPE_HEADER!r}, {EXTENDED_HEADER!r} or {EXTENDED_HEADER_V2!r}")
    extended = lines[0] != MINBPE_HEADER
    contents = ModelFileContents(pattern=lines[1] if len(lines) > 1 else "")
    lineno = 2
    if lines[0] == EXTENDED_HEADER_V2:
        lineno = 3
        try:
            options = json.loads(lines[2]) if len(lines) > 2 else None
        except ValueError as exc:
            raise fail(3, f"expected a JSON object with the normalizer and pre_tokenizer ({exc})") from None
        named = options.pop("normalized_special_tokens", []) if isinstance(options, dict) else []
        if not isinstance(options, dict) or not all(v is None or isinstance(v, dict) for v in options.values()) \
                or not isinstance(named, list) or not all(isinstance(t, str) for t in named):
            raise fail(3, f"expected a JSON object with the normalizer and pre_tokenizer, got {lines[2]!r}")
        contents.normalizer = options.get("normalizer")
        contents.pre_tokenizer = options.get("pre_tokenizer")
        contents.normalized_specials = named
        contents.roles = options.get("roles") or {}
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
        if len(fields) != 256 or not all(f.isdigit() or f == "-1" for f in fields):
            raise fail(lineno, "expected the 256 byte ids (-1: a byte without a token)")
        contents.byte_ids = [int(f) for f in fields]
    if lines[0] == EXTENDED_HEADER_V2:
        lineno = _read_v2_section(lines, lineno, contents, fail)
    known = {idx for idx in contents.byte_ids if idx >= 0} | set(contents.unmerged)
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


def _read_v2_section(lines: list[str], lineno: int, contents: ModelFileContents, fail) -> int:
    """The ``mode`` line and the unmerged tokens of an ``hf_bbpe v2`` file; returns the last line read."""
    lineno += 1
    key, _, mode = (lines[lineno - 1] if lineno <= len(lines) else "").partition(" ")
    if key != "mode" or mode not in MODES:
        raise fail(lineno, f"expected 'mode <{'|'.join(MODES)}>'")
    contents.mode = mode
    lineno += 1
    count = lines[lineno - 1] if lineno <= len(lines) else ""
    if not count.isdigit():
        raise fail(lineno, f"expected the number of unmerged tokens, got {count!r}")
    for _ in range(int(count)):
        lineno += 1
        if lineno > len(lines):
            raise fail(lineno, "file ends inside the unmerged tokens")
        idx, _, encoded = lines[lineno - 1].partition(" ")
        try:
            data = base64.b64decode(encoded, validate=True)
        except ValueError:
            data = None
        if not idx.isdigit() or data is None:
            raise fail(lineno, f"expected '<id> <base64 bytes>', got {lines[lineno - 1]!r}")
        if int(idx) in contents.unmerged or int(idx) in contents.byte_ids:
            raise fail(lineno, f"unmerged token id {idx} repeats an id")
        contents.unmerged[int(idx)] = data
    return lineno


def write_vocab_file(path: str | os.PathLike, vocab: dict[int, bytes], merges: dict[tuple[int, int], int],
                     listed: tuple[str, bytes] | None = None) -> None:
    """minbpe's ``.vocab`` listing: ``[left][right] -> [token] id`` for merges, ``[token] id`` else;
    ``listed`` (the ``.model``'s name and content) puts our header line first."""
    parents = {new: pair for pair, new in merges.items()}
    lines = [] if listed is None else [_listing_header(*listed)]
    for idx, token in vocab.items():
        shown = render_token(token)
        if idx in parents:
            a, b = parents[idx]
            lines.append(f"[{render_token(vocab[a])}][{render_token(vocab[b])}] -> [{shown}] {idx}")
        else:
            lines.append(f"[{shown}] {idx}")
    write_text_atomic(path, "\n".join(lines) + "\n")
