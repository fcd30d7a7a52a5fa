"""Unicode normalizers (NFC, NFD, NFKC, NFKD and a sequence of them), applied as ``tokenizers`` does.

A normalizer rewrites the text before it is split into chunks: ``encode`` normalizes each stretch
of text between special tokens, then pre-tokenizes it (the order of ``tokenizers``). The JSON form
of a normalizer is ``tokenizers``' own (``{"type": "NFC"}``, ``{"type": "Sequence",
"normalizers": [...]}``); it is what tokenizer.json, tokenizer_config.json and the ``.model``
header store.

**Exactly as tokenizers.** ``tokenizers`` normalizes with Unicode 9.0 tables; Python's
``unicodedata`` is newer (Unicode 14.0 in Python 3.11). The two agree on every character that
Unicode 9.0 normalizes (normalization is stable across versions), and differ only on characters
assigned later that a newer version decomposes, reorders or composes, which ``tokenizers`` leaves
as they are (226 code points under Unicode 14.0, e.g. U+32FF SQUARE ERA NAME REIWA, U+A7F2, the
U+10780 modifier letters, the Dives Akuru vowel signs). The set of characters ``tokenizers``
acts on is read from ``tokenizers`` itself (unicode_tables.py); text is normalized by
``unicodedata``, and a character outside that set which ``unicodedata`` would act on is kept
as it is and cut the text in two, exactly what an unknown character (a starter without a
decomposition) does under Unicode 9.0. Tests compare every code point and random marked text
with ``tokenizers``.

**Offsets.** :meth:`Normalizer.normalize_with_alignment` also gives, for each character of the
normalized text, the span of the original text it comes from, computed as ``tokenizers``
computes its alignments (a composed character points at its first component, a character that a
decomposition adds shares the span of the one before it), so offsets mapped through it equal the
offsets of the ``tokenizers`` twin. :func:`original_span` maps a span of normalized text back.

This module is copied into saved model folders as remote code: it imports flat sibling
modules only, relatively, and the standard library.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import regex

from .unicode_tables import code_points

FORMS = ("NFC", "NFD", "NFKC", "NFKD")

Alignment = list[tuple[int, int]]
"""For each character of a normalized text, the ``(start, end)`` span of the original text."""


class Normalizer:
    """Base class: ``normalize(text) -> text``, with alignments, and a JSON form."""

    def normalize(self, text: str) -> str:
        raise NotImplementedError

    def normalize_with_alignment(self, text: str, alignment: Alignment | None = None) -> tuple[str, Alignment]:
        """The normalized text and, per normalized character, its span in ``text``.

        ``alignment`` gives the spans of ``text``'s own characters in an earlier original (how
        a sequence threads them); the default is ``text`` itself.
        """
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Normalizer) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(repr(self))


class UnicodeNormalizer(Normalizer):
    """One of the four Unicode normalization forms, as ``tokenizers``' NFC/NFD/NFKC/NFKD."""

    def __init__(self, form: str) -> None:
        if form not in FORMS:
            raise ValueError(f"unknown normalization form {form!r}; expected one of {', '.join(FORMS)}")
        self.form = form
        self._compose = form in ("NFC", "NFKC")
        self._compat = form in ("NFKC", "NFKD")

    def normalize(self, text: str) -> str:
        # unicodedata's verdict that text is normalized holds for tokenizers too: every change
        # tokenizers makes, unicodedata makes (it knows a superset of the characters)
        if text.isascii() or unicodedata.is_normalized(self.form, text):
            return text
        unknown = _unknown_to_tokenizers()
        if not unknown.search(text):
            return unicodedata.normalize(self.form, text)
        # characters tokenizers does not know are inert starters there: they cut the text
        parts = unknown.split(text)
        parts[::2] = [unicodedata.normalize(self.form, part) for part in parts[::2]]
        return "".join(parts)

    def normalize_with_alignment(self, text: str, alignment: Alignment | None = None) -> tuple[str, Alignment]:
        changes = _decompose(text, self._compat)
        if self._compose:
            changes = _recompose(changes)
        before = [(i, i + 1) for i in range(len(text))] if alignment is None else alignment
        return "".join(ch for ch, _ in changes), _align(changes, before)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.form}

    def __repr__(self) -> str:
        return f"{self.form}()"


class NormalizerSequence(Normalizer):
    """Normalizers applied one after the other (``tokenizers``' ``normalizers.Sequence``)."""

    def __init__(self, normalizers: Iterable[Normalizer]) -> None:
        self.normalizers = list(normalizers)
        for step in self.normalizers:
            if not isinstance(step, Normalizer):
                raise TypeError(f"a normalizer sequence holds normalizers, got {step!r}")

    def normalize(self, text: str) -> str:
        for step in self.normalizers:
            text = step.normalize(text)
        return text

    def normalize_with_alignment(self, text: str, alignment: Alignment | None = None) -> tuple[str, Alignment]:
        if alignment is None:
            alignment = [(i, i + 1) for i in range(len(text))]
        for step in self.normalizers:
            text, alignment = step.normalize_with_alignment(text, alignment)
        return text, alignment

    def to_json(self) -> dict[str, Any]:
        return {"type": "Sequence", "normalizers": [step.to_json() for step in self.normalizers]}

    def __repr__(self) -> str:
        return f"Sequence({self.normalizers!r})"


def normalizer_from_json(data: Mapping[str, Any] | None) -> Normalizer | None:
    """The normalizer for a ``tokenizers`` JSON form; ``None`` for none. Anything but the Unicode
    forms and sequences of them raises ValueError naming the component."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ValueError(f"a normalizer must be a JSON object, got {data!r}")
    kind = data.get("type")
    if kind in FORMS:
        return UnicodeNormalizer(kind)
    if kind == "Sequence":
        steps = data.get("normalizers")
        if not isinstance(steps, list):
            raise ValueError(f"normalizer Sequence needs a 'normalizers' list, got {data!r}")
        return NormalizerSequence(normalizer_from_json(step) for step in steps if step is not None)
    raise ValueError(f"normalizer {kind!r} is not supported (supported: {', '.join(FORMS)} and Sequence of them)")


def resolve_normalizer(spec: Normalizer | str | Mapping[str, Any] | Sequence[Any] | None) -> Normalizer | None:
    """A normalizer from what users and config files give: ``None``/``""`` (none), a form name
    (``"NFC"``), several joined by ``+`` (``"NFD+NFKC"``), a list of those, a JSON form, or a
    :class:`Normalizer`."""
    if spec is None or spec == "" or isinstance(spec, Normalizer):
        return spec or None
    if isinstance(spec, str):
        names = [name.strip() for name in spec.split("+")]
        steps = [UnicodeNormalizer(name.upper()) for name in names]
        return steps[0] if len(steps) == 1 else NormalizerSequence(steps)
    if isinstance(spec, Mapping):
        return normalizer_from_json(spec)
    if isinstance(spec, Sequence):
        steps = [resolve_normalizer(item) for item in spec]
        return NormalizerSequence(step for step in steps if step is not None)
    raise TypeError(f"cannot make a normalizer from {spec!r}")


def original_span(alignment: Alignment, start: int, end: int) -> tuple[int, int]:
    """The span of the original text that normalized characters ``start:end`` come from (the
    smallest start and largest end of their alignments, as ``tokenizers`` converts offsets)."""
    spans = alignment[start:end]
    if not spans:  # an empty span: where the next character starts, or the end of the text
        at = alignment[start][0] if start < len(alignment) else (alignment[-1][1] if alignment else 0)
        return at, at
    return min(s for s, _ in spans), max(e for _, e in spans)


# ------------------------------------------------------------------ tokenizers' Unicode 9.0 view


@functools.cache
def _known() -> frozenset[int]:
    return code_points("NORMALIZATION_ACTIVE")


@functools.cache
def _unknown_to_tokenizers() -> regex.Pattern:
    """Characters that ``unicodedata`` decomposes, reorders or composes and ``tokenizers`` does
    not (assigned after Unicode 9.0), as one capturing class: ``split`` keeps them."""
    everything = "".join(map(chr, range(0x110000)))
    active = {i for i, d in enumerate(map(unicodedata.decomposition, everything)) if d}
    active.update(i for i, c in enumerate(map(unicodedata.combining, everything)) if c)
    for i in list(active):
        active.update(ord(ch) for ch in unicodedata.normalize("NFKD", chr(i)))
    unknown = sorted(active - _known())
    if not unknown:
        return regex.compile(r"(?!)()")
    return regex.compile("([" + "".join(f"\\U{c:08X}" for c in unknown) + "])")


def _ccc(ch: str) -> int:
    return unicodedata.combining(ch) if ord(ch) in _known() else 0


_HANGUL_S, _HANGUL_L, _HANGUL_V, _HANGUL_T = 0xAC00, 0x1100, 0x1161, 0x11A7
_HANGUL_T_COUNT, _HANGUL_N_COUNT, _HANGUL_S_COUNT = 28, 588, 11172


@functools.lru_cache(maxsize=4096)
def _full_decomposition(ch: str, compat: bool) -> str:
    """The mapping of ``ch`` applied recursively, in mapping order (before reordering)."""
    cp = ord(ch)
    if 0 <= cp - _HANGUL_S < _HANGUL_S_COUNT:
        index = cp - _HANGUL_S
        out = chr(_HANGUL_L + index // _HANGUL_N_COUNT) + chr(_HANGUL_V + index % _HANGUL_N_COUNT // _HANGUL_T_COUNT)
        if index % _HANGUL_T_COUNT:
            out += chr(_HANGUL_T + index % _HANGUL_T_COUNT)
        return out
    if cp not in _known():
        return ch
    mapping = unicodedata.decomposition(ch)
    if not mapping or (mapping.startswith("<") and not compat):
        return ch
    fields = mapping.split()
    if fields[0].startswith("<"):
        fields = fields[1:]
    return "".join(_full_decomposition(chr(int(f, 16)), compat) for f in fields)


@functools.cache
def _compositions() -> dict[tuple[str, str], str]:
    """``{(first, second): primary composite}`` for the composites tokenizers knows (Hangul aside):
    characters with a two-character canonical decomposition that NFC leaves as they are (the
    others are excluded from composition)."""
    table = {}
    for cp in _known():
        ch = chr(cp)
        mapping = unicodedata.decomposition(ch)
        fields = mapping.split()
        if len(fields) == 2 and not mapping.startswith("<") and unicodedata.normalize("NFC", ch) == ch:
            table[(chr(int(fields[0], 16)), chr(int(fields[1], 16)))] = ch
    return table


def _compose_pair(first: str, second: str) -> str | None:
    """The primary composite of two characters, or None (Hangul syllables by rule)."""
    a, b = ord(first), ord(second)
    if 0 <= a - _HANGUL_L < 19 and 0 <= b - _HANGUL_V < 21:
        return chr(_HANGUL_S + ((a - _HANGUL_L) * 21 + b - _HANGUL_V) * _HANGUL_T_COUNT)
    if 0 <= a - _HANGUL_S < _HANGUL_S_COUNT and (a - _HANGUL_S) % _HANGUL_T_COUNT == 0 and 0 < b - _HANGUL_T < _HANGUL_T_COUNT:
        return chr(a + b - _HANGUL_T)
    return _compositions().get((first, second))


def _decompose(text: str, compat: bool) -> list[tuple[str, int]]:
    """Full decomposition with canonical reordering, as ``(char, change)`` pairs: change 0 for the
    first character of each original character's decomposition, 1 for the others (added)."""
    out: list[tuple[str, int]] = []
    pending: list[tuple[int, str, int]] = []  # the marks after the last starter, not yet sorted
    for ch in text:
        for i, part in enumerate(_full_decomposition(ch, compat)):
            ccc = _ccc(part)
            if ccc == 0:
                pending.sort(key=lambda item: item[0])  # stable, as canonical ordering requires
                out.extend((c, change) for _, c, change in pending)
                pending = []
            pending.append((ccc, part, 0 if i == 0 else 1))
    pending.sort(key=lambda item: item[0])
    out.extend((c, change) for _, c, change in pending)
    return out


def _recompose(decomposed: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Canonical composition of a decomposed sequence; a composite's change is the sum of its
    parts' minus one for each character it absorbed (``-n``: it replaces one and removes n)."""
    out: list[tuple[str, int]] = []
    starter: tuple[str, int] | None = None
    held: list[tuple[str, int]] = []  # marks after the starter that did not compose
    last_ccc: int | None = None
    for ch, change in decomposed:
        ccc = _ccc(ch)
        if starter is None:
            if ccc == 0:
                starter = (ch, change)
            else:
                out.append((ch, change))
            continue
        blocked = last_ccc is not None and last_ccc >= ccc
        if not blocked:
            composite = _compose_pair(starter[0], ch)
            if composite is not None:
                starter = (composite, starter[1] + change - 1)
                continue
        if ccc == 0:
            out.append(starter)
            out.extend(held)
            starter, held, last_ccc = (ch, change), [], None
        else:
            held.append((ch, change))
            last_ccc = ccc
    if starter is not None:
        out.append(starter)
    out.extend(held)
    return out


def _align(changes: list[tuple[str, int]], before: Alignment) -> Alignment:
    """``tokenizers``' alignment update: a character that replaces (change <= 0) takes the span of
    the character it replaces, and ``-change`` more characters are consumed; an added character
    (change > 0) takes the span of the last character consumed."""
    alignment: Alignment = []
    position = 0
    for _, change in changes:
        if change > 0:
            alignment.append(before[position - 1] if position > 0 else (0, 0))
        else:
            alignment.append(before[position])
            position += 1 - change
    return alignment
