"""What kind of tokenizer file a path holds, judged from its content, not its name.

An importer given the wrong kind of file (a Mistral Tekken JSON or a ``vocab.json`` passed to
``from_tokenizer_json``, a rank file passed as JSON) uses this to say what the file is and which
function reads it, instead of failing on the first field it expected. A format detector for
loading any file can build on the same checks.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_bbpe.engine.files.minbpe_model import EXTENDED_HEADER, EXTENDED_HEADER_V2, MINBPE_HEADER

TOKENIZER_JSON = "tokenizer.json"
TEKKEN = "tekken"
TOKEN_ID_MAP = "token_id_map"
TRANSFORMERS_SIDE_FILE = "transformers_side_file"
TIKTOKEN = "tiktoken"
MERGES = "merges"
MINBPE = "minbpe"
SENTENCEPIECE = "sentencepiece"
BINARY = "binary"

_DESCRIPTIONS = {
    TEKKEN: ("a Mistral Tekken file (tiktoken ranks in JSON, e.g. tekken_240911.json)",
             "use conversion.load(path)"),
    TOKEN_ID_MAP: ("a token -> id map (GPT-2's encoder.json or transformers' vocab.json)",
                   "load it with its merges: conversion.from_transformers_gpt2(folder) or "
                   "conversion.from_gpt2_files(encoder.json, vocab.bpe)"),
    TRANSFORMERS_SIDE_FILE: ("a transformers settings file (tokenizer_config.json, special_tokens_map.json or "
                             "a model's config.json)", "give the tokenizer.json beside it"),
    TIKTOKEN: ("a tiktoken rank file (base64 token and rank per line)",
               "use conversion.from_tiktoken(path, pattern=...) or conversion.load(path)"),
    MERGES: ("a BPE merges file (GPT-2's vocab.bpe or transformers' merges.txt)",
             "load it with its token -> id map: conversion.from_transformers_gpt2(folder) or "
             "conversion.from_gpt2_files(encoder.json, vocab.bpe)"),
    MINBPE: ("a minbpe .model file", "use conversion.from_minbpe(path)"),
    SENTENCEPIECE: ("a SentencePiece model (its protobuf starts with a piece list)", "SentencePiece is not "
                    "byte-level BPE and is not supported (hf-bbpe view and compare show it)"),
    BINARY: ("a binary file", "the formats this package reads are text: tiktoken ranks, Tekken JSON, "
             "tokenizer.json, GPT-2's encoder.json + vocab.bpe, a minbpe .model"),
}


def json_kind(data: Any) -> str | None:
    """The kind of a parsed JSON document, or None if it is none of the known kinds."""
    if not isinstance(data, Mapping):
        return None
    if isinstance(data.get("model"), Mapping):
        return TOKENIZER_JSON
    vocab = data.get("vocab")
    if isinstance(data.get("config"), Mapping) and isinstance(vocab, list) and \
            all(isinstance(entry, Mapping) and "token_bytes" in entry for entry in vocab[:10]):
        return TEKKEN
    if data and all(isinstance(value, int) and not isinstance(value, bool) for value in data.values()):
        return TOKEN_ID_MAP
    if {"tokenizer_class", "added_tokens_decoder", "model_max_length", "model_type", "architectures",
            "bos_token", "eos_token", "additional_special_tokens"} & set(data):
        return TRANSFORMERS_SIDE_FILE
    return None


def text_kind(path: str | os.PathLike) -> str | None:
    """The kind of a file that is not JSON, from its first line, or None if unknown."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    head = head.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark, which tiktoken reads past
    if b"\0" in head or not _is_utf8_prefix(head):
        return SENTENCEPIECE if looks_like_sentencepiece(head) else BINARY
    line = head.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", errors="replace")
    if line in (MINBPE_HEADER, EXTENDED_HEADER, EXTENDED_HEADER_V2):
        return MINBPE
    if line.startswith("#version"):
        return MERGES
    words = line.split()
    if len(words) == 2 and words[1].lstrip("+").replace("_", "").isdigit() and _is_base64(words[0]):
        return TIKTOKEN  # what tiktoken's load_tiktoken_bpe reads: base64, then an int() rank
    fields = line.split(" ")
    if len(fields) == 2 and all(fields):
        return MERGES
    return None


def describe_kind(kind: str) -> str:
    """What a file of ``kind`` is, in words (``"a tiktoken rank file (...)"``)."""
    return _DESCRIPTIONS[kind][0] if kind in _DESCRIPTIONS else "no tokenizer file this package knows"


def wrong_kind_message(path: str | os.PathLike, kind: str | None, expected: str) -> str | None:
    """``"PATH: this is <what>, not <expected>; <how to load it>"`` for a known kind other than
    ``expected``, else None."""
    if kind is None or kind == expected or kind not in _DESCRIPTIONS:
        return None
    what, how = _DESCRIPTIONS[kind]
    return f"{Path(path)}: this is {what}, not a {expected}; {how}"


def looks_like_sentencepiece(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts like a SentencePiece ``ModelProto``: field 1
    (the piece list), length-delimited, whose first entry is a ``SentencePiece`` message made of
    nothing but its fields 1 (the piece, UTF-8), 2 (the score, a float) and 3 (the type, a varint)."""
    try:
        tag, pos = _varint(head, 0)
        length, pos = _varint(head, pos)
        end = pos + length
        if tag != 0x0A or end > len(head):
            return False
        has_piece = False
        while pos < end:
            tag, pos = _varint(head, pos)
            if tag == 0x0A:  # 1: piece, length-delimited
                size, pos = _varint(head, pos)
                head[pos : pos + size].decode("utf-8")
                pos += size
                has_piece = True
            elif tag == 0x15:  # 2: score, 32-bit
                pos += 4
            elif tag == 0x18:  # 3: type, varint
                _, pos = _varint(head, pos)
            else:
                return False
        return has_piece and pos == end
    except (IndexError, UnicodeDecodeError):
        return False


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The protobuf varint at ``pos`` and the position after it (IndexError past the end)."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _is_utf8_prefix(data: bytes) -> bool:
    """True if ``data`` is UTF-8 except perhaps a character cut at its end."""
    for cut in range(4):
        try:
            data[: len(data) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False
