"""One entry point for any tokenizer file: ``conversion.load(path)``, by content, not by name.

Meta ships tiktoken rank files as ``tokenizer.model``, Mistral ships Tekken JSON as
``tekken.json``, and a ``.json`` may be a tokenizer.json, a Tekken file or GPT-2's
``encoder.json``; so the format is read from the file itself (:func:`detect_format`, with the
checks of file_kinds.py):

* a line ``minbpe v1`` / ``hf_bbpe v1`` / ``hf_bbpe v2`` first: a minbpe ``.model``;
* JSON with ``config`` and a ``vocab`` list: Tekken; with ``model``: a tokenizer.json; an object
  of token -> id: GPT-2's ``encoder.json``/``vocab.json`` (with ``vocab.bpe``/``merges.txt``
  beside it);
* text whose first line is ``#version`` or ``<symbol> <symbol>``: ``vocab.bpe``/``merges.txt``
  (with the vocabulary beside it);
* lines of ``<base64> <rank>``: a tiktoken rank file;
* two files: GPT-2's token -> id map and merges, in either order;
* a folder: its ``tokenizer.json`` (a transformers or save_pretrained folder), else
  ``encoder.json`` + ``vocab.bpe``, else ``vocab.json`` + ``merges.txt``, else its one file
  among ``tekken.json``, ``tokenizer.model``, ``*.tiktoken``, ``*.model``.

A rank file records neither its split pattern nor its special tokens: a known file (by sha256,
see presets.py) gets its preset's, and its token roles (Llama 3 adds ``<|begin_of_text|>``),
otherwise ``pattern`` is required. OpenAI's own GPT-2 files get the ``gpt2`` preset's roles.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_bbpe.engine.chunking.patterns import resolve_pattern
from hf_bbpe.hf.saved_folder import MixedFolderError, recover_and_check
from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError
from .file_kinds import MERGES, MINBPE, TEKKEN, TIKTOKEN, TOKEN_ID_MAP, TOKENIZER_JSON, describe_kind, json_kind, \
    text_kind, wrong_kind_message
from .reading import read_bytes, read_json_object

FORMATS = ("minbpe", "tekken", "tokenizer_json", "gpt2", "tiktoken")
_OPTIONS = {"tokenizer_json": {"strict"}, "tekken": {"vocab_size"}, "gpt2": {"pre_tokenizer"}}


def detect_format(path: str | os.PathLike | tuple[str | os.PathLike, str | os.PathLike]) -> str:
    """The format of a tokenizer file or folder, or of GPT-2's two files given together (one of
    :data:`FORMATS`), from the content; FormatError if it is none of them."""
    if isinstance(path, (tuple, list)):
        _pair(path)
        return "gpt2"
    return _resolve(Path(path))[0]


def _pair(paths: tuple | list) -> tuple[Path, Path]:
    if len(paths) != 2:
        raise FormatError(f"{len(paths)} paths given; two files are read as GPT-2's token -> id map and merges")
    return gpt2_file_pair(*paths)


def gpt2_file_pair(first: str | os.PathLike, second: str | os.PathLike) -> tuple[Path, Path]:
    """``(token -> id map, merges)``: GPT-2's two files (``encoder.json`` + ``vocab.bpe``, or
    ``vocab.json`` + ``merges.txt``) given in either order, told apart by their content."""
    paths = [Path(first), Path(second)]
    for path in paths:
        if not path.is_file():
            raise FormatError(f"{path}: no such file")
    kinds = [_file_kind(path) for path in paths]
    if kinds == [TOKEN_ID_MAP, MERGES]:
        return paths[0], paths[1]
    if kinds == [MERGES, TOKEN_ID_MAP]:
        return paths[1], paths[0]
    what = "; ".join(f"{path} is {describe_kind(kind)}" for path, kind in zip(paths, kinds))
    raise FormatError(f"two files are read as GPT-2's token -> id map (encoder.json or vocab.json) and its merges "
                      f"(vocab.bpe or merges.txt), in either order: {what}")


def _file_kind(path: Path) -> str | None:
    """The file_kinds.py kind of one file, JSON or not."""
    return json_kind(_read_json(path)) if _starts_like_json(path) else text_kind(path)


def load(
    path: str | os.PathLike | tuple[str | os.PathLike, str | os.PathLike],
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
    **options: Any,
) -> Tokenizer:
    """The engine tokenizer that a file or folder holds, whatever its format (module doc);
    ``path`` may also be GPT-2's two files as a tuple, in either order.

    ``pattern`` is the split pattern for formats that do not record one (tiktoken ranks, GPT-2
    files); giving one that differs from what a file records raises FormatError. ``special_tokens``
    are added to the file's. ``options`` go to the format's reader: ``strict=False``
    (tokenizer.json: drop what the engine cannot do, with a warning), ``vocab_size`` (Tekken),
    ``pre_tokenizer`` (GPT-2 files: a pipeline instead of ``pattern``, as the engine takes it).

    GPT-2 files (``vocab.json`` + ``merges.txt``) of a preset (by sha256: OpenAI's GPT-2, the
    SuperBPE paper's two) load as that preset. Others without ``pattern`` or ``pre_tokenizer`` get
    GPT-2's pattern, unless merges make tokens that span words (``"of the"``, which a pattern
    that cuts at spaces never makes): then SuperBPE's stage-2 pattern, as the paper runs its
    tokenizers, with a warning saying so.
    An option the format does not take raises TypeError. (``load_preset`` takes
    ``check_hash=False`` for a preset's file edited on purpose.)
    """
    if isinstance(path, (tuple, list)):
        kind, files = "gpt2", _pair(path)
        path = files[0]
    else:
        path = Path(path)
        try:
            recover_and_check(path)  # a killed save finished or rolled back; a folder of mixed files refused
        except MixedFolderError as exc:
            raise FormatError(str(exc)) from None
        if not path.exists():
            raise FormatError(f"{path}: no such file or folder")
        kind, files = _resolve(path)
    unknown = set(options) - _OPTIONS.get(kind, set())
    if unknown:
        raise TypeError(f"{path}: option(s) {', '.join(sorted(unknown))} do not apply to a {kind} file")
    tok = _read(kind, files, pattern, special_tokens, options)
    if pattern is not None and kind not in ("tiktoken", "gpt2") and resolve_pattern(pattern or None) != (tok.pattern or None):
        raise FormatError(f"{path}: the file records the split pattern {tok.pattern!r}; pattern={pattern!r} differs "
                          "(pattern= is for formats that record none)")
    if special_tokens and kind not in ("tiktoken", "gpt2"):
        try:
            tok.register_special_tokens(special_tokens)
        except ValueError as exc:
            raise FormatError(f"{path}: {exc}") from None
    return tok


def _resolve(path: Path) -> tuple[str, tuple]:
    """``(format, what to read)`` for a file or a folder, the kind told by file_kinds.py."""
    if path.is_dir():
        return _resolve_folder(path)
    if _starts_like_json(path):
        data = _read_json(path)
        kind = json_kind(data)
        if kind == TOKENIZER_JSON:
            return "tokenizer_json", (path, data)
        if kind == TEKKEN:
            return "tekken", (path, data)
        if kind == TOKEN_ID_MAP:
            return "gpt2", (path, _beside(path, ("vocab.bpe", "merges.txt"), "merges"))
    else:
        kind = text_kind(path)
        if kind == MINBPE:
            return "minbpe", (path,)
        if kind == TIKTOKEN:
            return "tiktoken", (path,)
        if kind == MERGES:
            return "gpt2", (_beside(path, ("encoder.json", "vocab.json"), "vocabulary"), path)
    message = wrong_kind_message(path, kind, "tokenizer file this package reads") if kind else None
    raise FormatError(message or f"{path}: cannot tell the tokenizer format from its content: none that this "
                      "package reads (tiktoken ranks, Tekken JSON, tokenizer.json, GPT-2 encoder.json + vocab.bpe, "
                      "minbpe .model)")


def _starts_like_json(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] == b"{"


def _resolve_folder(folder: Path) -> tuple[str, tuple]:
    if (folder / "tokenizer.json").is_file():
        return _resolve(folder / "tokenizer.json")
    for vocab, merges in (("encoder.json", "vocab.bpe"), ("vocab.json", "merges.txt")):
        if (folder / vocab).is_file() and (folder / merges).is_file():
            return "gpt2", (folder / vocab, folder / merges)
    candidates = [folder / name for name in ("tekken.json", "tokenizer.model") if (folder / name).is_file()]
    candidates += sorted(set(folder.glob("*.tiktoken")) | set(folder.glob("*.model")) - set(candidates))
    if len(candidates) == 1 or (candidates and candidates[0].name in ("tekken.json", "tokenizer.model")):
        return _resolve(candidates[0])
    raise FormatError(f"{folder}: no tokenizer files found (expected tokenizer.json, encoder.json + vocab.bpe, "
                      "vocab.json + merges.txt, tekken.json, tokenizer.model, a .tiktoken or a .model file)")


def _beside(path: Path, names: tuple[str, ...], what: str) -> Path:
    for name in names:
        if (path.parent / name).is_file():
            return path.parent / name
    raise FormatError(f"{path}: a GPT-2 file needs its {what} beside it ({' or '.join(names)})")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(read_bytes(path).removeprefix(b"\xef\xbb\xbf"))
    except ValueError:
        return read_json_object(path)  # raises a FormatError naming the line


def _read(kind: str, files: tuple, pattern: str | None, special_tokens: Mapping[str, int] | None,
          options: dict[str, Any]) -> Tokenizer:
    if kind == "minbpe":
        from .minbpe_model import from_minbpe

        return from_minbpe(files[0])
    if kind == "tekken":
        from .tekken import tekken_tokenizer

        return tekken_tokenizer(files[1], files[0], **options)
    if kind == "tokenizer_json":
        from .tokenizer_json import tokenizer_from_json_data

        return tokenizer_from_json_data(files[1], files[0], **options)
    if kind == "gpt2":
        from .gpt2_files import from_gpt2_files
        from .preset_loading import load_preset
        from .presets import PRESETS, preset_of_files

        pre_tokenizer = options.get("pre_tokenizer")
        if pattern is not None and pre_tokenizer is not None:
            raise TypeError(f"{files[0]}: give pattern= or pre_tokenizer=, not both")
        told = pattern is not None or pre_tokenizer is not None
        preset = None if special_tokens is not None else preset_of_files(files)
        if not told and preset is not None and preset != "gpt2":
            return load_preset(preset, files, check_hash=False)  # recognised by its hashes already
        tok = from_gpt2_files(files[0], files[1], pattern="gpt2" if pattern is None else pattern,
                              special_tokens=special_tokens, pre_tokenizer=pre_tokenizer)
        if not told and preset is None:
            _superwords_take_their_pattern(tok, files[1])
        if preset == "gpt2":
            tok.roles = PRESETS["gpt2"].roles.kept(tok.special_tokens)  # OpenAI's own files
        return tok
    from .tiktoken_ranks import rank_file_tokenizer

    return rank_file_tokenizer(files[0], pattern, special_tokens, unknown="raise")


def _superwords_take_their_pattern(tok: Tokenizer, merges_file: Path) -> None:
    """Give ``tok`` SuperBPE's stage-2 pattern, with a warning, when its merges make tokens that
    span words (a non-space character, a space, a non-space character): a tokenizer trained with a
    pattern that cuts text at spaces (GPT-2's, and every other built-in one) never makes one, and
    GPT-2's pattern would never let them be used."""
    import warnings

    from hf_bbpe.engine.chunking.patterns import SUPERBPE_STAGE2_SPLIT_PATTERN
    from hf_bbpe.engine.training.superwords import spans_words

    vocab = tok.vocab
    superwords = [data for data in (vocab[new] for new in tok.merges.values()) if spans_words(data)]
    if not superwords:
        return
    tok.pattern = SUPERBPE_STAGE2_SPLIT_PATTERN
    warnings.warn(f"{merges_file}: the file records no split pattern, and {len(superwords)} of its merges make tokens "
                  f"that span words (superwords, e.g. {superwords[0].decode('utf-8', 'replace')!r}): SuperBPE's "
                  "stage-2 pattern is assumed, as the paper runs its tokenizers (pattern='superbpe_stage2'); pass "
                  "pattern= or pre_tokenizer= to choose", stacklevel=4)
