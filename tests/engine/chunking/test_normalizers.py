"""Normalizers against ``tokenizers``' own: every code point, random marked text, alignments.

``tokenizers`` normalizes with Unicode 9.0 tables and Python's ``unicodedata`` is newer; the
engine follows ``tokenizers`` (see hf_bbpe/engine/chunking/normalizers.py). These tests compare the normalized
text of every code point in every form, hypothesis text built from combining marks, decomposable,
Hangul and post-9.0 characters (alone and in sequences of forms), and the alignment of each
normalized character to the original text, which ``tokenizers`` reports as offsets.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import PreTokenizedString, Regex, normalizers, pre_tokenizers

from hf_bbpe.engine.chunking.normalizers import (
    FORMS,
    NormalizerSequence,
    UnicodeNormalizer,
    normalizer_from_json,
    original_span,
    resolve_normalizer,
)

CODE_POINTS = [c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
MARKS = [chr(c) for c in CODE_POINTS if unicodedata.combining(chr(c))]
DECOMPOSABLE = [chr(c) for c in CODE_POINTS if unicodedata.decomposition(chr(c))]
# characters newer than Unicode 9.0 that Python's tables normalize and tokenizers' do not
NEWER = ["\u32ff", "\ua7f2", "\uab69", "\U00010781", "\U00011930", "\U00011935", "\U00011938", "\U0001e08f"]
OTHER = list("aeiouAEIOU 1\n가각\u1100\u1161\u11a8\u0b47\u0b3e\u0b57ﬁ①Ａｶﾞ") + NEWER

SPECS = ["NFC", "NFD", "NFKC", "NFKD", "NFD+NFC", "NFKD+NFC+NFD", "NFC+NFKC"]


def _theirs(spec: str):
    steps = [getattr(normalizers, name)() for name in spec.split("+")]
    return steps[0] if len(steps) == 1 else normalizers.Sequence(steps)


def _apply_each(function, texts: list[str]) -> list[str]:
    out = function("\x00".join(texts)).split("\x00")
    assert len(out) == len(texts)
    return out


@pytest.mark.parametrize("form", FORMS)
def test_every_code_point_normalizes_as_tokenizers_does(form):
    chars = [chr(c) for c in CODE_POINTS]
    expected = _apply_each(_theirs(form).normalize_str, chars)
    ours = UnicodeNormalizer(form)
    assert [ch for ch, want in zip(chars, expected) if ours.normalize(ch) != want] == []
    assert [ch for ch, want in zip(chars[::5], expected[::5]) if ours.normalize_with_alignment(ch)[0] != want] == []


def test_python_and_tokenizers_really_differ_where_the_module_says():
    """The documented difference is real: ``unicodedata`` decomposes these, tokenizers does not."""
    nfkd = normalizers.NFKD()
    differ = [ch for ch in NEWER if unicodedata.normalize("NFKD", ch) != nfkd.normalize_str(ch)
              or unicodedata.normalize("NFC", "a\u0301" + ch) != normalizers.NFC().normalize_str("a\u0301" + ch)]
    assert "\u32ff" in differ and "\U00011938" in differ
    assert UnicodeNormalizer("NFKD").normalize("\u32ff") == "\u32ff" != unicodedata.normalize("NFKD", "\u32ff")


MARKED = st.text(alphabet=st.sampled_from(MARKS + DECOMPOSABLE[::3] + OTHER), min_size=1, max_size=12)


@settings(max_examples=400, deadline=None)
@given(text=MARKED, spec=st.sampled_from(SPECS))
def test_random_marked_text_normalizes_as_tokenizers_does(text, spec):
    ours = resolve_normalizer(spec)
    expected = _theirs(spec).normalize_str(text)
    assert ours.normalize(text) == expected
    assert ours.normalize_with_alignment(text)[0] == expected


_EACH_CHARACTER = pre_tokenizers.Split(Regex(r"[\s\S]"), "isolated")


def _their_alignment(spec: str, text: str) -> list[tuple[str, tuple[int, int]]]:
    """Each normalized character with its original span, as tokenizers reports offsets."""
    pretokenized = PreTokenizedString(text)
    normalizer = _theirs(spec)
    pretokenized.normalize(lambda normalized: normalizer.normalize(normalized))
    _EACH_CHARACTER.pre_tokenize(pretokenized)
    return [(piece, offsets) for piece, offsets, _ in
            pretokenized.get_splits(offset_referential="original", offset_type="char")]


@settings(max_examples=400, deadline=None)
@given(text=MARKED, spec=st.sampled_from(SPECS))
def test_alignment_equals_tokenizers_offsets(text, spec):
    normalized, alignment = resolve_normalizer(spec).normalize_with_alignment(text)
    assert list(zip(normalized, alignment)) == _their_alignment(spec, text)


def test_alignment_on_documents_and_compatibility_characters():
    text = "ﬁne Ｆｕｌｌ ①②, e\u0301\u0323 가\u11a8 ｶﾞ ㎏ ½ \u32ff x\u0345\u0301"
    for spec in SPECS:
        normalized, alignment = resolve_normalizer(spec).normalize_with_alignment(text)
        assert list(zip(normalized, alignment)) == _their_alignment(spec, text), spec
    normalized, alignment = UnicodeNormalizer("NFKC").normalize_with_alignment("ﬁx")
    assert normalized == "fix" and alignment == [(0, 1), (0, 1), (1, 2)]
    assert original_span(alignment, 0, 2) == (0, 1) and original_span(alignment, 1, 3) == (0, 2)
    assert original_span(alignment, 3, 3) == (2, 2)


def test_json_forms_and_specs():
    sequence = NormalizerSequence([UnicodeNormalizer("NFD"), UnicodeNormalizer("NFKC")])
    assert sequence.to_json() == {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "NFKC"}]}
    assert normalizer_from_json(sequence.to_json()) == sequence == resolve_normalizer("NFD+NFKC")
    assert resolve_normalizer(["nfd", {"type": "NFKC"}]) == sequence
    assert resolve_normalizer(None) is None and resolve_normalizer("") is None and normalizer_from_json(None) is None
    with pytest.raises(ValueError, match="normalizer 'Lowercase' is not supported"):
        normalizer_from_json({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]})
    with pytest.raises(ValueError, match="unknown normalization form 'NFX'"):
        resolve_normalizer("NFX")


def test_unicode_tables_are_those_of_the_installed_tokenizers():
    """hf_bbpe/engine/chunking/unicode_tables.py is generated from tokenizers; regenerate it when this fails
    (python scripts/make_unicode_tables.py; its character classes are checked against the owners'
    engines in test_owner_unicode.py)."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "scripts" / "make_unicode_tables.py"
    spec = importlib.util.spec_from_file_location("make_unicode_tables", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render(module.committed_class_sets()) == module.OUT.read_text(encoding="utf-8")
