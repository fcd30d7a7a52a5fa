"""Added tokens for :class:`BBPETokenizer`: matched in text the way the Rust ``tokenizers``
library matches them, numbered above every id in use, and seeded from the engine's specials.

Matching (what the ``tokenizer.json`` fast twin does, so both give the same ids), in two passes
as ``tokenizers`` makes them: added tokens not marked ``normalized`` first, in the text as given;
then, in each stretch of text between them, normalized on its own by the tokenizer's
normalizer, the tokens marked ``normalized``, by their normalized spelling. Within a pass the
leftmost match, and the longest token at a position (``"<|a|>b"`` before ``"<|a|>"``);
``lstrip``/``rstrip`` take the whitespace before/after into the token, ``single_word`` needs no
word character on either side. ``split_special_tokens=True`` leaves the special tokens it
matches as text.

This module is also copied into model folders as remote code: it imports only flat sibling
modules, relatively, and third-party libraries that transformers already needs.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import regex
from transformers import AddedToken

from ..engine.chunking.normalizers import Alignment, Normalizer, original_span
from ..engine.encoding.special_tokens import RESERVED_TOKEN

PREFILTER_MAX = 32
"""Up to this many tokens in a group, a substring test per token (C speed) runs before the
regex scan: most texts hold no added token and skip the scan."""


class Span(NamedTuple):
    """A stretch of text: an added token (``token_id``) or text between them (``token_id=None``).

    Text that the second pass normalized carries that ``normalized`` text (to be encoded as it
    is) and its ``alignment`` (each character's span in the original text); ``start:end`` is
    then where it comes from in the original.
    """

    start: int
    end: int
    token_id: int | None
    normalized: str | None = None
    alignment: Alignment | None = None


class _Group(NamedTuple):
    pattern: Any  # a compiled regex: one alternative per token, longest first
    ids: list[int]  # the token id of each alternative
    special: frozenset[int]  # the alternatives (1-based group numbers) that are special tokens
    contents: tuple[str, ...]  # for the substring prefilter; () when the group is large

    def may_occur(self, text: str) -> bool:
        return not self.contents or any(content in text for content in self.contents)

    def spans(self, text: str, base: int, split_special_tokens: bool) -> list[Span]:
        """``text`` (at ``base`` in the original) cut at this group's tokens; each stretch on its
        own, as ``tokenizers`` does (single_word sees nothing beyond it)."""
        cut: list[Span] = []
        start = 0
        for match in self.pattern.finditer(text):
            if split_special_tokens and match.lastindex in self.special:
                continue  # left as text, as tokenizers skips the match
            if match.start() > start:
                cut.append(Span(base + start, base + match.start(), None))
            cut.append(Span(base + match.start(), base + match.end(), self.ids[match.lastindex - 1]))
            start = match.end()
        if start < len(text):
            cut.append(Span(base + start, base + len(text), None))
        return cut


class AddedTokenMatcher:
    """Finds added tokens in text; built from ``{id: AddedToken}`` (transformers' added tokens)
    and the tokenizer's normalizer (None: tokens marked ``normalized`` are found as written)."""

    def __init__(self, added: Mapping[int, AddedToken], normalizer: Normalizer | None = None) -> None:
        self.size = len(added)
        self._normalizer = normalizer
        normalize = normalizer.normalize if normalizer is not None else None
        self._first = _group([(idx, tok) for idx, tok in added.items() if not tok.normalized])
        self._second = _group([(idx, tok) for idx, tok in added.items() if tok.normalized], normalize)
        raw = [g for g in (self._first, None if normalizer is not None else self._second) if g]
        late_unseen = normalizer is not None and self._second is not None  # its spellings are not the text's
        self._prefilter = None if late_unseen else _prefilter(raw)

    def may_occur(self, text: str, split_special_tokens: bool = False) -> bool:
        """False when no added token can occur in ``text`` (a quick test; True may be wrong)."""
        contents = self._prefilter
        return contents is None or any(content in text for content in contents)

    def spans(self, text: str, split_special_tokens: bool = False) -> list[Span]:
        """``text`` cut into added tokens and the text between them, in order; one text span
        (or none for ``""``) when no added token occurs."""
        if not text:
            return []
        spans = [Span(0, len(text), None)]
        first = self._first
        if first is not None and first.may_occur(text):
            spans = first.spans(text, 0, split_special_tokens)
        second = self._second
        if second is None:
            return spans
        cut: list[Span] = []
        for span in spans:
            if span.token_id is not None:
                cut.append(span)
            elif self._normalizer is None:
                piece = text[span.start : span.end]
                cut += second.spans(piece, span.start, split_special_tokens) if second.may_occur(piece) else [span]
            else:
                cut += self._normalized_spans(text, span, second, split_special_tokens)
        return cut

    def _normalized_spans(self, text: str, span: Span, group: _Group, split_special_tokens: bool) -> list[Span]:
        """The second pass on one stretch: normalized, cut at ``group``'s tokens, mapped back."""
        piece = text[span.start : span.end]
        normalized = self._normalizer.normalize(piece)
        parts = group.spans(normalized, 0, split_special_tokens) if group.may_occur(normalized) else []
        if all(part.token_id is None for part in parts):  # none found: the stretch as given (normalized alike)
            return [span]
        normalized, alignment = self._normalizer.normalize_with_alignment(piece)
        alignment = [(a + span.start, b + span.start) for a, b in alignment]
        out: list[Span] = []
        for part in parts:
            start, end = original_span(alignment, part.start, part.end)
            if part.token_id is not None:
                out.append(Span(start, end, part.token_id))
            else:
                out.append(Span(start, end, None, normalized[part.start : part.end], alignment[part.start : part.end]))
        return out


def _group(tokens: Sequence[tuple[int, AddedToken]], normalize: Any = None) -> _Group | None:
    """The tokens as one regex; ``normalize``: each is found by its normalized content."""
    if not tokens:
        return None
    spelled = [(idx, tok, normalize(tok.content) if normalize else tok.content) for idx, tok in tokens]
    spelled = sorted((item for item in spelled if item[2]), key=lambda item: (-len(item[2]), item[0]))
    if not spelled:
        return None
    alternatives = []
    for _, tok, content in spelled:
        core = f"({regex.escape(content)})"
        if tok.single_word:
            core = rf"(?<!\w){core}(?!\w)"
        if tok.lstrip:
            core = rf"\s*{core}"
        if tok.rstrip:
            core = rf"{core}\s*"
        alternatives.append(f"(?:{core})")
    contents = tuple(content for _, _, content in spelled) if len(spelled) <= PREFILTER_MAX else ()
    special = frozenset(i for i, (_, tok, _) in enumerate(spelled, 1) if tok.special)
    return _Group(regex.compile("|".join(alternatives)), [idx for idx, _, _ in spelled], special, contents)


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
    specials: Mapping[str, int], saved: Mapping[int, Any], normal_tokens: Mapping[int, str],
    normalized: Collection[str] = (),
) -> dict[int, AddedToken]:
    """The added tokens to start with: those ``saved`` in a folder (flags kept), plus the engine's
    ``specials`` as special AddedTokens (marked ``normalized`` if in ``normalized``, the engine's
    normalized special tokens); ids that clash with each other or with a normal token
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
        decoder.setdefault(idx, AddedToken(content, special=True, normalized=content in normalized))
    return decoder


MAX_RESERVED_FILL = 65536
"""At most this many unused ids are filled; a tokenizer with more encodes, but is not saved."""


def reserved_tokens_for_holes(normal_tokens: Mapping[int, str], added: Mapping[int, Any]) -> dict[int, AddedToken]:
    """A special AddedToken for every id below the largest id in use that neither ``normal_tokens``
    (id -> spelling) nor ``added`` (id -> token) holds, named ``<|reserved_special_token_N|>`` with
    N counting up in id order and skipping names in use, as Llama 3 names its reserved tokens.

    An id space with holes (converted cl100k and o200k, special tokens above a gap) has a length
    that depends on who counts: largest id + 1 here, the number of entries in ``tokenizers`` (the
    fast twin) and in the readers that count vocabulary entries (MLX-LM's detokenizer, Ollama,
    ``resize_token_embeddings(len(tokenizer))`` after loading the twin). With every id filled, all
    of them count the same. None when more than :data:`MAX_RESERVED_FILL` ids are unused
    (:func:`refuse_id_holes` then refuses to save the tokenizer).
    """
    used, top = _ids_in_use(normal_tokens, added)
    if not 0 < top + 1 - len(used) <= MAX_RESERVED_FILL:
        return {}
    taken = set(normal_tokens.values()).union(str(token) if not isinstance(token, dict) else token["content"]
                                              for token in added.values())
    fillers: dict[int, AddedToken] = {}
    number = 0
    for idx in range(top):
        if idx in used:
            continue
        while RESERVED_TOKEN.format(number) in taken:
            number += 1
        fillers[idx] = AddedToken(RESERVED_TOKEN.format(number), special=True, normalized=False)
        number += 1
    return fillers


def refuse_id_holes(normal_tokens: Mapping[int, str], added: Mapping[int, Any]) -> None:
    """ValueError (one line) if ids below the largest one are unused: a saved folder has none."""
    used, top = _ids_in_use(normal_tokens, added)
    missing = top + 1 - len(used)
    if missing > 0:
        first = next(idx for idx in range(top + 1) if idx not in used)
        raise ValueError(f"{missing} ids below the largest id {top} are unused (the first is {first}); a saved folder "
                         f"fills each with a reserved special token, at most {MAX_RESERVED_FILL}: give the special "
                         "tokens ids next to the vocabulary")


def _ids_in_use(normal_tokens: Mapping[int, str], added: Mapping[int, Any]) -> tuple[set[int], int]:
    used = set(normal_tokens).union(int(idx) for idx in added)
    return used, max(used, default=-1)


def not_normalized(token: str | AddedToken, special: bool) -> AddedToken:
    """``token`` as an AddedToken with ``normalized=False`` (its other flags kept): under a
    normalizer, added tokens are found in the text as given, never in the normalized text, and
    the tokenizer.json twin must say so too."""
    if isinstance(token, str):
        return AddedToken(token, special=special, normalized=False)
    return AddedToken(token.content, single_word=token.single_word, lstrip=token.lstrip, rstrip=token.rstrip,
                      special=token.special, normalized=False)
