"""One interface for every tokenizer that ``view`` and ``compare`` put side by side.

``view`` and ``compare`` need two things of a tokenizer: the ids of a text, exactly as the
tokenizer's own library encodes it, and each token as a reader would see it. This module gives
that interface (:class:`ViewTokenizer`) three implementations:

* :class:`EngineTokenizer`: ours, and every format ``conversion.load`` reads;
* :class:`HFTokenizersTokenizer`: any ``tokenizer.json`` (BPE, WordPiece, Unigram) through the
  ``tokenizers`` library, for what the engine cannot load;
* :class:`SentencePieceTokenizer`: a sentencepiece ``.model`` through the ``sentencepiece``
  library, an optional extra (``pip install hf_bbpe[sentencepiece]``), imported only here and
  only when such a file is opened.

A token is a :class:`Piece`: the bytes it stands for in the text, and for pieces that are not
plain bytes the label a reader knows (``▁the`` for sentencepiece, ``##ing`` for WordPiece).
Byte-fallback tokens (``<0xE2>``) are bytes without a label, so a character spelled by several of
them is drawn as that character, like a character GPT-2 splits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..engine.chunking.byte_unicode import unicode_to_bytes
from ..engine.tokenizer import Tokenizer

SENTENCEPIECE_SPACE = "\u2581"  # ▁, sentencepiece's (and Metaspace's) mark for a space
SENTENCEPIECE_EXTRA = "sentencepiece"
_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


@dataclass(frozen=True)
class Piece:
    """One token for display: the bytes it stands for, and a label when those bytes are not how
    a reader knows the token (``▁the``, ``##ing``); None means "show the bytes as text"."""

    data: bytes
    label: str | None = None
    special: bool = False
    fallback: bool = False  # a byte-fallback token (<0xE2>): the vocabulary lacks the character


class ViewTokenizer(Protocol):
    """What ``view`` and ``compare`` use of a tokenizer."""

    kind: str  # "hf_bbpe", "tokenizers", "sentencepiece": shown in tables

    @property
    def special_tokens(self) -> Mapping[str, int]:
        """Special-token strings that the tokenizer recognizes in text."""

    def encode(self, text: str, *, specials: bool = True) -> list[int]:
        """The ids of ``text`` as the tokenizer's own library encodes it, adding no BOS/EOS;
        ``specials=False`` encodes special-token strings as text where the library can."""

    def piece(self, token_id: int) -> Piece:
        """Token ``token_id`` for display (a ValueError naming the id if there is none)."""


class EngineTokenizer:
    """Our engine :class:`~hf_bbpe.engine.tokenizer.Tokenizer` (also every format conversion.load reads)."""

    kind = "hf_bbpe"

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._special_ids = set(tokenizer.special_tokens.values())

    @property
    def special_tokens(self) -> Mapping[str, int]:
        return self.tokenizer.special_tokens

    def encode(self, text: str, *, specials: bool = True) -> list[int]:
        if specials:
            return self.tokenizer.encode(text, allowed_special="all", disallowed_special=())
        return self.tokenizer.encode_ordinary(text)

    def piece(self, token_id: int) -> Piece:
        return Piece(self.tokenizer.decode_single_token_bytes(token_id), special=token_id in self._special_ids)


def as_view_tokenizer(tokenizer: Tokenizer | ViewTokenizer) -> ViewTokenizer:
    """``tokenizer`` as a :class:`ViewTokenizer` (an engine Tokenizer gets wrapped)."""
    return EngineTokenizer(tokenizer) if isinstance(tokenizer, Tokenizer) else tokenizer


def _fallback_byte(piece: str) -> bytes | None:
    match = _BYTE_FALLBACK.match(piece)
    return bytes([int(match.group(1), 16)]) if match else None


class HFTokenizersTokenizer:
    """A ``tokenizer.json`` read by the ``tokenizers`` library: BPE, WordPiece or Unigram.

    Byte-level tokens (``Ġthe``) become their bytes; Metaspace tokens keep their ``▁`` as label
    and stand for a space; ``<0xE2>`` tokens of a byte-fallback model are bytes.
    """

    kind = "tokenizers"

    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer as RustTokenizer

        self.path = Path(path)
        self.backend = RustTokenizer.from_file(str(self.path))
        config = json.loads(self.path.read_text(encoding="utf-8"))
        self._byte_level = "ByteLevel" in json.dumps([config.get("pre_tokenizer"), config.get("decoder")])
        model = config.get("model") or {}
        self._byte_fallback = bool(model.get("byte_fallback"))
        added = self.backend.get_added_tokens_decoder()
        self._special_tokens = {token.content: idx for idx, token in added.items() if token.special}
        self._added_ids = set(added)
        self._to_byte = unicode_to_bytes()

    @property
    def special_tokens(self) -> Mapping[str, int]:
        return self._special_tokens

    def encode(self, text: str, *, specials: bool = True) -> list[int]:
        # the library always matches added tokens in text; it has no switch to read them as text
        return self.backend.encode(text, add_special_tokens=False).ids

    def piece(self, token_id: int) -> Piece:
        token = self.backend.id_to_token(token_id)
        if token is None:
            raise ValueError(f"{self.path}: no token has id {token_id}")
        if token_id in self._added_ids:
            return Piece(token.encode("utf-8"), special=token in self._special_tokens)
        if self._byte_fallback and (raw := _fallback_byte(token)) is not None:
            return Piece(raw, fallback=True)
        if self._byte_level and all(ch in self._to_byte for ch in token):
            return Piece(bytes(self._to_byte[ch] for ch in token))
        return Piece(token.replace(SENTENCEPIECE_SPACE, " ").encode("utf-8"), label=token)


def import_sentencepiece():
    """The ``sentencepiece`` module, or an ImportError naming the extra that installs it."""
    try:
        import sentencepiece
    except ImportError:
        raise ImportError(f"reading a sentencepiece .model needs the sentencepiece library: "
                          f"pip install 'hf_bbpe[{SENTENCEPIECE_EXTRA}]'") from None
    return sentencepiece


class SentencePieceTokenizer:
    """A sentencepiece ``.model`` (Llama 2, Mistral v1-v3...) read by the ``sentencepiece`` library.

    ``encode`` is ``SentencePieceProcessor.encode`` (no BOS/EOS added); control tokens such as
    ``<s>`` are never matched in text, which is how sentencepiece encodes.
    """

    kind = "sentencepiece"

    def __init__(self, path: str | Path) -> None:
        spm = import_sentencepiece()
        self.path = Path(path)
        self.backend = spm.SentencePieceProcessor(model_file=str(self.path))

    @property
    def special_tokens(self) -> Mapping[str, int]:
        return {}

    def encode(self, text: str, *, specials: bool = True) -> list[int]:
        return self.backend.encode(text)

    def piece(self, token_id: int) -> Piece:
        if not 0 <= token_id < self.backend.get_piece_size():
            raise ValueError(f"{self.path}: no token has id {token_id}")
        token = self.backend.id_to_piece(token_id)
        if self.backend.is_byte(token_id):
            return Piece(_fallback_byte(token) or token.encode("utf-8"), fallback=True)
        if self.backend.is_control(token_id) or self.backend.is_unknown(token_id):
            return Piece(token.encode("utf-8"), special=True)
        return Piece(token.replace(SENTENCEPIECE_SPACE, " ").encode("utf-8"), label=token)


def is_sentencepiece_model(path: str | Path) -> bool:
    """True for a file that looks like a sentencepiece model: a protobuf whose first field is the
    piece list (conversion.file_kinds tells; Meta's tiktoken ``tokenizer.model`` and minbpe
    ``.model`` files are text)."""
    from conversion.file_kinds import SENTENCEPIECE, text_kind

    return text_kind(path) == SENTENCEPIECE

