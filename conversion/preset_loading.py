"""``load_preset``: a known tokenizer (presets.py) from its local files, hashes checked.

Apart from presets.py so that the readers it calls (tiktoken_ranks.py, which looks up presets
itself) sit between the two.
"""

from __future__ import annotations

import os
from pathlib import Path

from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError
from .presets import PRESETS, Preset, check_sha256


def _resolve_files(preset: Preset, path: str | os.PathLike | tuple) -> list[Path]:
    if isinstance(path, (tuple, list)):
        if len(path) != len(preset.files):
            raise FormatError(f"preset {preset.name!r} needs {len(preset.files)} files ({', '.join(preset.files)}), "
                              f"got {len(path)}")
        return [Path(p) for p in path]
    path = Path(path)
    if path.is_dir():
        return [path / name for name in preset.files]
    if len(preset.files) > 1:
        raise FormatError(f"preset {preset.name!r} needs {', '.join(preset.files)}: pass their directory or a tuple")
    return [path]



def load_preset(name: str, path: str | os.PathLike | tuple, *, check_hash: bool = True) -> Tokenizer:
    """The named tokenizer ("gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base",
    "whisper", "whisper_v3", "whisper_en", "llama3", "llama4", "tekken", "superbpe_t180k",
    "superbpe_baseline") from local files, with its owner's pattern, special tokens and ids.

    ``path`` is the rank file (``.tiktoken``, e.g. ``whisper/assets/multilingual.tiktoken``;
    Meta's ``tokenizer.model``), the Tekken JSON file,
    or for "gpt2" the directory holding ``encoder.json`` and ``vocab.bpe`` (for the SuperBPE ones,
    ``vocab.json`` and ``merges.txt``; or a tuple of the two paths); a directory holding the
    preset's file name works for every preset.
    """
    from .gpt2_files import from_gpt2_files
    from .tekken import from_tekken
    from .tiktoken_ranks import from_tiktoken

    preset = PRESETS.get(name)
    if preset is None:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    files = _resolve_files(preset, path)
    for file, file_name in zip(files, preset.files):
        if not file.is_file():
            raise FormatError(f"{file}: no such file (preset {name!r} reads local files only, never downloads)")
        if check_hash:
            check_sha256(file, preset.sha256[file_name], preset=name)
    if preset.reader == "gpt2":
        tok = from_gpt2_files(files[0], files[1], pattern=preset.pattern, special_tokens=preset.special_tokens)
    elif preset.reader == "tekken":
        tok = from_tekken(files[0])
    else:
        tok = from_tiktoken(files[0], pattern=preset.pattern, special_tokens=preset.special_tokens)
    tok.roles = preset.roles.kept(tok.special_tokens)  # a Tekken file lists its own special tokens
    return tok
