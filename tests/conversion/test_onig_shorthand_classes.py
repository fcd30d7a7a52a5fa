"""``\\w``, ``\\d``, ``\\s``, ``\\b`` and their negations translate between Python's ``regex`` and
Oniguruma (the ``tokenizers`` library) with the same meaning on every code point.

Each check runs the real ``tokenizers`` ``Split`` pre-tokenizer on the translated pattern and
Python's ``regex`` on the original, over every code point but the surrogates (in chunks), and
compares the pieces. Python -> Oniguruma (what ``to_tokenizer_json`` writes) holds on every code
point; Oniguruma -> Python (reading a tokenizer.json) holds on every code point that Oniguruma's
older Unicode tables assign (as for ``\\p{..}``, see docs/conversion.md).
"""

from __future__ import annotations

import functools
import json

import pytest
import regex
from tokenizers import Regex, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

import conversion
from hf_bbpe import Tokenizer
from hf_bbpe.engine.chunking.onig_regex import translate_pattern_for_onig, translate_pattern_from_onig
from tests.support.hf import mix_docs

pytestmark = pytest.mark.slow  # about 30 s: each check scans all 1.1 million code points

CHUNK = 1 << 16
# Oniguruma folds these to two or three letters in a case-insensitive class; Python does not
FOLDING = "ss SS ß ẞ ﬀ ﬁ ŉ ǰ ΐ և ﬆ İ i̇ K k \u212a ſ"


@functools.lru_cache(maxsize=1)
def every_code_point() -> str:
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))


def chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def onig_pieces(pattern: str, text: str) -> list[tuple[int, int]]:
    return [span for _, span in pre_tokenizers.Split(Regex(pattern), "isolated").pre_tokenize_str(text)]


def python_pieces(pattern: str, text: str) -> list[tuple[int, int]]:
    """What Split("isolated") makes of Python's matches: the matches and the gaps between them."""
    spans, pos = [], 0
    for match in regex.finditer(pattern, text):
        if match.start() > pos:
            spans.append((pos, match.start()))
        if match.end() > match.start():
            spans.append(match.span())
        pos = match.end()
    if pos < len(text):
        spans.append((pos, len(text)))
    return spans


def assert_same_split(python_pattern: str, onig_pattern: str, text: str) -> None:
    for chunk in chunks(text):
        onig, python = onig_pieces(onig_pattern, chunk), python_pieces(python_pattern, chunk)
        if onig != python:
            first = next(i for i, (a, b) in enumerate(zip(onig + [None], python + [None])) if a != b)
            span = (onig + [None])[first] or (python + [None])[first]
            raise AssertionError(f"{python_pattern!r} splits differently at {chunk[span[0]:span[1] + 1]!r} "
                                 f"(U+{ord(chunk[span[0]]):04X}): tokenizers {onig[first:first + 2]}, "
                                 f"regex {python[first:first + 2]}")


def assert_same_class(python_class: str, onig_class: str, text: str) -> None:
    """Runs of the class split the text at every code point whose membership changes, so equal
    splits mean equal classes; single matches on ``FOLDING`` catch matches longer than one
    character (Oniguruma's case folding of ß to ss)."""
    assert_same_split(f"(?:{python_class})+", f"(?:{onig_class})+", text)
    assert_same_split(python_class, onig_class, FOLDING)


CLASSES = [
    r"\w", r"\W", r"\d", r"\D", r"\s", r"\S",
    r"[\w]", r"[^\w]", r"[\W]", r"[^\W]", r"[\D]", r"[^\D]",
    r"[\wа-я]", r"[^\w.]", r"[\W\d]", r"[^\W\d]", r"[\D\s]", r"[^\D\S]",
    r"(?i:\w)", r"(?i:[^\Wk])", r"(?i)[\W\d]",
]
# On the code points in order, \b splits wherever a word character meets a non-word one, so a
# code point classified differently moves a boundary; runs of \B keep the piece count small.
BOUNDARIES = [r"\b", r"(?i:\b)", r"(?:\B\w)+", r"(?:\B\W)+", r"(?:\w\b)+", r"\b[\b]"]


@pytest.mark.parametrize("pattern", CLASSES)
def test_python_classes_mean_the_same_in_oniguruma_on_every_code_point(pattern):
    assert_same_class(pattern, translate_pattern_for_onig(pattern), every_code_point())


@pytest.mark.parametrize("pattern", BOUNDARIES)
def test_python_word_boundaries_mean_the_same_in_oniguruma_on_every_code_point(pattern):
    assert_same_split(pattern, translate_pattern_for_onig(pattern), every_code_point() + "\b")


def test_whole_runs_match_alike():
    pattern = r"\w+|\d+|[^\w\s]+|\s+"
    assert_same_split(pattern, translate_pattern_for_onig(pattern), every_code_point())


@functools.lru_cache(maxsize=1)
def assigned_in_oniguruma() -> str:
    """The code points that the Oniguruma inside ``tokenizers`` assigns (not ``\\p{Cn}``)."""
    split = pre_tokenizers.Split(Regex(r"\p{Cn}"), "removed")
    return "".join(piece for chunk in chunks(every_code_point()) for piece, _ in split.pre_tokenize_str(chunk))


@pytest.mark.parametrize("onig", [r"\w", r"\W", r"[\w]", r"[^\w]", r"[\W]", r"[^\W]", r"[\Wa]", r"[^\W\d]",
                                  r"\d", r"\D", r"\s", r"\S", r"(?i:[\wk])"])
def test_oniguruma_classes_mean_the_same_in_python_on_every_assigned_code_point(onig):
    text = assigned_in_oniguruma()
    assert len(text) > 280000
    assert_same_class(translate_pattern_from_onig(onig), onig, text)


@pytest.mark.parametrize("onig", [r"\b", r"(?:\B\w)+", r"(?:\B\W)+", r"[\b]"])
def test_oniguruma_word_boundaries_mean_the_same_in_python(onig):
    assert_same_split(translate_pattern_from_onig(onig), onig, assigned_in_oniguruma() + "\b")


def test_a_hand_written_pattern_with_w_exports_to_tokenizer_json_with_the_same_ids(tmp_path):
    docs = mix_docs()
    tok = Tokenizer(r"\w+|[^\w\s]+|\s+(?!\S)|\s+|\b")
    tok.train(docs, 400, progress=False)
    path = tmp_path / "tokenizer.json"
    conversion.to_tokenizer_json(tok, path)
    fast = HFTokenizer.from_file(str(path))
    assert [fast.encode(doc).ids for doc in docs] == [tok.encode_ordinary(doc) for doc in docs]
    back = conversion.from_tokenizer_json(path)
    assert [back.encode_ordinary(doc) for doc in docs] == [tok.encode_ordinary(doc) for doc in docs]
    assert json.loads(path.read_text(encoding="utf-8"))["pre_tokenizer"]["pretokenizers"][0]["type"] == "Split"
