"""Superword tokens (SuperBPE, Liu et al., COLM 2025): BPE whose last merges may span words.

Plain BPE never merges across a space, because its split pattern cuts text into words first.
SuperBPE trains in two stages: stage 1 is plain BPE with the usual pattern up to a transition
point; stage 2 keeps every stage-1 merge and continues with a pattern that does not cut at spaces
(:data:`~patterns.SUPERBPE_STAGE2_SPLIT_PATTERN` by default, used as ``tokenizers``'
``Split(pattern, "isolated")``: its matches, numbers, runs of punctuation and runs of spaces, and
the text between them are the chunks), so merges such as ``" of"`` + ``" the"`` become tokens.
The tokenizer then encodes with the stage-2 chunking and BPE in merge order, as ``tokenizers``
runs the paper's files.

Stage 2 refuses a merge whose token would hold more than ``max_words`` words, or a colon followed
by a space, with the rules of the paper's trainer (the ``tokenizers`` fork its repository uses):
words are the non-empty pieces between space bytes (``" of the"`` is two words, ``"a\\nb"`` one),
and the colon rule is the two bytes ``": "`` anywhere in the token. Two rules of this library's
own: no stage-2 token repeats the bytes of an existing token (the paper's trainer gives such a
merge the existing id; here it is never made, so every id has its own bytes), and every stage-1
merge and id is kept whatever the stage-2 corpus holds (the paper's trainer drops inherited merges
whose pair its stage-2 data never shows: its issue 12).

:class:`SuperwordConfig` is what ``Tokenizer.train(..., superwords=...)`` and
``Tokenizer.extend(..., superwords=...)`` take (see engine/training/api.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import regex

from ..chunking.chunking import Chunking
from ..chunking.patterns import SUPERBPE_STAGE2_SPLIT_PATTERN, resolve_pattern


class _Chunked(Protocol):
    """A tokenizer, as far as :meth:`SuperwordConfig.set_chunking` needs one."""

    chunking: Chunking

    @property
    def normalizer(self) -> Any: ...


class _Vocabulary(Protocol):
    """A tokenizer, as far as :func:`count_superwords` needs one."""

    @property
    def vocab(self) -> dict[int, bytes]: ...

    @property
    def special_tokens(self) -> dict[str, int]: ...

DEFAULT_TRANSITION = 0.9
"""Stage 1's share of the vocabulary when no transition is given: the paper's main tokenizer
(t = 180K of 200K tokens)."""


@dataclass(frozen=True)
class SuperwordConfig:
    """How to learn superword tokens (see the module doc).

    ``transition``: where stage 1 (plain BPE) hands over to stage 2, for ``train``: a vocabulary
    size (an int, the paper's *t*: ``transition=180_000`` of ``vocab_size=200_000``), or a share of
    ``vocab_size`` (a float between 0 and 1); default 0.9. ``extend`` takes none: the whole
    tokenizer being extended is stage 1.

    ``pattern``: stage 2's split pattern, a registered name or a regex, used as
    ``Split(pattern, "isolated")`` (the text between matches is a chunk too). ``max_words``: the
    most words a token may span (None: no limit). ``allow_colon_space``: let tokens hold ``": "``
    (the paper forbids it, so that ``"key: value"`` keeps the colon apart from what follows).
    """

    transition: int | float | None = None
    pattern: str = SUPERBPE_STAGE2_SPLIT_PATTERN
    max_words: int | None = 4
    allow_colon_space: bool = False

    def __post_init__(self) -> None:
        transition = self.transition
        if transition is not None and (isinstance(transition, bool) or not isinstance(transition, (int, float))):
            raise TypeError(f"transition must be a vocabulary size (int) or a share of it (float), got {transition!r}")
        if isinstance(transition, float) and not 0 < transition < 1:
            raise ValueError(f"a transition given as a share of the vocabulary must be between 0 and 1, got {transition}")
        if isinstance(transition, int) and transition < 256:
            raise ValueError(f"transition must be a vocabulary size >= 256 (the byte tokens), got {transition}")
        if self.max_words is not None and (isinstance(self.max_words, bool) or not isinstance(self.max_words, int)
                                           or self.max_words < 1):
            raise ValueError(f"max_words must be an int >= 1 or None, got {self.max_words!r}")
        if not isinstance(self.pattern, str) or not self.pattern:
            raise ValueError(f"pattern must be a split pattern (a registered name or a regex), got {self.pattern!r}")
        object.__setattr__(self, "pattern", resolve_pattern(self.pattern))

    def stage1_vocab_size(self, vocab_size: int) -> int:
        """The vocabulary size at which ``train`` moves to stage 2, for a final ``vocab_size``."""
        transition = DEFAULT_TRANSITION if self.transition is None else self.transition
        if isinstance(transition, float):
            return max(256, round(vocab_size * transition))
        if transition > vocab_size:
            raise ValueError(f"the transition ({transition}) is above vocab_size ({vocab_size})")
        return transition

    def allows(self, token: bytes) -> bool:
        """Whether stage 2 may make a token of these bytes."""
        if not self.allow_colon_space and b": " in token:
            return False
        if self.max_words is not None and sum(1 for word in token.split(b" ") if word) > self.max_words:
            return False
        return True

    def set_chunking(self, tok: _Chunked) -> None:
        """Give ``tok`` stage 2's chunking, ``Split(pattern, "isolated")`` (its normalizer is
        kept; see :meth:`Chunking.isolated <hf_bbpe.engine.chunking.chunking.Chunking.isolated>`)."""
        tok.chunking = Chunking.isolated(self.pattern, tok.normalizer)


_SPAN = regex.compile(r"\S \S")


def spans_words(token: bytes) -> bool:
    """Whether a token spans words: a non-space character, a space, a non-space character in the
    characters its bytes decode to (no pattern that cuts text at spaces makes such a token; read
    as text, so that a run of spaces such as ``"\u3000 \u3000"``, which GPT-2's pattern makes,
    is not one)."""
    return b" " in token and _SPAN.search(token.decode("utf-8", "ignore")) is not None


def count_superwords(tok: _Vocabulary) -> int:
    """How many of ``tok``'s normal tokens span words (:func:`spans_words`)."""
    specials = set(tok.special_tokens.values())
    return sum(1 for idx, token in tok.vocab.items() if idx not in specials and spans_words(token))


def superword_config(superwords: SuperwordConfig | bool | None) -> SuperwordConfig | None:
    """``train``/``extend``'s ``superwords=`` as a config: True means the defaults."""
    if superwords is None or superwords is False:
        return None
    if superwords is True:
        return SuperwordConfig()
    if not isinstance(superwords, SuperwordConfig):
        raise TypeError(f"superwords must be a SuperwordConfig (or True for its defaults), got {superwords!r}")
    return superwords
