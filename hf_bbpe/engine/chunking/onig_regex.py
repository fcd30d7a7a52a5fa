"""Split patterns between Python's ``regex`` and Oniguruma (the engine of the Rust ``tokenizers``).

A tokenizer.json stores its split pattern in Oniguruma's (Ruby) syntax; the engine splits with
``regex``. :func:`translate_pattern_for_onig` writes a pattern for a tokenizer.json and
:func:`translate_pattern_from_onig` reads one back; tests run both engines on the same text.

This module is also copied into model folders as remote code (saving a folder writes its
tokenizer.json): it may import only flat sibling modules, relatively, and third-party libraries.
"""

from __future__ import annotations

import functools

import regex


PORTABLE_ANCHORS: dict[str, str] = {"^": r"(?<![\s\S])", "$": r"(?=\n?(?![\s\S]))", r"\Z": r"(?![\s\S])"}
"""Python's anchors (start; end or before a final newline; end) as a tokenizer.json writes them:
lookarounds that Oniguruma (``tokenizers``), JavaScript's ``RegExp`` (transformers.js) and Python
read alike, where ``\\A``, ``\\Z`` and ``\\z`` are Oniguruma's only (GPT-4's ``\\s+$``)."""


class _Translator:
    """One pass over a split pattern, writing the same pattern for the other regex engine.

    ``source="python"`` reads Python's ``regex`` syntax and writes Oniguruma's (Ruby syntax, as
    ``tokenizers`` compiles it); ``source="onig"`` goes the other way. The two engines agree on
    classes, ``\\p{..}``, ``(?i:..)``, lookarounds, atomic groups and the possessive
    ``?+ *+ ++``, but not on:

    * ``X{n,m}+``: possessive in Python, "one or more of X{n,m}" in Oniguruma; Python's becomes
      ``(?>X{n,m})``, Oniguruma's becomes ``(?:X{n,m})+``;
    * ``X{n}?``: lazy (the same as ``X{n}``) in Python, "optional X{n}" in Oniguruma;
    * anchors: Python's ``^`` (start), ``$`` (end, or before a final newline) and ``\\Z`` (end)
      are Oniguruma's ``\\A``, ``\\Z`` and ``\\z``, which JavaScript's ``RegExp`` does not
      know, so they are written as the lookarounds of :data:`PORTABLE_ANCHORS`, which Oniguruma,
      JavaScript and Python read alike (and read back as anchors); inside a lookbehind, as
      ``\\A``, ``\\Z``, ``\\z``, which JavaScript's ``RegExp`` refuses (no built-in pattern
      has one). Oniguruma's ``^``/``$`` are line anchors, Python's
      ``(?m:^)``/``(?m:$)``;
    * inside ``[...]``: ``[`` and ``&&`` are literal in Python (version 0) but nest and
      intersect in Oniguruma (escaped one way, refused the other);
    * escapes: ``\\x{..}`` exists only in Oniguruma, ``\\U........`` and ``\\N{..}`` only in
      Python; ``(?P<name>`` is Python's spelling of ``(?<name>``; comments ``(?#..)`` are dropped;
    * ``\\w``, ``\\d`` and ``\\b``: the engines' word and digit characters differ (see
      :func:`shorthand_items`), so they are written out as classes, and ``\\b``/``\\B`` as
      lookarounds on the word class; ``[\\b]`` is a backspace in both. ``\\s`` means the same in
      both and is kept. Where a class holds ``\\W`` or ``\\D``, Oniguruma nests ``[^..]`` and
      Python (which does not nest classes) gets an alternation or lookaheads. Oniguruma folds
      ``ß`` to ``ss`` in a case-insensitive class, so a written-out class in ``(?i:..)`` is
      wrapped in ``(?-i:..)`` (both engines' word and digit classes are closed under case).

    Anything else whose meaning differs or is unverified raises ValueError: back references,
    conditionals, inline flags other than ``i``, ``\\G``, ``\\K``, ``\\h``, verbose mode.
    """

    def __init__(self, pattern: str, source: str, portable_anchors: bool = True) -> None:
        self.src = pattern
        self.pos = 0
        self.from_python = source == "python"
        self.portable_anchors = portable_anchors  # Python's anchors as PORTABLE_ANCHORS writes them
        self.ignore_case = False  # inside (?i) or (?i:..)
        self.in_lookbehind = False

    def fail(self, message: str, at: int | None = None) -> ValueError:
        at = self.pos if at is None else at
        return ValueError(f"split pattern {self.src!r}, position {at}: {message}")

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.src[i] if i < len(self.src) else ""

    def run(self) -> str:
        out = self.alternation(top=True)
        if self.pos != len(self.src):
            raise self.fail("unbalanced ')'")
        return out

    def alternation(self, top: bool = False) -> str:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.sequence())
        if not top and self.peek() != ")":
            raise self.fail("missing ')'")
        return "|".join(branches)

    def sequence(self) -> str:
        atoms: list[str] = []
        while self.pos < len(self.src) and self.peek() not in "|)":
            start = self.pos
            atom, quantifiable = self.atom()
            if self.quantifier_ahead():
                if not quantifiable:
                    raise self.fail("quantifier after an anchor or an empty group")
                atom = self.quantify(atom)
                if self.quantifier_ahead():
                    raise self.fail("a quantifier cannot follow a quantifier here", start)
            atoms.append(atom)
        return "".join(atoms)

    def quantifier_ahead(self) -> bool:
        ch = self.peek()
        return ch in ("*", "+", "?") or (ch == "{" and self.interval_end() is not None)

    def interval_end(self) -> int | None:
        """Index after ``{n}``, ``{n,}``, ``{,m}``, ``{n,m}`` at pos, or None if it is a literal."""
        j = self.src.find("}", self.pos)
        if j < 0:
            return None
        lo, comma, hi = self.src[self.pos + 1 : j].partition(",")
        if not (lo.isdigit() or (comma and lo == "")) or not (hi.isdigit() or hi == ""):
            return None
        if not lo and not hi:
            return None
        return j + 1

    def quantify(self, atom: str) -> str:
        ch = self.peek()
        if ch != "{":
            self.pos += 1
            mode = self.peek()
            if mode in ("?", "+"):
                self.pos += 1
                return atom + ch + mode
            return atom + ch
        end = self.interval_end()
        assert end is not None
        body = self.src[self.pos : end]
        self.pos = end
        exact = "," not in body
        mode = self.peek()
        if mode not in ("?", "+"):
            return atom + body
        self.pos += 1
        if self.from_python:
            if mode == "+":
                return f"(?>{atom}{body})"
            return atom + body if exact else atom + body + "?"
        # Oniguruma: X{n}? is an optional X{n}; X{n,m}+ (and X{n}+) repeat the interval
        if mode == "?" and not exact:
            return atom + body + "?"
        return f"(?:{atom}{body}){mode}"

    def atom(self) -> tuple[str, bool]:
        ch = self.peek()
        if ch == "(":
            return self.group()
        if ch == "[":
            return self.char_class(), True
        if ch == "\\":
            return self.escape(in_class=False)
        if ch in "^$":
            self.pos += 1
            if self.from_python:
                if self.portable_anchors and not self.in_lookbehind:
                    return PORTABLE_ANCHORS[ch], False
                return (r"\A" if ch == "^" else r"\Z"), False
            return f"(?m:{ch})", False
        if ch in "*+?":
            raise self.fail(f"nothing to repeat before {ch!r}")
        self.pos += 1
        if ch in "{}":
            return "\\" + ch, True
        return ch, True

    def group(self) -> tuple[str, bool]:
        if not self.from_python and not self.in_lookbehind:
            for anchor, lookaround in PORTABLE_ANCHORS.items():
                if self.src.startswith(lookaround, self.pos):
                    self.pos += len(lookaround)
                    return anchor, False
        start = self.pos
        self.pos += 1
        if self.peek() != "?":
            header = "(?:"
        else:
            rest = self.src[self.pos :]
            header = None
            for prefix in ("?:", "?=", "?!", "?<=", "?<!", "?>"):
                if rest.startswith(prefix):
                    header = "(" + prefix
                    self.pos += len(prefix)
                    break
            if header is None:
                if rest.startswith("?#"):
                    end = self.src.find(")", self.pos)
                    if end < 0:
                        raise self.fail("unterminated comment", start)
                    self.pos = end + 1
                    return "", False
                if rest.startswith("?P<") or rest.startswith("?<"):
                    self.pos += 3 if rest.startswith("?P<") else 2
                    end = self.src.find(">", self.pos)
                    name = self.src[self.pos : end] if end >= 0 else ""
                    if not name.isidentifier():
                        raise self.fail("bad group name", start)
                    self.pos = end + 1
                    header = f"(?<{name}>" if self.from_python else f"(?P<{name}>"
                else:
                    header = self.flag_group(start)
                    if header.endswith(")"):
                        self.ignore_case = _sets_ignore_case(header, self.ignore_case)
                        return header, False
        outer, outer_lookbehind = self.ignore_case, self.in_lookbehind
        self.ignore_case = _sets_ignore_case(header, outer)
        self.in_lookbehind = outer_lookbehind or header in ("(?<=", "(?<!")
        body = self.alternation()
        self.ignore_case, self.in_lookbehind = outer, outer_lookbehind
        self.pos += 1  # the ')'
        return header + body + ")", True

    def flag_group(self, start: int) -> str:
        """``(?i:``, ``(?-i:`` or a leading ``(?i)``: the only inline flag with one meaning in both."""
        j = self.pos + 1
        while j < len(self.src) and (self.src[j].isalpha() or self.src[j] == "-"):
            j += 1
        flags = self.src[self.pos + 1 : j]
        close = self.src[j : j + 1]
        if not flags or close not in (":", ")") or set(flags) - {"i", "-"} or flags.count("-") > 1 or flags == "-":
            raise self.fail(f"unsupported group '(?{flags}{close}': only (?:..), (?i:..), lookarounds, "
                            "atomic and named groups mean the same in both engines", start)
        self.pos = j + 1
        if close == ")":
            if start != 0:
                raise self.fail("an inline flag group like (?i) is only supported at the start", start)
            return f"(?{flags})"
        return f"(?{flags}:"

    def escape(self, in_class: bool) -> tuple[str, bool]:
        start = self.pos
        self.pos += 1
        ch = self.peek()
        if not ch:
            raise self.fail("pattern ends with a backslash", start)
        self.pos += 1
        if ch in "pP":
            if self.peek() == "{":
                end = self.src.find("}", self.pos)
                if end < 0:
                    raise self.fail("unterminated \\p{", start)
                name = self.src[self.pos + 1 : end]
                self.pos = end + 1
            else:
                name = self.peek()  # \pL
                self.pos += 1
            if name.startswith("^"):  # Oniguruma's \p{^L} is \P{L}
                name, ch = name[1:], "P" if ch == "p" else "p"
            return f"\\{ch}{{{name}}}", True
        if ch == "x":
            if self.peek() == "{":
                end = self.src.find("}", self.pos)
                digits = self.src[self.pos + 1 : end] if end >= 0 else ""
                self.pos = end + 1 if end >= 0 else len(self.src)
            else:
                digits = self.src[self.pos : self.pos + 2]
                self.pos += 2
            return self.codepoint(digits, start), True
        if ch == "u" or (ch == "U" and self.from_python):
            width = 4 if ch == "u" else 8
            digits = self.src[self.pos : self.pos + width]
            self.pos += width
            return self.codepoint(digits, start), True
        if ch == "N" and self.from_python and self.peek() == "{":
            import unicodedata

            end = self.src.find("}", self.pos)
            name = self.src[self.pos + 1 : end]
            self.pos = end + 1
            try:
                return self.codepoint(f"{ord(unicodedata.lookup(name)):X}", start), True
            except KeyError:
                raise self.fail(f"unknown character name {name!r}", start) from None
        if ch in "wWdD" and not (ch in "dD" and not self.from_python):
            items = shorthand_items(ch.lower(), self.from_python)
            return self.written_class(items, negated=ch.isupper()), True
        if ch in "bB":
            if in_class:
                if ch == "B":
                    raise self.fail("\\B inside a character class", start)
                return self.codepoint("8", start), True  # a backspace, in both engines
            if self.in_lookbehind and self.from_python:
                raise self.fail(f"\\{ch} inside a lookbehind: Oniguruma cannot look around there", start)
            word = self.written_class(shorthand_items("w", self.from_python), negated=False)
            if ch == "b":
                return f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))", False
            return f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))", False
        if ch in "sSdDnrtfv":
            return "\\" + ch, True
        if ch == "0" and not self.peek().isdigit():
            return self.codepoint("0", start), True
        if not in_class and ch in "AZz":
            if ch == "Z":
                if self.from_python and self.portable_anchors and not self.in_lookbehind:
                    return PORTABLE_ANCHORS[r"\Z"], False
                return (r"\z" if self.from_python else "$"), False
            if ch == "z":
                if self.from_python:
                    raise self.fail("\\z is not Python regex syntax", start)
                return r"\Z", False
            return "\\" + ch, False
        if ch.isalnum():
            raise self.fail(f"escape \\{ch} has no verified equivalent in the other engine", start)
        return "\\" + ch, True

    def codepoint(self, digits: str, start: int) -> str:
        try:
            value = int(digits, 16)
        except ValueError:
            raise self.fail(f"bad hex escape {digits!r}", start) from None
        if self.from_python:
            return f"\\x{{{value:X}}}"
        if value <= 0xFF:
            return f"\\x{value:02X}"
        if value <= 0xFFFF:
            return f"\\u{value:04X}"
        return f"\\U{value:08X}"

    def written_class(self, items: str, negated: bool) -> str:
        """``[items]`` or ``[^items]`` for a written-out shorthand, shielded from case folding."""
        written = f"[{'^' if negated else ''}{items}]"
        return f"(?-i:{written})" if self.ignore_case and self.from_python else written

    def char_class(self) -> str:
        start = self.pos
        self.pos += 1
        out = []
        shorthands: list[tuple[str, bool]] = []  # written-out \w \W \d \D in this class
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        first = True
        while True:
            ch = self.peek()
            if not ch:
                raise self.fail("unterminated character class", start)
            if ch == "]" and not first:
                self.pos += 1
                break
            first = False
            if ch == "\\" and self.peek(1) in "wWdD" and not (self.peek(1) in "dD" and not self.from_python):
                letter = self.peek(1)
                self.pos += 2
                shorthands.append((shorthand_items(letter.lower(), self.from_python, in_class=True), letter.isupper()))
            elif ch == "\\":
                piece, _ = self.escape(in_class=True)
                out.append(piece)
            elif ch == "[" and self.peek(1) == ":":
                end = self.src.find(":]", self.pos)
                if end < 0:
                    raise self.fail("unterminated POSIX class", self.pos)
                out.append(self.src[self.pos : end + 2])
                self.pos = end + 2
            elif ch in "[&" and not self.from_python and (ch == "[" or self.peek(1) == "&"):
                raise self.fail("nested classes and '&&' intersections are Oniguruma-only")
            else:
                out.append("\\" + ch if ch in "[]&" else ch)
                self.pos += 1
        plain = "".join(out)
        head = "[^" if negated else "["
        if not shorthands:
            return head + plain + "]"
        if self.from_python and not self.ignore_case:  # Oniguruma nests classes: one class
            nested = "".join(f"[^{items}]" if neg else items for items, neg in shorthands)
            return head + plain + nested + "]"
        # A union (or, for [^..], an intersection of complements) that both engines read
        parts = [self.written_class(items, neg) for items, neg in shorthands]
        if not negated:
            return "(?:" + "|".join(([f"[{plain}]"] if plain else []) + parts) + ")"
        excluded = ([f"[{plain}]"] if plain else []) + parts
        return "(?:" + "".join(f"(?!{part})" for part in excluded) + r"[\s\S])"


def _sets_ignore_case(header: str, outer: bool) -> bool:
    """Whether the group that ``header`` opens (``(?i:``, ``(?-i)``, ``(?:``...) ignores case."""
    if not header.startswith("(?") or header[2:3] not in ("i", "-"):
        return outer
    on, _, off = header[2:].rstrip(":)").partition("-")
    return ("i" in on or outer) and "i" not in off


# Oniguruma's \w (Ruby syntax over UTF-8), measured with ``tokenizers`` on every code point
# that its Unicode tables assign: Alphabetic, marks, decimal digits and connector punctuation
# (Python adds the two join controls, U+200C/D). Outside a class, Oniguruma also counts the
# Latin-1 digits and fractions ² ³ ¹ ¼ ½ ¾ (its single-byte table); inside one it does not.
_ONIG_WORD_IN_CLASS = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}"
_ONIG_WORD = _ONIG_WORD_IN_CLASS + r"\xB2\xB3\xB9\xBC-\xBE"


def shorthand_items(letter: str, for_onig: bool, in_class: bool = False) -> str:
    r"""The class items (no brackets) that mean ``\w`` (``letter="w"``) or ``\d`` of the source
    engine in the other one (``in_class``: written inside ``[...]``, where Oniguruma's ``\w``
    differs).

    For Oniguruma, Python's ``\w``/``\d`` are written out as the code point ranges that the
    installed ``regex`` module matches: Oniguruma's Unicode tables are older, so a property
    name would differ on code points assigned since (tests check every code point). For
    Python, Oniguruma's ``\w`` is a class of properties (its ``\d`` is Python's).
    """
    if for_onig:
        return _python_ranges(letter)
    if letter == "w":
        return _ONIG_WORD_IN_CLASS if in_class else _ONIG_WORD
    return r"\d"


@functools.lru_cache(maxsize=None)
def _python_ranges(letter: str) -> str:
    r"""``\x{first}-\x{last}...`` for the code points that ``regex`` matches with ``\<letter>``."""
    text, gap = _every_code_point()
    items = []
    for match in regex.finditer(rf"\{letter}+", text):
        first, last = match.start(), match.end() - 1
        spans = [(first, last)] if not (first < gap <= last) else [(first, gap - 1), (gap, last)]
        for lo, hi in spans:
            lo, hi = (cp if cp < gap else cp + 0x800 for cp in (lo, hi))  # back over the surrogates
            items.append(f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}")
    return "".join(items)


def _every_code_point() -> tuple[str, int]:
    """Every code point but the surrogates, in order, and the index where the surrogates were."""
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000))), 0xD800


def translate_pattern_for_onig(pattern: str, *, portable_anchors: bool = True) -> str:
    r"""Rewrite a Python ``regex`` split pattern so that Oniguruma (``tokenizers``) splits the same.

    The known OpenAI patterns need one change: ``\p{N}{1,3}+`` (possessive in Python, but "one
    or more runs of 1-3 digits" in Oniguruma) becomes ``(?>\p{N}{1,3})``; ``$`` becomes
    ``(?=\n?(?![\s\S]))`` (the same meaning, in a spelling JavaScript reads too:
    :data:`PORTABLE_ANCHORS`). See :class:`_Translator` for every rule. Raises ValueError naming
    the position of a construct that has no known equivalent. ``portable_anchors=False`` writes
    anchors as Oniguruma's ``\A``, ``\Z``, ``\z``, as tokenizer.json files written before did.
    """
    if not pattern:
        return pattern
    return _Translator(pattern, "python", portable_anchors).run()


def translate_pattern_from_onig(pattern: str) -> str:
    """The inverse direction: an Oniguruma split pattern (from a tokenizer.json) for ``regex``."""
    if not pattern:
        return pattern
    return _Translator(pattern, "onig").run()

