"""Added tokens for :class:`BBPETokenizer`: matched in text the way the Rust ``tokenizers``
library matches them, numbered above every id in use, and seeded from the engine's specials.

Matching (what the ``tokenizer.json`` fast twin does, so both give the same ids): special added
tokens first, then the others in the text between them; within each group the leftmost match,
and the longest token at a position (``"<|a|>b"`` before ``"<|a|>"``); ``lstrip``/``rstrip``
take the whitespace before/after into the token, ``single_word`` needs no word character on
either side. ``split_special_tokens=True`` leaves special tokens to be encoded as text.

This module is also copied into model folders as remote code: it imports only flat sibling
modules, relatively, and third-party libraries that transformers already needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import regex
from transformers import AddedToken

PREFILTER_MAX = 32
"""Up to this many tokens in a group, a substring test per token (C speed) runs before the
regex scan: most texts hold no added token and skip the scan."""


class Span(NamedTuple):
    """A stretch of text: an added token (``token_id``) or text between them (``token_id=None``)."""

    start: int
    end: int
    token_id: int | None


class _Group(NamedTuple):
    pattern: Any  # a compiled regex: one alternative per token, longest first
    ids: list[int]  # the token id of each alternative
    contents: tuple[str, ...]  # for the substring prefilter; () when the group is large

    def may_occur(self, text: str) -> bool:
        return not self.contents or any(content in text for content in self.contents)


class AddedTokenMatcher:
    """Finds added tokens in text; built from ``{id: AddedToken}`` (transformers' added tokens)."""

    def __init__(self, added: Mapping[int, AddedToken]) -> None:
        self.size = len(added)
        specials = _group([(idx, tok) for idx, tok in added.items() if tok.special])
        others = _group([(idx, tok) for idx, tok in added.items() if not tok.special])
        # the groups to match, without and with split_special_tokens
        self._groups = ([g for g in (specials, others) if g], [others] if others else [])
        self._prefilter = tuple(_prefilter(groups) for groups in self._groups)

    def may_occur(self, text: str, split_special_tokens: bool = False) -> bool:
        """False when no added token can occur in ``text`` (a quick test; True may be wrong)."""
        contents = self._prefilter[split_special_tokens]
        return contents is None or any(content in text for content in contents)

    def spans(self, text: str, split_special_tokens: bool = False) -> list[Span]:
        """``text`` cut into added tokens and the text between them, in order; one text span
        (or none for ``""``) when no added token occurs."""
        if not text:
            return []
        groups = [g for g in self._groups[split_special_tokens] if g.may_occur(text)]
        spans = [Span(0, len(text), None)]
        for group in groups:
            cut: list[Span] = []
            for span in spans:
                piece = text[span.start : span.end]
                if span.token_id is not None or not group.may_occur(piece):
                    cut.append(span)
                    continue
                # each stretch on its own (as tokenizers does): single_word sees nothing beyond it
                base, start = span.start, 0
                for match in group.pattern.finditer(piece):
                    if match.start() > start:
                        cut.append(Span(base + start, base + match.start(), None))
                    cut.append(Span(base + match.start(), base + match.end(), group.ids[match.lastindex - 1]))
                    start = match.end()
                if start < len(piece):
                    cut.append(Span(base + start, span.end, None))
            spans = cut
        return spans


def _group(tokens: Sequence[tuple[int, AddedToken]]) -> _Group | None:
    if not tokens:
        return None
    tokens = sorted(tokens, key=lambda item: (-len(item[1].content), item[0]))
    alternatives = []
    for _, tok in tokens:
        core = f"({regex.escape(tok.content)})"
        if tok.single_word:
            core = rf"(?<!\w){core}(?!\w)"
        if tok.lstrip:
            core = rf"\s*{core}"
        if tok.rstrip:
            core = rf"{core}\s*"
        alternatives.append(f"(?:{core})")
    contents = tuple(tok.content for _, tok in tokens) if len(tokens) <= PREFILTER_MAX else ()
    return _Group(regex.compile("|".join(alternatives)), [idx for idx, _ in tokens], contents)


def _prefilter(groups: Sequence[_Group]) -> tuple[str, ...] | None:
    """Every token of ``groups`` for a substring test, or None when a group is too large for one."""
    if any(not g.contents for g in groups):
        return None
    return tuple(content for g in groups for content in g.contents)


def ids_above(new_tokens: Iterable[str | AddedToken], known: Mapping[str, int], next_id: int) -> dict[str, int]:
    """The id each new string would get: the next ids from ``next_id`` up (one more than the
    largest id in use), in order, skipping strings already ``known`` or empty.

    transformers numbers new tokens from ``len(get_vocab())``, which lands on ids in use when
    the id space has holes (cl100k, o200k).
    """
    planned: dict[str, int] = {}
    for token in new_tokens:
        content = str(token)
        if content and content not in known and content not in planned:
            planned[content] = next_id
            next_id += 1
    return planned


def initial_added_tokens(
    specials: Mapping[str, int], saved: Mapping[int, Any], normal_tokens: Mapping[int, str]
) -> dict[int, AddedToken]:
    """The added tokens to start with: those ``saved`` in a folder (flags kept), plus the engine's
    ``specials`` as special AddedTokens; ids that clash with each other or with a normal token
    (``normal_tokens``, id -> spelling) raise ValueError naming the token."""
    decoder: dict[int, AddedToken] = {}
    for idx, token in saved.items():
        token = AddedToken(**token) if isinstance(token, dict) else token
        content = str(token)
        normal = normal_tokens.get(int(idx))
        if normal is not None and normal != content:
            raise ValueError(f"added token {content!r} has id {idx}, which is the token {normal!r} in vocab.json")
        decoder[int(idx)] = token
    saved_ids = {str(token): idx for idx, token in decoder.items()}
    for content, idx in specials.items():
        if idx in decoder and str(decoder[idx]) != content:
            raise ValueError(f"special token {content!r} has id {idx}, which the saved added tokens give to "
                             f"{str(decoder[idx])!r}")
        if saved_ids.get(content, idx) != idx:
            raise ValueError(f"special token {content!r} has id {idx}, but the saved added tokens give it "
                             f"id {saved_ids[content]}")
        decoder.setdefault(idx, AddedToken(content, special=True, normalized=False))
    return decoder


def not_normalized(token: str | AddedToken, special: bool) -> AddedToken:
    """``token`` as an AddedToken with ``normalized=False`` (its other flags kept): under a
    normalizer, added tokens are found in the text as given, never in the normalized text, and
    the tokenizer.json twin must say so too."""
    if isinstance(token, str):
        return AddedToken(token, special=special, normalized=False)
    return AddedToken(token.content, single_word=token.single_word, lstrip=token.lstrip, rstrip=token.rstrip,
                      special=token.special, normalized=False)
