"""minbpe's ``.model`` files, both ways (hf_bbpe/engine/files/minbpe_model.py does the parsing and writing).

Files written by minbpe itself load as they are; a vocabulary outside minbpe's layout (permuted
byte ids, holes) is written as ``hf_bbpe v1``, which minbpe cannot read (see engine/files/minbpe_model.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from hf_bbpe.engine.files.minbpe_model import ModelFileError
from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError


def from_minbpe(path: str | os.PathLike) -> Tokenizer:
    """A tokenizer from a ``.model`` file; a bad file raises FormatError naming file and line."""
    try:
        return Tokenizer.from_file(path)
    except ModelFileError as exc:
        raise FormatError(str(exc)) from None
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:  # ids the file gives that the tokenizer rejects
        raise FormatError(f"{path}: {exc}") from None


def to_minbpe(tok: Tokenizer, file_prefix: str | os.PathLike) -> Path:
    """Write ``<prefix>.model`` and ``<prefix>.vocab`` (atomically); returns the .model path.

    A tokenizer the format cannot hold (a line break in the pattern or a special token) raises
    FormatError and writes nothing.
    """
    try:
        tok.save(file_prefix)
    except ValueError as exc:
        raise FormatError(f"{file_prefix}.model: {exc}") from None
    prefix = Path(file_prefix)
    return prefix.with_name(prefix.name + ".model")
