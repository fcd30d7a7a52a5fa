"""Build a ``tokenizers`` tokenizer.json (a byte-level BPE model) from a tokenizer of ours.

The file runs in the Rust ``tokenizers`` library with the same ids as the engine:

* model: ``BPE`` with the vocabulary spelled in GPT-2's byte-to-unicode alphabet under the
  tokenizer's real ids (holes in the id space and permuted byte ids are kept) and the merges in
  merge order, so the Rust BPE (lowest merge rank first) is the engine's algorithm;
  ``ignore_merges`` is true in the engine's ``"ignore_merges"`` and ``"ranks"`` modes (a
  pre-token that is a token is that token), and a ``"ranks"``-mode tokenizer with tokens that
  no merge builds lists every split of every token into two tokens, by the token's id, as
  transformers' ``TikTokenConverter`` does, so that the Rust BPE merges like tiktoken;
* pre-tokenizer: ``Split(Regex(pattern), "isolated")`` then ``ByteLevel(use_regex=False)``, where
  the pattern is translated for Oniguruma (see :func:`translate_pattern_for_onig`);
* decoder ``ByteLevel``; special tokens as ``added_tokens`` with their real ids (also listed in
  the model vocabulary, which is what makes ``tokenizers`` keep ids above or between the ranks).

This module is also copied into model folders as remote code next to ``tokenization_bbpe.py``:
it may import only flat sibling modules, relatively, and third-party libraries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .byte_unicode import spell_vocab

if TYPE_CHECKING:
    from .tokenizer import Tokenizer


# ------------------------------------------------------------------ pattern translation

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
      are Oniguruma's ``\\A``, ``\\Z`` and ``\\z``; Oniguruma's ``^``/``$`` are line anchors,
      Python's ``(?m:^)``/``(?m:$)``;
    * inside ``[...]``: ``[`` and ``&&`` are literal in Python (version 0) but nest and
      intersect in Oniguruma (escaped one way, refused the other);
    * escapes: ``\\x{..}`` exists only in Oniguruma, ``\\U........`` and ``\\N{..}`` only in
      Python; ``(?P<name>`` is Python's spelling of ``(?<name>``; comments ``(?#..)`` are dropped.

    Anything else whose meaning differs or is unverified raises ValueError: ``\\w``/``\\b``
    (Oniguruma's word characters include all numbers, Python's only decimal digits), back
    references, conditionals, inline flags other than ``i``, ``\\G``, ``\\K``, ``\\h``, verbose
    mode.
    """

    def __init__(self, pattern: str, source: str) -> None:
        self.src = pattern
        self.pos = 0
        self.from_python = source == "python"

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
                return (r"\A" if ch == "^" else r"\Z"), False
            return f"(?m:{ch})", False
        if ch in "*+?":
            raise self.fail(f"nothing to repeat before {ch!r}")
        self.pos += 1
        if ch in "{}":
            return "\\" + ch, True
        return ch, True

    def group(self) -> tuple[str, bool]:
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
                        return header, False
        body = self.alternation()
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
        if ch in "sSdDnrtfv":
            return "\\" + ch, True
        if ch == "0" and not self.peek().isdigit():
            return self.codepoint("0", start), True
        if not in_class and ch in "AZz":
            if ch == "Z":
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

    def char_class(self) -> str:
        start = self.pos
        self.pos += 1
        out = ["["]
        if self.peek() == "^":
            out.append("^")
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
            if ch == "\\":
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
        out.append("]")
        return "".join(out)


def translate_pattern_for_onig(pattern: str) -> str:
    r"""Rewrite a Python ``regex`` split pattern so that Oniguruma (``tokenizers``) splits the same.

    The known OpenAI patterns need one change: ``\p{N}{1,3}+`` (possessive in Python, but "one
    or more runs of 1-3 digits" in Oniguruma) becomes ``(?>\p{N}{1,3})``; ``$`` becomes ``\Z``
    (same meaning, Oniguruma's spelling). See :class:`_Translator` for every rule. Raises
    ValueError naming the position of a construct that has no known equivalent.
    """
    if not pattern:
        return pattern
    return _Translator(pattern, "python").run()


def translate_pattern_from_onig(pattern: str) -> str:
    """The inverse direction: an Oniguruma split pattern (from a tokenizer.json) for ``regex``."""
    if not pattern:
        return pattern
    return _Translator(pattern, "onig").run()


# ------------------------------------------------------------------ tokenizer.json


def token_splits(vocab: Mapping[int, bytes], ids: Iterable[int]) -> list[tuple[int, int, int]]:
    """``(left id, right id, token id)`` for every split of every token of ``ids`` into two
    tokens of ``ids`` (``vocab`` gives their bytes), by token id, then left and right id.

    These are the pairs that tiktoken's rule merges (``"ranks"`` mode), in the order that makes
    ``tokenizers``' merge-list BPE agree with it (transformers' ``TikTokenConverter`` order).
    """
    token_id: dict[bytes, int] = {}
    for idx in sorted(ids, reverse=True):  # a byte string listed twice is its lowest id
        token_id[vocab[idx]] = idx
    splits = []
    for data, idx in token_id.items():
        found = []
        for k in range(1, len(data)):
            a = token_id.get(data[:k])
            if a is not None:
                b = token_id.get(data[k:])
                if b is not None:
                    found.append((a, b, idx))
        splits += found
    splits.sort(key=lambda split: (split[2], split[0], split[1]))
    return splits

_ADDED_TOKEN_DEFAULTS = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}


def _added_token(content: str, idx: int, **fields: Any) -> dict[str, Any]:
    entry = {"id": int(idx), "content": content}
    for key, default in _ADDED_TOKEN_DEFAULTS.items():
        entry[key] = bool(fields.get(key, default))
    return entry


def tokenizer_json_dict(
    tok: Tokenizer,
    *,
    added_tokens_extra: Iterable[Mapping[str, Any]] | None = None,
    trim_offsets: bool = False,
) -> dict[str, Any]:
    """The whole tokenizer.json for ``tok`` as a dict (``json.dumps`` it to write the file).

    ``added_tokens_extra``: more ``added_tokens`` entries, as dicts with ``id`` and ``content``
    and optionally ``single_word``, ``lstrip``, ``rstrip``, ``normalized``, ``special`` (default
    False for these extras), e.g. tokens added through transformers' ``add_tokens``. An id or a
    string used twice raises ValueError. ``trim_offsets`` goes to the ByteLevel post-processor
    (True strips the leading space from each token's offsets, as GPT-2 fast tokenizers do).
    """
    specials = dict(tok.special_tokens)
    special_ids = set(specials.values())
    spelled = spell_vocab(tok.vocab, skip=special_ids)
    vocab = {text: idx for idx, text in spelled.items()}
    if tok.mode == "ranks" and any(tok.unmerged_tokens.values()):
        pairs = [(a, b) for a, b, _ in token_splits(tok.vocab, set(spelled))]
    else:
        pairs = list(tok.merges)
    merges = [[spelled[a], spelled[b]] for a, b in pairs]

    added = [_added_token(content, idx) for content, idx in specials.items()]
    for extra in added_tokens_extra or ():
        fields = {k: v for k, v in extra.items() if k in _ADDED_TOKEN_DEFAULTS}
        fields.setdefault("special", False)
        fields.setdefault("normalized", not fields["special"])
        added.append(_added_token(str(extra["content"]), int(extra["id"]), **fields))
    seen_ids: dict[int, str] = {}
    seen_content: set[str] = set()
    for entry in added:
        idx, content = entry["id"], entry["content"]
        if idx in seen_ids or content in seen_content:
            raise ValueError(f"added token {content!r} (id {idx}) repeats an id or a string")
        if idx in spelled:
            raise ValueError(f"added token {content!r}: id {idx} is already the normal token {spelled[idx]!r}")
        if content in vocab:
            raise ValueError(f"added token {content!r} (id {idx}) spells the normal token {vocab[content]}")
        seen_ids[idx] = content
        seen_content.add(content)
    added.sort(key=lambda entry: entry["id"])
    # Listing added tokens in the model vocabulary too makes tokenizers keep their ids; without
    # it, ids above a hole are renumbered to follow the vocabulary.
    for entry in added:
        vocab[entry["content"]] = entry["id"]

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": trim_offsets, "use_regex": False}
    if tok.pattern:
        split = {
            "type": "Split",
            "pattern": {"Regex": translate_pattern_for_onig(tok.pattern)},
            "behavior": "Isolated",
            "invert": False,
        }
        pre_tokenizer: dict[str, Any] = {"type": "Sequence", "pretokenizers": [split, dict(byte_level)]}
    else:
        pre_tokenizer = dict(byte_level)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": dict(byte_level),
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": tok.mode != "merges",
            "vocab": vocab,
            "merges": merges,
        },
    }
