"""Reading the converters' input files: every failure is a FormatError naming the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .errors import FormatError


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of ``path``; a file that cannot be read raises FormatError saying why."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_text(path: str | os.PathLike) -> str:
    """``path`` as UTF-8 text (newlines untouched)."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: not UTF-8 ({exc})") from None


def read_json_object(path: str | os.PathLike, what: str = "a JSON object") -> dict:
    """Parse a JSON file whose top level must be an object; errors name the line, and a key
    that appears twice (which ``json`` would silently overwrite) is an error."""
    path = Path(path)
    text = read_text(path)

    def no_duplicates(pairs: list) -> dict:
        result = {}
        for key, value in pairs:
            if key in result:
                raise FormatError(f"{path}: key {key!r} appears twice")
            result[key] = value
        return result

    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}:{exc.lineno}: invalid JSON (truncated?): {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, dict):
        raise FormatError(f"{path}:1: expected {what}, got a JSON {type(data).__name__}")
    return data
