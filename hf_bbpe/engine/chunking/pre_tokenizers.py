"""Pre-tokenization as a pipeline of steps, run as the ``tokenizers`` library runs it.

BPE never merges across the pieces that pre-tokenization cuts a text into. The common case is
one split pattern (GPT-2, GPT-4, o200k, Llama 3, Qwen2, Tekken); ``tokenizers`` files may chain several steps:

``Split(pattern, behavior, invert)``
    cut at the matches of a regex. The matches and the gaps between them form a list of pieces,
    each marked as a match or not (``invert`` flips the marks), and ``behavior`` says what
    happens to the matches: ``"isolated"`` (each is a piece of its own), ``"removed"`` (dropped),
    ``"merged_with_previous"`` / ``"merged_with_next"`` (glued to the gap before / after it),
    ``"contiguous"`` (neighbouring matches become one piece).
``Digits(individual_digits)``
    numbers on their own: each digit, or each run of digits.
``Punctuation(behavior)``
    punctuation characters, with the behaviours above.
``ByteLevel(add_prefix_space, use_regex)``
    GPT-2's step: a space before each piece that lacks one (``add_prefix_space``), GPT-2's own
    regex (``use_regex``), then each piece spelled in GPT-2's byte alphabet, which the steps
    after it see (and split) instead of the text.
``Sequence(steps)``
    the steps in order, each on every piece the previous ones made.

Every step splits each piece of the previous step; empty pieces are dropped. Regex matches
follow Oniguruma's rules for empty matches; the character classes of ``Digits`` and
``Punctuation`` are ``tokenizers``' own (unicode_tables.py). The JSON form of a pipeline is
``tokenizers``' (``{"type": "Sequence", "pretokenizers": [...]}``) with patterns in Python's
``regex`` syntax; tokenizer.json stores them translated for Oniguruma.

The engine's own ``pattern`` (tiktoken's and minbpe's reading: the chunks are the matches, and
text the pattern skips is dropped) is ``Split(pattern, "removed", invert=True)`` in these terms,
and ``Split(pattern, "isolated")`` for the built-in patterns (``patterns.NATIVE_PATTERNS``), which
match every character (the same chunks; the form tokenizer.json files use). Such a pipeline
reports the pattern as :attr:`PreTokenizer.plain_pattern` and the engine splits it with
:func:`patterns.chunk_splitter`, the C scanner for those: a plain pattern stays the fast path.
``Split(pattern, "isolated")`` with another pattern keeps the text the pattern skips. With
SuperBPE's stage-2 pattern (``patterns.ISOLATED_PATTERNS``, which ``pattern=`` also takes this
way) a C scanner cuts it; with any other it is split by :func:`isolated_split`, as fast as the
matches alone when the pattern matches every character (Llama 3, Qwen2 spelled otherwise).

This module is copied into saved model folders as remote code: it imports flat sibling modules
only, relatively, and third-party libraries.
"""

from __future__ import annotations

import functools
from collections import abc
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import regex

from .byte_unicode import bytes_to_unicode, unicode_to_token
from .patterns import HOLD_GIL, SPLIT_PATTERNS, chunk_splitter, compile_pattern, isolated_scanner_name, resolve_pattern, \
    scanner_name
from .unicode_tables import regex_class

BEHAVIORS = {
    "removed": "Removed",
    "isolated": "Isolated",
    "merged_with_previous": "MergedWithPrevious",
    "merged_with_next": "MergedWithNext",
    "contiguous": "Contiguous",
}
"""Behaviour names (Python spelling) and their tokenizer.json spelling."""

Span = tuple[int, int]
Piece = tuple[str, abc.Sequence[int]]
"""A piece with, for each of its characters, the position in the pre-tokenized text it comes
from (an inserted prefix space takes the position of the character after it; a character spelled
as several byte symbols gives its position to each)."""

PATTERN_JSON_KEYS = ("Regex", "String")


def _behavior(name: str) -> str:
    key = str(name).lower() if str(name).lower() in BEHAVIORS else _snake(str(name))
    if key not in BEHAVIORS:
        raise ValueError(f"unknown split behavior {name!r}; expected one of {', '.join(BEHAVIORS)}")
    return key


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


# ------------------------------------------------------------------ matching and behaviours


def match_spans(pattern: regex.Pattern, text: str) -> list[Span]:
    """The matches of ``pattern`` in ``text`` as Oniguruma finds them for ``tokenizers``: each
    search starts where the last match ended, and an empty match right where the last match
    ended is skipped (the search moves on one character). Python's ``finditer`` agrees whenever
    it finds no empty match, which is checked first."""
    spans = [m.span() for m in pattern.finditer(text, **HOLD_GIL)]
    if all(start < end for start, end in spans):
        return spans
    spans = []
    position, last_end = 0, None
    while position <= len(text):
        match = pattern.search(text, position)
        if match is None:
            break
        start, end = match.span()
        if start == end and last_end == end:
            position += 1
            continue
        spans.append((start, end))
        position = last_end = end
    return spans


def _marked(spans: list[Span], length: int, invert: bool) -> list[tuple[int, int, bool]]:
    """Matches and the gaps between them, in order, each with its mark (True: a match)."""
    if length == 0:
        return [(0, 0, invert)]
    marked = []
    position = 0
    for start, end in spans:
        if start > position:
            marked.append((position, start, invert))
        marked.append((start, end, not invert))
        position = end
    if position < length:
        marked.append((position, length, invert))
    return marked


def apply_behavior(marked: list[tuple[int, int, bool]], behavior: str) -> list[Span]:
    """The spans of the pieces that ``behavior`` makes of marked matches and gaps (empty ones
    dropped), by the rules of ``tokenizers``' ``NormalizedString.split``."""
    if behavior == "isolated":
        spans = [(start, end) for start, end, _ in marked]
    elif behavior == "removed":
        spans = [(start, end) for start, end, is_match in marked if not is_match]
    elif behavior == "contiguous":
        spans, previous = [], False
        for start, end, is_match in marked:
            if is_match == previous and spans:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
            previous = is_match
    elif behavior == "merged_with_previous":
        spans, previous = [], False
        for start, end, is_match in marked:
            if is_match and not previous and spans:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
            previous = is_match
    elif behavior == "merged_with_next":
        spans, previous = [], False
        for start, end, is_match in reversed(marked):
            if is_match and not previous and spans:
                spans[-1] = (start, spans[-1][1])
            else:
                spans.append((start, end))
            previous = is_match
        spans.reverse()
    else:
        raise ValueError(f"unknown split behavior {behavior!r}")
    return [(start, end) for start, end in spans if start < end]


# ------------------------------------------------------------------ steps


class PreTokenizer:
    """One step of a pipeline, or a :class:`Sequence` of them; every step runs as a pipeline."""

    def pre_tokenize(self, text: str) -> list[str] | list[bytes]:
        """The pieces of ``text``: str, or bytes when a ``ByteLevel`` step is followed by others
        (those see byte symbols, and a piece may end inside a character)."""
        return self.as_sequence().pre_tokenize(text)

    def pre_tokenize_with_positions(self, text: str) -> list[tuple[str | bytes, abc.Sequence[int]]]:
        """The pieces of ``text`` with, per character (or byte, for bytes pieces), its position
        in ``text`` (see :data:`Piece`)."""
        return self.as_sequence().pre_tokenize_with_positions(text)

    @property
    def plain_pattern(self) -> str | None:
        """The pattern whose matches are exactly this pipeline's pieces (``""``: no split), or
        None. Such a pipeline is what tiktoken, minbpe and the engine's ``pattern`` express."""
        return self.as_sequence().plain_pattern

    @property
    def split_pattern(self) -> str | None:
        """The regex of a pipeline that is one regex ``Split`` (``""``: no split), or None; unlike
        :attr:`plain_pattern` this includes an ``isolated`` Split of any pattern, which keeps
        the text its pattern skips."""
        return self.as_sequence().split_pattern

    @property
    def emits_bytes(self) -> bool:
        """Whether :meth:`pre_tokenize` gives bytes pieces (see there)."""
        return self.as_sequence().emits_bytes

    def as_sequence(self) -> Sequence:
        """This step as a one-step :class:`Sequence` (a Sequence is its own): what runs it."""
        sequence = self.__dict__.get("_sequence")
        if sequence is None:
            sequence = self.__dict__["_sequence"] = Sequence([self])
        return sequence

    def steps(self) -> list[PreTokenizer]:
        """The steps in order, nested sequences flattened."""
        return [self]

    def to_json(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        """``tokenizers``' JSON form; ``translate`` rewrites each regex (e.g. for Oniguruma)."""
        raise NotImplementedError

    def split_spans(self, text: str) -> list[Span]:
        """Spans of the pieces this step cuts one piece into."""
        raise NotImplementedError

    def split_text(self, text: str) -> list[str]:
        """The pieces this step cuts one piece into (a faster twin of :meth:`split_spans`)."""
        return [text[start:end] for start, end in self.split_spans(text)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PreTokenizer) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(repr(self.to_json()))

    def __getstate__(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "_sequence"}


class Split(PreTokenizer):
    """Cut at the matches of a regex (``literal=True``: of a plain string), as ``tokenizers``' Split.

    A bad regex raises ValueError naming it."""

    def __init__(self, pattern: str, behavior: str = "isolated", invert: bool = False, *, literal: bool = False) -> None:
        if not isinstance(pattern, str):
            raise ValueError(f"Split needs a pattern, got {pattern!r}")
        self.literal = bool(literal)
        self.pattern = pattern  # a regex as written (no pattern names here: a file's "gpt4" means the text gpt4)
        self.behavior = _behavior(behavior)
        self.invert = bool(invert)
        self._regex = compile_pattern(regex.escape(pattern) if literal else self.pattern)

    def split_spans(self, text: str) -> list[Span]:
        return apply_behavior(_marked(match_spans(self._regex, text), len(text), self.invert), self.behavior)

    def split_text(self, text: str) -> list[str]:
        if self.behavior == "isolated" and not self.invert:
            return isolated_split(self._regex, text)
        if self.behavior == "removed" and self.invert and not self._regex.groups:
            matches = self._regex.findall(text)  # the same as Oniguruma's unless one is empty
            if "" not in matches:
                return matches
        return super().split_text(text)

    def to_json(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        if self.literal:
            pattern = {"String": self.pattern}
        else:
            pattern = {"Regex": translate(self.pattern) if translate else self.pattern}
        return {"type": "Split", "pattern": pattern, "behavior": BEHAVIORS[self.behavior], "invert": self.invert}

    def __repr__(self) -> str:
        extra = ", literal=True" if self.literal else ""
        return f"Split({self.pattern!r}, {self.behavior!r}, invert={self.invert}{extra})"


@functools.cache
def _class_regex(table: str, run: bool) -> regex.Pattern:
    return regex.compile(f"({regex_class(table)}{'+' if run else ''})")


class _CharacterClassSplit(PreTokenizer):
    """Splitting on the characters of one of tokenizers' classes, one character per match."""

    table = ""

    def _spans(self, text: str, behavior: str) -> list[Span]:
        spans = [m.span() for m in _class_regex(self.table, False).finditer(text)]
        return apply_behavior(_marked(spans, len(text), False), behavior)

    def _split_runs(self, text: str, runs: bool) -> list[str]:
        """Isolated single characters (``runs=False``) or runs of them (contiguous)."""
        return [piece for piece in _class_regex(self.table, runs).split(text) if piece]


class Digits(_CharacterClassSplit):
    """Numbers as pieces of their own: each digit (``individual_digits``) or each run of digits."""

    table = "NUMERIC"

    def __init__(self, individual_digits: bool = False) -> None:
        self.individual_digits = bool(individual_digits)

    def split_spans(self, text: str) -> list[Span]:
        return self._spans(text, "isolated" if self.individual_digits else "contiguous")

    def split_text(self, text: str) -> list[str]:
        return self._split_runs(text, runs=not self.individual_digits)

    def to_json(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        return {"type": "Digits", "individual_digits": self.individual_digits}

    def __repr__(self) -> str:
        return f"Digits(individual_digits={self.individual_digits})"


class Punctuation(_CharacterClassSplit):
    """Punctuation characters, with a split behaviour (``isolated`` by default)."""

    table = "PUNCTUATION"

    def __init__(self, behavior: str = "isolated") -> None:
        self.behavior = _behavior(behavior)

    def split_spans(self, text: str) -> list[Span]:
        return self._spans(text, self.behavior)

    def split_text(self, text: str) -> list[str]:
        if self.behavior in ("isolated", "contiguous"):
            return self._split_runs(text, runs=self.behavior == "contiguous")
        return super().split_text(text)

    def to_json(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        return {"type": "Punctuation", "behavior": BEHAVIORS[self.behavior]}

    def __repr__(self) -> str:
        return f"Punctuation({self.behavior!r})"


class ByteLevel(PreTokenizer):
    """GPT-2's byte-level step (see the module doc). ``trim_offsets`` only matters to the
    ``tokenizers`` post-processor's offsets; it is kept for the JSON form."""

    def __init__(self, add_prefix_space: bool = False, use_regex: bool = True, trim_offsets: bool = True) -> None:
        self.add_prefix_space = bool(add_prefix_space)
        self.use_regex = bool(use_regex)
        self.trim_offsets = bool(trim_offsets)

    def needs_prefix(self, piece: str) -> bool:
        """Whether this step puts a space before ``piece``."""
        return self.add_prefix_space and not piece.startswith(" ")

    def split_text(self, text: str) -> list[str]:
        if self.needs_prefix(text):
            text = " " + text
        return chunk_splitter(SPLIT_PATTERNS["gpt2"])(text) if self.use_regex else [text]

    def split_spans(self, text: str) -> list[Span]:
        """Spans of the regex pieces of ``text``, which must already carry its prefix space."""
        if not self.use_regex:
            return [(0, len(text))]
        spans = []
        position = 0
        for chunk in chunk_splitter(SPLIT_PATTERNS["gpt2"])(text):  # GPT-2's regex tiles the text
            spans.append((position, position + len(chunk)))
            position += len(chunk)
        return spans

    def to_json(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        return {"type": "ByteLevel", "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}

    def __repr__(self) -> str:
        return f"ByteLevel(add_prefix_space={self.add_prefix_space}, use_regex={self.use_regex})"


class Sequence(PreTokenizer):
    """Steps applied in order, each to every piece the previous steps made."""

    def __init__(self, steps: PreTokenizer | Iterable[PreTokenizer]) -> None:
        self.pretokenizers = [steps] if isinstance(steps, PreTokenizer) else list(steps)
        for step in self.pretokenizers:
            if not isinstance(step, PreTokenizer):
                raise TypeError(f"a pre-tokenizer sequence holds pre-tokenizer steps, got {step!r}")
        self._flat = self.steps()
        byte_levels = [i for i, step in enumerate(self._flat) if isinstance(step, ByteLevel)]
        # a ByteLevel step spells pieces in byte symbols only when later steps look at them
        self._maps = {i for i in byte_levels if i < len(self._flat) - 1}
        self._emits_bytes = bool(byte_levels) and byte_levels[-1] < len(self._flat) - 1

    def as_sequence(self) -> Sequence:
        """This step as a one-step :class:`Sequence` (a Sequence is its own): what runs it."""
        return self

    def steps(self) -> list[PreTokenizer]:
        return [inner for step in self.pretokenizers for inner in step.steps()]

    @property
    def emits_bytes(self) -> bool:
        return self._emits_bytes

    def _core(self) -> list[PreTokenizer]:
        """The steps without a final ``ByteLevel`` that only spells bytes (the engine does that)."""
        steps = list(self._flat)
        if steps and isinstance(steps[-1], ByteLevel) and not steps[-1].use_regex and not steps[-1].add_prefix_space:
            steps.pop()
        return steps

    @property
    def plain_pattern(self) -> str | None:
        steps = self._core()
        if not steps:
            return ""
        if len(steps) > 1:
            return None
        step = steps[0]
        if isinstance(step, Split) and not step.literal:
            if step.behavior == "removed" and step.invert:
                return step.pattern
            if step.behavior == "isolated" and not step.invert and scanner_name(step.pattern) is not None:
                return step.pattern  # a built-in pattern (in any of its spellings) matches every character
        if isinstance(step, ByteLevel) and step.use_regex and not step.add_prefix_space:
            return SPLIT_PATTERNS["gpt2"]
        return None

    @property
    def split_pattern(self) -> str | None:
        steps = self._core()
        if len(steps) == 1 and isinstance(steps[0], Split) and steps[0].behavior == "isolated" \
                and not steps[0].invert and not steps[0].literal:
            return steps[0].pattern
        return self.plain_pattern

    def pre_tokenize(self, text: str) -> list[str] | list[bytes]:
        pieces = [text] if text else []
        for i, step in enumerate(self._flat):
            split = step.split_text
            pieces = [part for piece in pieces for part in split(piece) if part]
            if i in self._maps:
                pieces = [_byte_symbols(piece) for piece in pieces]
        if self._emits_bytes:
            return [unicode_to_token(piece) for piece in pieces]
        return pieces

    def pre_tokenize_with_positions(self, text: str) -> list[tuple[str | bytes, abc.Sequence[int]]]:
        pieces: list[Piece] = [(text, range(len(text)))] if text else []
        for i, step in enumerate(self._flat):
            out: list[Piece] = []
            for piece, positions in pieces:
                if isinstance(step, ByteLevel) and step.needs_prefix(piece):
                    # the inserted space takes the position of the character after it
                    piece, positions = " " + piece, [positions[0], *positions]
                out.extend((piece[start:end], positions[start:end]) for start, end in step.split_spans(piece))
            if i in self._maps:
                out = [_byte_symbols_with_positions(piece, positions) for piece, positions in out]
            pieces = out
        if self._emits_bytes:
            return [(unicode_to_token(piece), positions) for piece, positions in pieces]
        return pieces

    def to_json(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        return {"type": "Sequence", "pretokenizers": [step.to_json(translate) for step in self.pretokenizers]}

    def __repr__(self) -> str:
        return f"Sequence({self.pretokenizers!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"pretokenizers": self.pretokenizers}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["pretokenizers"])


def _byte_symbols(piece: str) -> str:
    table = bytes_to_unicode()
    return "".join([table[b] for b in piece.encode("utf-8")])


def _byte_symbols_with_positions(piece: str, positions: abc.Sequence[int]) -> Piece:
    table = bytes_to_unicode()
    symbols: list[str] = []
    out_positions: list[int] = []
    for ch, position in zip(piece, positions):
        data = ch.encode("utf-8")
        symbols.extend(table[b] for b in data)
        out_positions.extend([position] * len(data))
    return "".join(symbols), out_positions


def isolated_split(compiled: regex.Pattern, text: str) -> list[str]:
    """``Split(pattern, "isolated")`` of one text: the matches and the text between them.

    The split patterns in use match every character, so the matches alone tile the text; that is
    checked (a C-speed sum) before the exact, slower construction runs.
    """
    if not compiled.groups:
        chunks = compiled.findall(text, **HOLD_GIL)
        if sum(map(len, chunks)) == len(text) and "" not in chunks:
            return chunks
    spans = apply_behavior(_marked(match_spans(compiled, text), len(text), False), "isolated")
    return [text[start:end] for start, end in spans]


# ------------------------------------------------------------------ JSON and specs


def pre_tokenizer_from_json(data: Mapping[str, Any] | None, translate: Callable[[str], str] | None = None) -> PreTokenizer | None:
    """The pipeline for a ``tokenizers`` JSON form (``None`` for none); ``translate`` rewrites
    each regex into Python syntax. An unsupported step raises ValueError naming it."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ValueError(f"a pre_tokenizer must be a JSON object, got {data!r}")
    kind = data.get("type")
    if kind == "Sequence":
        steps = data.get("pretokenizers")
        if not isinstance(steps, list):
            raise ValueError(f"pre_tokenizer Sequence needs a 'pretokenizers' list, got {dict(data)!r}")
        return Sequence([pre_tokenizer_from_json(step, translate) for step in steps])
    if kind == "Split":
        pattern = data.get("pattern")
        if not isinstance(pattern, Mapping) or len(pattern) != 1 or next(iter(pattern)) not in PATTERN_JSON_KEYS \
                or not isinstance(next(iter(pattern.values())), str):
            raise ValueError(f"pre_tokenizer Split needs a pattern {{'Regex': ...}} or {{'String': ...}}, got {pattern!r}")
        literal = "String" in pattern
        text = pattern["String"] if literal else pattern["Regex"]
        if not literal and translate is not None:
            text = translate(text)
        return Split(text, data.get("behavior", "isolated"), bool(data.get("invert", False)), literal=literal)
    if kind == "Digits":
        return Digits(bool(data.get("individual_digits", False)))
    if kind == "Punctuation":
        return Punctuation(data.get("behavior", "isolated"))
    if kind == "ByteLevel":
        return ByteLevel(bool(data.get("add_prefix_space", True)), bool(data.get("use_regex", True)),
                         bool(data.get("trim_offsets", True)))
    raise ValueError(f"pre_tokenizer {kind!r} is not supported (supported: Split, Digits, Punctuation, ByteLevel "
                     "and Sequence of them)")


def pattern_pre_tokenizer(pattern: str | None) -> Split | None:
    """The pipeline for the engine's ``pattern`` (its matches are the chunks): an isolated Split
    for the built-in patterns, which match every character, and for those of
    ``patterns.ISOLATED_PATTERNS`` (SuperBPE's stage 2, whose matches and the text between them are
    the chunks), else Split(removed, invert=True)."""
    if not pattern:
        return None
    if isolated_scanner_name(pattern) is not None:
        return Split(pattern)
    return Split(pattern, "removed", invert=True)


def resolve_pre_tokenizer(spec: PreTokenizer | str | Mapping[str, Any] | None) -> PreTokenizer | None:
    """A pipeline from a :class:`PreTokenizer`, a JSON form (Python regex syntax), a pattern or
    registered pattern name (as the engine's ``pattern``), or ``None``/``""`` (no split)."""
    if spec is None or spec == "":
        return None
    if isinstance(spec, PreTokenizer):
        return spec
    if isinstance(spec, str):
        return pattern_pre_tokenizer(resolve_pattern(spec))
    if isinstance(spec, Mapping):
        return pre_tokenizer_from_json(spec)
    raise TypeError(f"cannot make a pre-tokenizer from {spec!r}")
