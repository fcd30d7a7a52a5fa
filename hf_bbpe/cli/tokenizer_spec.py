"""Turning a tokenizer named on the command line into an engine tokenizer: the one resolver.

Accepted forms (``TOKENIZER`` in every subcommand's help):

* ``PRESET:PATH``: a preset of the conversion package (``gpt2``, ``r50k_base``,
  ``cl100k_base``, ``o200k_base``) read from a local file or folder, e.g.
  ``cl100k_base:/data/cl100k_base.tiktoken`` (pattern and special tokens come with the preset);
* a ``.model`` file (minbpe, or hf_bbpe's extended variant);
* a ``.tiktoken`` rank file: a preset when the file name is one (``cl100k_base.tiktoken``),
  else ranks with the ``--pattern`` given (default gpt4) and no special tokens;
* a ``tokenizer.json`` file, or any other ``.json`` holding a byte-level BPE tokenizer;
* GPT-2 files: ``encoder.json`` or ``vocab.bpe`` (the other one beside it);
* a folder: a save_pretrained folder (its ``tokenizer.json``), a GPT-2 folder
  (``encoder.json`` + ``vocab.bpe``) or a transformers GPT-2-style folder (``vocab.json`` +
  ``merges.txt``), or a folder holding exactly one ``.model`` file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..tokenizer import Tokenizer
from .errors import CommandError, one_line

SPEC_HELP = (
    "a tokenizer: a .model file, a save_pretrained or GPT-2 folder, encoder.json/vocab.bpe, "
    "a tokenizer.json, a .tiktoken file, or PRESET:PATH (gpt2, r50k_base, cl100k_base, o200k_base), "
    "e.g. cl100k_base:cl100k_base.tiktoken"
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
    try:
        import conversion
    except ImportError as exc:
        raise CommandError(f"the conversion package is not available ({exc})") from None
    return conversion


def load_tokenizer(spec: str, *, pattern: str | None = None) -> LoadedTokenizer:
    """Resolve ``spec`` (see the module docstring) to a tokenizer and a short display name.

    ``pattern`` applies to bare ``.tiktoken`` files only. Every failure is a CommandError whose
    message names the file.
    """
    try:
        tok, name = _load(spec, pattern)
    except CommandError:
        raise
    except FileNotFoundError as exc:
        raise CommandError(f"{exc.filename or spec}: no such file") from None
    except (ValueError, KeyError, OSError) as exc:
        message = one_line(exc)
        if spec not in message and os.path.basename(spec) not in message:
            message = f"{spec}: {message}"
        raise CommandError(message) from None
    return LoadedTokenizer(name=name, tokenizer=tok, source=spec)


def _load(spec: str, pattern: str | None) -> tuple[Tokenizer, str]:
    path = Path(spec)
    if not path.exists():
        preset = _PRESET_SPEC.match(spec)
        if preset:
            name, preset_path = preset.groups()
            if not Path(preset_path).exists():
                raise CommandError(f"{preset_path}: no such file (for preset {name})")
            return conversion_function("load_preset")(name, preset_path), name
        raise CommandError(f"{spec}: no such file or folder")
    if path.is_dir():
        return _load_folder(path), path.name or str(path)
    suffix = path.suffix.lower()
    if suffix == ".model":
        name = path.parent.name if path.stem == "tokenizer" and path.parent.name else path.stem
        return Tokenizer.from_file(path), name
    if suffix == ".tiktoken":
        if pattern is None and path.stem in conversion_module().PRESETS:
            return conversion_function("load_preset")(path.stem, path), path.stem
        return conversion_function("from_tiktoken")(path, pattern=pattern or "gpt4"), path.stem
    if path.name == "encoder.json" or path.name == "vocab.bpe":
        encoder, bpe = path.with_name("encoder.json"), path.with_name("vocab.bpe")
        return conversion_function("from_gpt2_files")(encoder, bpe), path.parent.name or "gpt2"
    if suffix == ".json":
        name = path.parent.name if path.name == "tokenizer.json" and path.parent.name else path.stem
        return conversion_function("from_tokenizer_json")(path), name
    raise CommandError(f"{spec}: cannot tell the tokenizer format from the name (expected a folder, .model, "
                       ".tiktoken, .json, encoder.json/vocab.bpe or PRESET:PATH)")


def _load_folder(folder: Path) -> Tokenizer:
    model, config = folder / MODEL_FILE_IN_FOLDER, folder / "tokenizer_config.json"
    if model.is_file() and not (config.is_file() and config.stat().st_mtime_ns > model.stat().st_mtime_ns):
        # written by `hf-bbpe train` after save_pretrained; a later save_pretrained makes it stale
        return Tokenizer.from_file(model)
    if config.is_file() and (folder / "vocab.json").is_file() and saved_by_bbpe(config):
        from ..tokenization_bbpe import BBPETokenizer

        return BBPETokenizer.from_pretrained(str(folder)).engine
    if (folder / "tokenizer.json").is_file():
        return conversion_function("from_tokenizer_json")(folder / "tokenizer.json")
    if (folder / "encoder.json").is_file() and (folder / "vocab.bpe").is_file():
        return conversion_function("from_gpt2_files")(folder / "encoder.json", folder / "vocab.bpe")
    if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        return conversion_function("from_transformers_gpt2")(folder)
    models = sorted(folder.glob("*.model"))
    if len(models) == 1:
        return Tokenizer.from_file(models[0])
    raise CommandError(f"{folder}: no tokenizer files found (expected tokenizer.json, encoder.json + vocab.bpe, "
                       "vocab.json + merges.txt, or one .model file)")


def saved_by_bbpe(config: Path) -> bool:
    """True for a tokenizer_config.json that BBPETokenizer wrote (it records the split pattern)."""
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "pattern" in data and "BBPETokenizer" in json.dumps(data.get("auto_map", ""))
