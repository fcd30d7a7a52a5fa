"""The split-pattern registry: the one place where pre-tokenization regexes are defined.

Byte-level BPE never merges across the chunks that a split pattern cuts text into. Each pattern
is written once, in the spelling that `tokenizers`, transformers' converters and Ollama's table
use: no possessive quantifiers (tiktoken writes GPT-2's and cl100k's with them, which JavaScript,
.NET and Oniguruma read differently or not at all), so that the ``tokenizer.json`` we save
compiles elsewhere and is recognised by its regex. Each cuts every text as tiktoken's own
spelling does (tests hold them to tiktoken's ids), and tiktoken's spellings, which files saved
before carry, still name the same pattern (:data:`EQUIVALENT_PATTERNS`).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable

import regex

from .unicode_tables import ranges as _class_ranges

try:  # imported by name, not "from .", so that remote-code copies of this file load without it
    _native = importlib.import_module("._pretokenize", __package__)
except ImportError:
    _native = None

GPT2_SPLIT_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""GPT-2 / r50k_base / p50k_base, as GPT-2's own ``encoder.py``, transformers' ``GPT2Tokenizer`` and
`tokenizers`' ``ByteLevel`` write it (tiktoken's spelling, :data:`TIKTOKEN_GPT2_SPLIT_PATTERN`, cuts
the same chunks)."""

GPT4_SPLIT_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+(?!\S)|\s"""
r"""GPT-4 / cl100k_base: tiktoken's pattern without its possessive quantifiers (none changes a match
here: each guards a run that nothing after it could give back). In a ``tokenizer.json`` its ``$``
is written ``(?=\n?(?![\s\S]))``, which Oniguruma and JavaScript both read (see :mod:`onig_regex`)."""

O200K_SPLIT_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
"""GPT-4o / o200k_base."""

LLAMA3_SPLIT_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
r"""Llama 3, character for character as llama_models' ``Tokenizer.pat_str`` (Llama 4 uses o200k's).

It is tiktoken's earlier cl100k pattern, and it is not GPT4_SPLIT_PATTERN: its ``\s*[\r\n]+``
keeps the spaces after a text's last line break in the next chunk (GPT-4's ``\s++$`` takes them
with the line break)."""

QWEN2_SPLIT_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
"""Qwen2 and Qwen3, character for character as transformers' ``Qwen2Tokenizer`` (its
``tokenizer.json`` holds the same regex): Llama 3's with one digit a chunk."""

TEKKEN_SPLIT_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""",
        r"""\p{N}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
"""Mistral's Tekken, character for character as the ``pattern`` of mistral_common's ``tekken_*.json``:
o200k's without contractions and with one digit a chunk."""

SUPERBPE_STAGE1_SPLIT_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
"""SuperBPE's stage 1 (Liu et al., 2025), character for character as the paper's
``scripts/train_tokenizer.sh``: its plain-BPE baseline, and the first merges of a SuperBPE
tokenizer (up to the transition point). o200k's without contractions."""

SUPERBPE_STAGE2_SPLIT_PATTERN = r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"""
"""SuperBPE's stage 2, character for character as the paper's ``scripts/extend_tokenizer.sh``: it
matches only numbers, runs of two or more punctuation characters and runs of spaces, and the
paper's tokenizers cut text with it as ``tokenizers``' ``Split(pattern, "isolated")``: the text
between two matches (words and the single spaces between them) is one chunk, so merges may span
words (superwords). See :data:`ISOLATED_PATTERNS`."""

NATIVE_PATTERNS: dict[str, str] = {"gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN, "o200k": O200K_SPLIT_PATTERN,
                                   "llama3": LLAMA3_SPLIT_PATTERN, "qwen2": QWEN2_SPLIT_PATTERN,
                                   "tekken": TEKKEN_SPLIT_PATTERN, "superbpe_stage1": SUPERBPE_STAGE1_SPLIT_PATTERN}
"""The canonical name of each built-in pattern (the C scanner in ``csrc/scan/`` splits these).
Each matches every character, so its matches are also the pieces of ``Split(pattern, "isolated")``."""

ISOLATED_PATTERNS: dict[str, str] = {"superbpe_stage2": SUPERBPE_STAGE2_SPLIT_PATTERN}
"""Built-in patterns that leave text between their matches, which are used as ``tokenizers``'
``Split(pattern, "isolated")`` (the matches and the text between them are the chunks): the C
scanner of each cuts text that way, and so does the engine's ``pattern=`` given one of them (for
any other pattern, ``pattern=`` keeps only the matches, as tiktoken does)."""

MINBPE_GPT4_SPLIT_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
)
"""minbpe's ``GPT4_SPLIT_PATTERN``: the same chunks as Llama 3's pattern (not as cl100k's)."""

MINBPE_GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""minbpe's ``GPT2_SPLIT_PATTERN``: the same chunks as GPT-2's."""

TIKTOKEN_GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
"""tiktoken's spelling of GPT-2's pattern (``r50k_pat_str``), and this registry's before it took
GPT-2's own: the same chunks."""

TIKTOKEN_CL100K_SPLIT_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
"""tiktoken's spelling of cl100k's pattern (possessive), and this registry's before: the same chunks."""

EQUIVALENT_PATTERNS: dict[str, str] = {
    MINBPE_GPT4_SPLIT_PATTERN: "llama3",
    MINBPE_GPT2_SPLIT_PATTERN: "gpt2",
    TIKTOKEN_GPT2_SPLIT_PATTERN: "gpt2",
    TIKTOKEN_CL100K_SPLIT_PATTERN: "gpt4",
}
"""Other spellings of a built-in pattern, which cut every text into the same chunks (a hypothesis
test holds each to its built-in pattern through the ``regex`` module): they take the C scanner,
and a ``tokenizer.json`` we write carries the built-in spelling instead (:func:`canonical_pattern`)."""

SPLIT_PATTERNS: dict[str, str] = {
    **NATIVE_PATTERNS,
    **ISOLATED_PATTERNS,
    "r50k": GPT2_SPLIT_PATTERN,
    "r50k_base": GPT2_SPLIT_PATTERN,
    "p50k_base": GPT2_SPLIT_PATTERN,
    "cl100k": GPT4_SPLIT_PATTERN,
    "cl100k_base": GPT4_SPLIT_PATTERN,
    "gpt4o": O200K_SPLIT_PATTERN,
    "o200k_base": O200K_SPLIT_PATTERN,
    "llama3": LLAMA3_SPLIT_PATTERN,
}
"""Names accepted wherever a pattern is asked for, in any letter case; any other string is a regex."""

# A string like this is a (mistyped) name, not a regex: it has no regex syntax, and as a regex it
# would match only itself, so every other character of the text would be dropped.
_NAME_LIKE = regex.compile(r"[A-Za-z][A-Za-z0-9_\-]{0,31}")


def resolve_pattern(pattern: str | None) -> str | None:
    """Return the regex for a registered name, or ``pattern`` itself after checking it compiles;
    another spelling of a built-in pattern (:data:`EQUIVALENT_PATTERNS`: tiktoken's, minbpe's)
    becomes the registry's spelling, which cuts every text the same way.

    Names are matched ignoring letter case ("GPT4" is "gpt4"). A string that looks like a name
    (letters, digits, ``_`` and ``-`` only, e.g. "gpt-4" or "gpt5") but is not registered raises
    ValueError listing the registered names, instead of becoming a regex that matches only
    itself. ``None`` means "no split" (the whole text is one chunk, as in minbpe's BasicTokenizer).
    """
    if pattern is None:
        return None
    found = SPLIT_PATTERNS.get(pattern) or SPLIT_PATTERNS.get(pattern.lower())
    if found is not None:
        return found
    if _NAME_LIKE.fullmatch(pattern):
        import difflib

        close = difflib.get_close_matches(pattern.lower(), SPLIT_PATTERNS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown split pattern name {pattern!r}{hint}; registered names: {', '.join(SPLIT_PATTERNS)}. "
            f"To use a literal word as a regex, write it as a group, e.g. '(?:{pattern})'"
        )
    compile_pattern(pattern)
    return canonical_pattern(pattern)


def pattern_name(pattern: str | None) -> str | None:
    """The canonical short name ("gpt2", "gpt4", "o200k", "llama3", "qwen2", "tekken",
    "superbpe_stage1") of a known pattern that matches every character, else None."""
    return next((name for name, known in NATIVE_PATTERNS.items() if known == pattern), None)


def scanner_name(pattern: str | None) -> str | None:
    """The built-in pattern that cuts text as ``pattern`` does: its own name, or the name of the
    pattern it is another spelling of (:data:`EQUIVALENT_PATTERNS`); None for any other pattern."""
    return pattern_name(pattern) or EQUIVALENT_PATTERNS.get(pattern)


def canonical_pattern(pattern: str) -> str:
    """The registry's spelling of ``pattern`` when it is another spelling of a built-in pattern
    (the same chunks on every text), else ``pattern`` itself: what tokenizers hold and files we
    write carry."""
    name = scanner_name(pattern)
    return pattern if name is None else NATIVE_PATTERNS[name]


def isolated_pattern_name(pattern: str | None) -> str | None:
    """The name of ``pattern`` in :data:`ISOLATED_PATTERNS`, else None."""
    return next((name for name, known in ISOLATED_PATTERNS.items() if known == pattern), None)


def isolated_scanner_name(pattern: str | None) -> str | None:
    """The built-in pattern whose C scanner cuts text as ``Split(pattern, "isolated")`` does (its
    matches and the text between them): one of :data:`ISOLATED_PATTERNS`, or a pattern that matches
    every character (:func:`scanner_name`); None for any other pattern."""
    return isolated_pattern_name(pattern) or scanner_name(pattern)


HOLD_GIL = {"concurrent": False}
"""Keyword arguments for splitting a text with the regex module: by default it releases and takes
back the GIL around every match, which costs a fifth of its speed on one thread and makes two
threads slower than one (they contend for the GIL at every match)."""


@functools.lru_cache(maxsize=32)
def compile_pattern(pattern: str) -> regex.Pattern:
    """Compile a split pattern once per process; a bad regex raises ValueError naming it.

    A built-in pattern (or another spelling of one) is compiled with the owners' character
    classes (:func:`owner_classes_pattern`), as its C scanner splits; any other pattern means what
    it means in the ``regex`` module, whose Unicode may be newer than the one ``tokenizers`` runs a
    saved tokenizer.json with (then they differ on the code points assigned in between)."""
    if scanner_name(pattern) is not None or isolated_pattern_name(pattern) is not None:
        return regex.compile(owner_classes_pattern(pattern))
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"invalid split pattern {pattern!r}: {exc}") from None


@functools.lru_cache(maxsize=32)
def chunk_splitter(pattern: str) -> Callable[[str], list[str]]:
    """``text -> chunks``: the whole text of each match of ``pattern``, in order.

    This is the one way text is cut into chunks, for training, counting and encoding. A chunk is
    the whole match even when the pattern has capturing groups, as in tiktoken and `tokenizers`
    (``regex.findall`` would return the groups and drop the rest of each match).

    The GPT-2, GPT-4, o200k, Llama 3, Qwen2, Tekken and SuperBPE stage-1 patterns, and their other spellings, are
    split by a C scanner (``csrc/scan/``), several times faster than the regex module; tests check that
    both give the same chunks. Every other pattern uses the regex module, holding the GIL (see
    :data:`HOLD_GIL`).
    """
    name = scanner_name(pattern)
    if _native is not None and hasattr(_native, f"split_{name}"):
        _load_character_classes()
        return getattr(_native, f"split_{name}")
    return regex_splitter(pattern)


@functools.lru_cache(maxsize=32)
def regex_splitter(pattern: str) -> Callable[[str], list[str]]:
    """:func:`chunk_splitter` without the C scanners: the regex module, holding the GIL (what
    runs where the C module is not built, as in remote code)."""
    compiled = compile_pattern(pattern)
    if compiled.groups == 0:
        return functools.partial(compiled.findall, **HOLD_GIL)  # whole matches already, and faster than finditer
    return functools.partial(_whole_matches, compiled)


def native_scanner(pattern: str | None, *, isolated: bool = False) -> object | None:
    """The C scanner of a known pattern as a capsule that ``_chunk_bpe`` splits whole texts with
    (no Python object per chunk, no GIL), or None for other patterns or without the C module.
    ``isolated``: the scanner that cuts text as ``Split(pattern, "isolated")`` does (see
    :func:`isolated_scanner_name`) instead of into the pattern's matches."""
    name = isolated_scanner_name(pattern) if isolated else scanner_name(pattern)
    if _native is None or name is None or not hasattr(_native, f"scanner_{name}"):
        return None
    _load_character_classes()
    return getattr(_native, f"scanner_{name}")


def part_scanner() -> object | None:
    """The C scanner that the chunk encoder cuts long pieces into words with (SuperBPE's stage-1
    pattern; see ``encode_by_parts`` in ``csrc/encode/``), or None without the C module. Getting it
    does not build the class table: the encoder uses it once a scanner has."""
    return None if _native is None else getattr(_native, "scanner_superbpe_stage1", None)


def native_isolated_splitter(pattern: str | None) -> Callable[[str], list[str]] | None:
    """``text -> chunks`` in C for ``Split(pattern, "isolated")`` (see :func:`isolated_scanner_name`),
    or None for other patterns or without the C module."""
    name = isolated_scanner_name(pattern)
    if _native is None or name is None or not hasattr(_native, f"split_{name}"):
        return None
    _load_character_classes()
    return getattr(_native, f"split_{name}")


def _whole_matches(compiled: regex.Pattern, text: str) -> list[str]:
    return [match.group() for match in compiled.finditer(text, **HOLD_GIL)]


# ---- The owners' character classes (unicode_tables.py), for the C scanners and the regex module

_CLASS_BITS = {"LETTER": 1, "NUMBER": 2, "SPACE": 4, "UPPERISH": 8, "LOWERISH": 16}
"""Each class set of ``unicode_tables`` and its bit in the C scanners' table (``csrc/scan/``)."""

_CLASS_SPELLINGS = {"LETTER": r"\p{L}", "NUMBER": r"\p{N}", "SPACE": r"\s",
                    "UPPERISH": r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", "LOWERISH": r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"}
"""How the built-in patterns write each class (the only classes they use, with ``\\S``)."""


def _owner_mask(name: str) -> bytearray:
    """One byte per code point: 1 where the owners' class ``name`` has it."""
    mask = bytearray(0x110000)
    for first, last in _class_ranges(name):
        mask[first : last + 1] = b"\x01" * (last + 1 - first)
    return mask


def _regex_module_mask(spelling: str) -> bytearray:
    """One byte per code point: 1 where the ``regex`` module's class ``spelling`` has it; from the
    runs of the class (a few thousand matches, not a Python object per code point)."""
    from array import array

    everything = array("I", range(0x110000)).tobytes().decode("utf-32-le", "surrogatepass")
    mask = bytearray(0x110000)
    for run in regex.finditer(spelling + "+", everything):
        start, end = run.span()
        mask[start:end] = b"\x01" * (end - start)
    return mask


def _set_of(points: list[int]) -> str:
    """A ``[...]`` set of the code points ``points`` (sorted), in runs."""
    parts, i = [], 0
    while i < len(points):
        j = i
        while j + 1 < len(points) and points[j + 1] == points[j] + 1:
            j += 1
        parts.append(f"\\U{points[i]:08X}" + (f"-\\U{points[j]:08X}" if j > i else ""))
        i = j + 1
    return "[" + "".join(parts) + "]"


@functools.cache
def _corrected_classes() -> dict[str, str]:
    """For each class whose code points differ between the ``regex`` module's Unicode and the
    owners' (``unicode_tables``), a V1 set of exactly the owners' code points: the module's own
    class (fast: a property lookup), less what only it has, plus what only the owners have. The
    correction is tested first against the lowest code point it names, so text below it costs
    one comparison more."""
    corrected = {}
    for name, spelling in _CLASS_SPELLINGS.items():
        owner, module = _owner_mask(name), _regex_module_mask(spelling)
        if owner == module:
            continue
        diff = (int.from_bytes(owner, "little") ^ int.from_bytes(module, "little")).to_bytes(0x110000, "little")
        differing = [run.start() for run in regex.finditer(b"\x01", diff)]
        only_module = [c for c in differing if module[c]]
        only_owner = [c for c in differing if owner[c]]
        inner = spelling[1:-1] if spelling.startswith("[") else spelling
        less = f"--[[\\U{only_module[0]:08X}-\\U0010FFFF]&&{_set_of(only_module)}]" if only_module else ""
        corrected[spelling] = f"[[{inner}{less}]{_set_of(only_owner) if only_owner else ''}]"
    if r"\s" in corrected:
        corrected[r"\S"] = "[^" + corrected[r"\s"] + "]"
    return corrected


def owner_classes_pattern(pattern: str) -> str:
    """``pattern`` (a built-in pattern's spelling) for the ``regex`` module, with the classes of the
    owners' engines (``unicode_tables``) instead of the module's own where its Unicode differs:
    \\p{L}, \\p{N}, \\s, \\S and o200k's two case sets each become a V1 set of exactly the owners'
    code points. The same pattern where they agree."""
    corrected = _corrected_classes()
    if not corrected:
        return pattern
    tokens = regex.compile("|".join(regex.escape(spelling) for spelling in sorted(corrected, key=len, reverse=True)))
    return "(?V1)" + tokens.sub(lambda match: corrected[match.group()], pattern)


@functools.cache
def _load_character_classes() -> None:
    """Give the C scanners the owners' character classes (``unicode_tables``), one byte of class
    bits per code point."""
    table = 0
    for name, bit in _CLASS_BITS.items():
        table += bit * int.from_bytes(_owner_mask(name), "little")  # bits apart: no carries
    _native.set_classes(table.to_bytes(0x110000, "little"))


PROBE_TEXT = (
    "Hello world, it's 2024! The quick brown fox jumps over the lazy dog.\n\n"
    "    def f(x):\n        return x ** 2  # square\n"
    "Größe über Straße; naïve café. Привет, мир! Γειά σου κόσμε. مرحبا بالعالم. नमस्ते दुनिया।\n"
    "你好，世界。こんにちは世界。안녕하세요 세계. 1,234,567.89 ١٢٣ 😀👍🏽\t\r\n"
)
"""A sample of common text (words in several scripts, code, numbers, punctuation, spaces, line
breaks) on which :func:`check_split_pattern` looks for empty matches."""


@functools.lru_cache(maxsize=32)
def check_split_pattern(pattern: str) -> None:
    """Refuse, before any counting, a split pattern that training cannot use; one-line ValueError.

    A regex that Oniguruma and JavaScript cannot read as it means (``(?m)``, ``(a)\\1``) could not
    be saved as ``tokenizer.json`` after training; one that can match the empty string (``a*``, found
    on :data:`PROBE_TEXT`) makes empty chunks. The built-in patterns pass. An empty pattern is the
    caller's to refuse (it means "no split" or the default); a pattern that leaves training nothing
    to merge shows only on the text (``training.check_counted``).
    """
    if not pattern or scanner_name(pattern) is not None or isolated_pattern_name(pattern) is not None:
        return
    from .onig_regex import translate_pattern_for_onig

    compiled = compile_pattern(pattern)
    shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
    try:
        translate_pattern_for_onig(pattern)
    except ValueError as exc:
        raise ValueError(f"{exc}; tokenizer.json could not hold it, so it is refused before training") from None
    empty = next((m for m in compiled.finditer(PROBE_TEXT) if m.end() == m.start()), None)
    if empty is None and compiled.fullmatch(""):
        empty = compiled.fullmatch("")
    if empty is not None:
        where = PROBE_TEXT[max(0, empty.start() - 8):empty.start() + 8]
        raise ValueError(f"split pattern {shown!r} can match the empty string (e.g. in {where!r}): every chunk must "
                         "hold a character (write '+' for '*', or drop the alternative that can match nothing)")
