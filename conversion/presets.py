"""OpenAI's encodings by name, from local files: the reference's pattern and special tokens.

``load_preset(name, path)`` never downloads. It checks the file's sha256 against the hash
tiktoken itself checks, so a wrong or damaged file is reported instead of silently giving
other ids (``check_hash=False`` skips that, e.g. for a deliberately edited file).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hf_bbpe.patterns import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, O200K_SPLIT_PATTERN
from hf_bbpe.tokenizer import Tokenizer

from .errors import FormatError
from .reading import read_bytes


@dataclass(frozen=True)
class Preset:
    name: str
    pattern: str
    special_tokens: Mapping[str, int]
    files: tuple[str, ...]
    """File names, in the order ``path`` gives them when it is a tuple."""
    sha256: Mapping[str, str] = field(default_factory=dict)
    """Known sha256 of each file (tiktoken's ``expected_hash``)."""


_EOT = "<|endoftext|>"

PRESETS: dict[str, Preset] = {
    "gpt2": Preset(
        "gpt2", GPT2_SPLIT_PATTERN, {_EOT: 50256}, ("encoder.json", "vocab.bpe"),
        {"encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
         "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"},
    ),
    "r50k_base": Preset(
        "r50k_base", GPT2_SPLIT_PATTERN, {_EOT: 50256}, ("r50k_base.tiktoken",),
        {"r50k_base.tiktoken": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"},
    ),
    "p50k_base": Preset(
        "p50k_base", GPT2_SPLIT_PATTERN, {_EOT: 50256}, ("p50k_base.tiktoken",),
        {"p50k_base.tiktoken": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"},
    ),
    "cl100k_base": Preset(
        "cl100k_base", GPT4_SPLIT_PATTERN,
        {_EOT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
         "<|endofprompt|>": 100276},
        ("cl100k_base.tiktoken",),
        {"cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"},
    ),
    "o200k_base": Preset(
        "o200k_base", O200K_SPLIT_PATTERN, {_EOT: 199999, "<|endofprompt|>": 200018}, ("o200k_base.tiktoken",),
        {"o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"},
    ),
}


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


def check_sha256(path: Path, expected: str, *, preset: str | None = None) -> None:
    """Raise FormatError if ``path``'s sha256 is not ``expected``; when it is another preset's
    known file, the message names that preset (``preset`` is the one asked for)."""
    actual = hashlib.sha256(read_bytes(path)).hexdigest()
    if actual == expected:
        return
    asked = next((f"{preset}'s {name}" for name, known in PRESETS[preset].sha256.items() if known == expected),
                 f"{preset}'s file") if preset in PRESETS else "the expected file"
    for other in PRESETS.values():
        for file_name, known in other.sha256.items():
            if known == actual and other.name != preset:
                where = "its folder" if len(other.files) > 1 else "this file"
                raise FormatError(f"{path}: this is {other.name}'s {file_name} (by its sha256), not {asked}; "
                                  f"load it with load_preset({other.name!r}, {where})")
    raise FormatError(f"{path}: sha256 {actual} is not the known {expected} ({asked}); this is not the "
                      "reference file (pass check_hash=False to load it anyway)")


def load_preset(name: str, path: str | os.PathLike | tuple, *, check_hash: bool = True) -> Tokenizer:
    """The named OpenAI encoding ("gpt2", "r50k_base", "p50k_base", "cl100k_base",
    "o200k_base") from local files, with tiktoken's pattern, special tokens and ids.

    ``path`` is the ``.tiktoken`` file, or for "gpt2" the directory holding ``encoder.json`` and
    ``vocab.bpe`` (or a tuple of the two paths).
    """
    from .gpt2_files import from_gpt2_files
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
    if name == "gpt2":
        return from_gpt2_files(files[0], files[1], pattern=preset.pattern, special_tokens=preset.special_tokens)
    return from_tiktoken(files[0], pattern=preset.pattern, special_tokens=preset.special_tokens)
