"""Turning a tokenizer named on the command line into an engine tokenizer: the one resolver.

Accepted forms (``TOKENIZER`` in every subcommand's help):

* ``PRESET:PATH``: a preset of the conversion package (``gpt2``, ``r50k_base``,
  ``cl100k_base``, ``o200k_base``, ``whisper``, ``whisper_v3``, ``whisper_en``, ``llama3``,
  ``llama4``, ``tekken``) read from a local file or
  folder, e.g. ``llama3:Meta-Llama-3/tokenizer.model`` (pattern and special tokens come with the
  preset; ``--no-check-hash`` loads a file whose sha256 is not the preset's);
* any file or folder that ``conversion.load`` reads, the format told by the content, not the
  name: a tiktoken rank file (also Meta's ``tokenizer.model``; a known file gets its preset,
  another needs ``--pattern``), a Tekken ``tekken.json``, a ``tokenizer.json`` (``--no-strict``
  drops what the engine cannot do), GPT-2 files (``encoder.json`` or ``vocab.bpe``, the other
  beside it), a minbpe ``.model``, or a folder holding one of them;
* a folder saved by hf_bbpe (``hf-bbpe train``'s ``tokenizer.model``, or a BBPETokenizer
  save_pretrained folder), read as hf_bbpe wrote it.

``view`` and ``compare`` read more (:func:`load_view_tokenizer`): a sentencepiece ``.model``
and any ``tokenizer.json`` the engine cannot run (WordPiece, Unigram, ...), through their own
libraries.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..analysis.foreign_tokenizers import (
    EngineTokenizer,
    HFTokenizersTokenizer,
    SentencePieceTokenizer,
    ViewTokenizer,
    is_sentencepiece_model,
)
from ..engine.tokenizer import Tokenizer
from ..hf.saved_folder import recover_and_check
from .errors import CommandError, one_line, with_flag_names

SPEC_HELP = (
    "a tokenizer file or folder, its format read from the content (tiktoken ranks, Meta's tokenizer.model, "
    "tekken.json, tokenizer.json, encoder.json/vocab.bpe, a minbpe .model, a save_pretrained folder), or "
    "PRESET:PATH (gpt2, r50k_base, p50k_base, cl100k_base, o200k_base, whisper, whisper_v3, whisper_en, llama3, "
    "llama4, tekken), "
    "e.g. llama3:Meta-Llama-3/tokenizer.model"
)

_PRESET_SPEC = re.compile(r"^([A-Za-z][A-Za-z0-9_]*):(.+)$")
MODEL_FILE_IN_FOLDER = "tokenizer.model"


@dataclass
class LoadedTokenizer:
    name: str  # a short label for tables and views
    tokenizer: Tokenizer
    source: str  # the spec as given


def conversion_function(name: str):
    """A public function of the conversion package; a clear error if this version lacks it."""
    conversion = conversion_module()
    found = getattr(conversion, name, None)
    if found is None:
        raise CommandError(f"conversion.{name} is not available in this version of the conversion package")
    return found


def conversion_module():
    """The conversion package, imported on first use (it is only needed for foreign formats)."""
    _check_not_shadowed()
    try:
        import conversion
    except ImportError as exc:
        raise CommandError(f"the conversion package is not available ({exc})") from None
    return conversion


def _check_not_shadowed() -> None:
    """A CommandError naming the file when ``import conversion`` would load another package of
    that name than the one installed beside hf_bbpe: ``python -m`` puts the current folder first on
    ``sys.path``, and llama.cpp's source tree, for one, has a ``conversion`` package."""
    ours = Path(__file__).resolve().parents[2] / "conversion"
    if not (ours / "__init__.py").is_file():
        return  # installed some other way: nothing to compare with
    loaded = sys.modules.get("conversion")
    if loaded is not None:
        found = getattr(loaded, "__file__", None)
    else:
        spec = importlib.util.find_spec("conversion")  # finds the package without running it
        found = spec and (spec.origin if spec.has_location else next(iter(spec.submodule_search_locations or ()), None))
    if found and Path(found).resolve() not in (ours, ours / "__init__.py"):
        raise CommandError(f"{found} shadows hf_bbpe's conversion package ({ours}): Python finds it first on "
                           "sys.path ('python -m' puts the current folder first); run the hf-bbpe command, or "
                           "run from another folder")


def load_tokenizer(spec: str, *, pattern: str | None = None, strict: bool = True,
                   check_hash: bool = True) -> LoadedTokenizer:
    """Resolve ``spec`` (see the module docstring) to a tokenizer and a short display name.

    ``pattern`` applies to files that record no split pattern; ``strict=False`` and
    ``check_hash=False`` are the conversion package's options for lossy and unverified imports
    (the ``--no-strict`` and ``--no-check-hash`` flags). Every failure is a CommandError whose
    message names the file, and the flag that would accept it if there is one.
    """
    try:
        tok, name = _load(spec, pattern, strict, check_hash)
    except CommandError:
        raise
    except FileNotFoundError as exc:
        raise CommandError(f"{exc.filename or spec}: no such file") from None
    except (ValueError, KeyError, OSError, TypeError) as exc:
        message = one_line(exc)
        if spec not in message and os.path.basename(spec) not in message:
            message = f"{spec}: {message}"
        raise CommandError(with_flag_names(exc, message)) from None
    return LoadedTokenizer(name=name, tokenizer=tok, source=spec)


def _load(spec: str, pattern: str | None, strict: bool, check_hash: bool) -> tuple[Tokenizer, str]:
    path = Path(spec)
    recover_and_check(path)  # a killed save finished or rolled back; a folder of mixed files refused
    if not path.exists():
        preset = _PRESET_SPEC.match(spec)
        if preset:
            name, preset_path = preset.groups()
            if not Path(preset_path).exists():
                raise CommandError(f"{preset_path}: no such file (for preset {name})")
            return conversion_function("load_preset")(name, preset_path, check_hash=check_hash), name
        raise CommandError(f"{spec}: no such file or folder")
    if not check_hash:
        raise CommandError("--no-check-hash applies to PRESET:PATH only (a file read by its content is not checked)")
    options = {} if strict else {"strict": False}
    if path.is_dir():
        own = _load_own_folder(path)
        tok = own if own is not None else conversion_function("load")(path, pattern=pattern, **options)
        return tok, path.name or str(path)
    tok = conversion_function("load")(path, pattern=pattern, **options)
    if path.name in ("tokenizer.json", "tokenizer.model", "tekken.json", "encoder.json", "vocab.bpe") \
            and path.parent.name:
        return tok, path.parent.name
    return tok, path.stem


def _load_own_folder(folder: Path) -> Tokenizer | None:
    """A folder hf_bbpe wrote, read as it was written; None for any other folder."""
    model, config = folder / MODEL_FILE_IN_FOLDER, folder / "tokenizer_config.json"
    if model.is_file() and _is_model_file(model) and \
            not (config.is_file() and config.stat().st_mtime_ns > model.stat().st_mtime_ns):
        # written by `hf-bbpe train` beside save_pretrained files (which agree: recover_and_check);
        # a save_pretrained by an older hf_bbpe may have left it older than them
        return Tokenizer.from_file(model)
    if config.is_file() and (folder / "vocab.json").is_file() and saved_by_bbpe(config):
        from ..hf.tokenization_bbpe import BBPETokenizer

        return BBPETokenizer.from_pretrained(str(folder)).engine
    return None


def _is_model_file(path: Path) -> bool:
    """A minbpe / hf_bbpe ``.model`` (Meta's ``tokenizer.model`` is a rank file instead)."""
    with open(path, "rb") as handle:
        return handle.readline().rstrip(b"\r\n") in (b"minbpe v1", b"hf_bbpe v1", b"hf_bbpe v2")


def saved_by_bbpe(config: Path) -> bool:
    """True for a tokenizer_config.json that BBPETokenizer wrote (it records the split pattern)."""
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "pattern" in data and "bpe_mode" in data


@dataclass
class LoadedViewTokenizer:
    name: str  # a short label for tables and views
    tokenizer: ViewTokenizer
    source: str  # the spec as given


def load_view_tokenizer(spec: str, *, pattern: str | None = None, strict: bool = True,
                        check_hash: bool = True) -> LoadedViewTokenizer:
    """Any tokenizer a user has, for ``view`` and ``compare``: what :func:`load_tokenizer` reads
    (as our engine), else a sentencepiece ``.model`` (through the sentencepiece extra) or any
    ``tokenizer.json`` (WordPiece, Unigram, BPE the engine cannot run, through ``tokenizers``),
    also inside a folder. Errors are CommandErrors naming the file, or the missing extra."""
    path = Path(spec)
    if path.is_file() and is_sentencepiece_model(path):
        return LoadedViewTokenizer(_file_label(path), _sentencepiece(path), spec)
    try:
        loaded = load_tokenizer(spec, pattern=pattern, strict=strict, check_hash=check_hash)
        return LoadedViewTokenizer(loaded.name, EngineTokenizer(loaded.tokenizer), spec)
    except CommandError:
        json_file = path / "tokenizer.json" if path.is_dir() else path
        model_file = path / MODEL_FILE_IN_FOLDER
        if json_file.is_file() and _is_tokenizer_json(json_file):
            try:
                return LoadedViewTokenizer(_file_label(json_file), HFTokenizersTokenizer(json_file), spec)
            except Exception as exc:  # the tokenizers library's own parse errors
                raise CommandError(f"{json_file}: the tokenizers library cannot read it ({one_line(exc)})") from None
        if path.is_dir() and model_file.is_file() and is_sentencepiece_model(model_file):
            return LoadedViewTokenizer(path.name, _sentencepiece(model_file), spec)
        raise


def _sentencepiece(path: Path) -> SentencePieceTokenizer:
    try:
        return SentencePieceTokenizer(path)
    except ImportError as exc:
        raise CommandError(f"{path}: {exc}") from None
    except (RuntimeError, OSError) as exc:
        raise CommandError(f"{path}: not a sentencepiece model ({one_line(exc)})") from None


def _file_label(path: Path) -> str:
    if path.name in ("tokenizer.json", "tokenizer.model", "tekken.json") and path.parent.name:
        return path.parent.name
    return path.name if path.suffix.startswith(".v") else path.stem


def _is_tokenizer_json(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            if handle.read(1) not in (b"{", b" ", b"\n", b"\t", b"\r"):
                return False
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("model"), dict)
