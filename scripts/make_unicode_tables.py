"""Write the sets in ``hf_bbpe/engine/chunking/unicode_tables.py``: the owners' Unicode data, where Python's differs.

    python scripts/make_unicode_tables.py [--check]

The engine normalizes with ``unicodedata`` and classifies characters with the ``regex`` module,
whose Unicode versions are newer than the tables compiled into ``tokenizers``. Three sets are
read from the installed ``tokenizers`` itself, by running its components on every code point:

* ``NORMALIZATION_ACTIVE``: the code points that its normalizers (NFC, NFD, NFKC, NFKD) act on:
  those with a decomposition (canonical or compatibility, Hangul included), those with a non-zero
  canonical combining class, and those that appear in a decomposition. Its tables are Unicode
  9.0's; a character outside this set is left alone by ``tokenizers`` even where a later Unicode
  version (Python's) would decompose, reorder or compose it.
* ``NUMERIC``: what the ``Digits`` pre-tokenizer splits on (Rust's ``char::is_numeric``).
* ``PUNCTUATION``: what the ``Punctuation`` pre-tokenizer splits on.

The character classes of the built-in split patterns (``LETTER``, ``NUMBER``, ``SPACE``,
``UPPERISH``, ``LOWERISH``) are those of Unicode :data:`CLASSES_UNICODE_VERSION`, the version that
the owners' regex engines classify with (tiktoken's Rust regex tables and the Oniguruma inside
``tokenizers``; ``tests/engine/chunking/test_owner_unicode.py`` probes both on every code point). They are
made from ``unicodedata2`` of that version (the ``unicode-tables`` extra), general categories, and
White_Space from :data:`WHITE_SPACE` (unchanged since Unicode 6.3).

Only the part of the file below its GENERATED line is rewritten. ``--check`` compares the file
with what the installed ``tokenizers`` gives and exits 1 on a difference, without writing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import tokenizers
from tokenizers import normalizers, pre_tokenizers

CLASSES_UNICODE_VERSION = "16.0.0"
"""What tiktoken 0.14's Rust regex and the Oniguruma inside tokenizers 0.23 classify with (both probed)."""

WHITE_SPACE = [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
               0x205F, 0x3000]
"""Unicode's White_Space property (PropList.txt), which ``\\s`` means in both engines."""

CLASS_CATEGORIES = {
    "LETTER": ("Lu", "Ll", "Lt", "Lm", "Lo"),                # \p{L}
    "NUMBER": ("Nd", "Nl", "No"),                            # \p{N}
    "UPPERISH": ("Lu", "Lt", "Lm", "Lo", "Mn", "Mc", "Me"),  # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k's)
    "LOWERISH": ("Ll", "Lm", "Lo", "Mn", "Mc", "Me"),        # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
}
"""The general categories of each class set; SPACE is :data:`WHITE_SPACE`."""

CLASS_NAMES = ("LETTER", "NUMBER", "SPACE", "UPPERISH", "LOWERISH")
"""The class sets, in the module's order."""

OUT = Path(__file__).resolve().parents[1] / "hf_bbpe" / "engine" / "chunking" / "unicode_tables.py"
CODE_POINTS = [c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]  # U+0000 is the separator


def _apply_each(function, texts: list[str]) -> list[str]:
    """``function`` on each text, run as one call on the texts joined by U+0000 (inert everywhere)."""
    out = function("\x00".join(texts)).split("\x00")
    assert len(out) == len(texts)
    return out


def normalization_active() -> set[int]:
    nfkd = normalizers.NFKD().normalize_str
    nfd = normalizers.NFD().normalize_str
    chars = [chr(c) for c in CODE_POINTS]
    decomposed = _apply_each(nfkd, chars)
    active = {ord(ch) for ch, d in zip(chars, decomposed) if d != ch}
    for ch, d in zip(chars, decomposed):
        if d != ch:
            active.update(map(ord, d))
    # A mark with combining class k is moved before U+0345 (class 240) when 0 < k < 240, and
    # after U+0334 (class 1) when 1 < k: together every non-zero class shows.
    for probe, mark in (("a\u0345{}", "\u0345"), ("a{}\u0334", "\u0334")):
        texts = [probe.format(ch) for ch in chars]
        for c, text, result in zip(CODE_POINTS, texts, _apply_each(nfd, texts)):
            if result != text:
                active.add(c)
    active.update({0x0334, 0x0345})
    return active


def split_points(pre_tokenizer) -> set[int]:
    """Code points that ``pre_tokenizer`` cuts out of ``a<c>a`` as a piece of their own."""
    found = set()
    step = 50_000
    for i in range(0, len(CODE_POINTS), step):
        batch = CODE_POINTS[i : i + step]
        text = "a" + "a".join(map(chr, batch)) + "a"
        for piece, (start, end) in pre_tokenizer.pre_tokenize_str(text):
            if end - start == 1 and piece != "a":
                found.add(ord(piece))
    return found


def ranges_text(points: set[int]) -> str:
    ranges: list[list[int]] = []
    for c in sorted(points):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    items = [f"{a:X}" if a == b else f"{a:X}-{b:X}" for a, b in ranges]
    lines = []
    line = ""
    for item in items:
        if len(line) + len(item) + 1 > 96:
            lines.append(line)
            line = ""
        line = f"{line} {item}" if line else item
    lines.append(line)
    return "\n".join(lines)


def class_sets() -> dict[str, set[int]]:
    """The character classes of Unicode CLASSES_UNICODE_VERSION, from ``unicodedata2`` of that version."""
    try:
        import unicodedata2
    except ImportError:
        sys.exit(f"needs unicodedata2=={CLASSES_UNICODE_VERSION}: pip install -e '.[unicode-tables]'")
    if unicodedata2.unidata_version != CLASSES_UNICODE_VERSION:
        sys.exit(f"unicodedata2 has Unicode {unicodedata2.unidata_version}, not {CLASSES_UNICODE_VERSION}")
    category = {c: unicodedata2.category(chr(c)) for c in range(0x110000)}
    sets = {name: {c for c, cat in category.items() if cat in cats} for name, cats in CLASS_CATEGORIES.items()}
    sets["SPACE"] = set(WHITE_SPACE)
    return {name: sets[name] for name in CLASS_NAMES}


def committed_class_sets() -> dict[str, set[int]]:
    """The class sets as ``hf_bbpe/engine/chunking/unicode_tables.py`` holds them now (to rewrite the rest without
    ``unicodedata2``)."""
    sys.path.insert(0, str(OUT.parents[1]))
    from hf_bbpe.engine.chunking import unicode_tables

    return {name: set(unicode_tables.code_points(name)) for name in CLASS_NAMES}


MARKER = "# ---- GENERATED by scripts/make_unicode_tables.py: everything below this line ----\n"


def render(classes: dict[str, set[int]] | None = None) -> str:
    """The module with its generated part (below MARKER) made from the installed tokenizers and,
    unless ``classes`` gives them, the character classes of :func:`class_sets`."""
    current = OUT.read_text(encoding="utf-8")
    body = current[: current.index(MARKER) + len(MARKER)]
    body += f'\nTOKENIZERS_VERSION = "{tokenizers.__version__}"\n'
    sets = {
        "NORMALIZATION_ACTIVE": normalization_active(),
        "NUMERIC": split_points(pre_tokenizers.Digits(individual_digits=True)),
        "PUNCTUATION": split_points(pre_tokenizers.Punctuation()),
    }
    body += f'\nCLASSES_UNICODE_VERSION = "{CLASSES_UNICODE_VERSION}"\n'
    classes = class_sets() if classes is None else classes
    sets.update((name, classes[name]) for name in CLASS_NAMES)
    for name, points in sets.items():
        body += f'\n{name} = """\n{ranges_text(points)}\n"""\n'
    return body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    parser.add_argument("--keep-classes", action="store_true",
                        help="keep the file's character classes (no unicodedata2 needed); rewrite the rest")
    args = parser.parse_args()
    text = render(committed_class_sets() if args.keep_classes else None)
    if args.check:
        same = OUT.read_text(encoding="utf-8") == text
        print(f"{OUT}: {'up to date' if same else 'DIFFERS from the installed tokenizers'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
