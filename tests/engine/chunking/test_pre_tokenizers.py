"""Pre-tokenizer pipelines against ``tokenizers``' ``PreTokenizer.pre_tokenize_str``, and in the engine.

* The Python pipeline cuts hypothesis text into the same pieces, with the same offsets, as
  ``tokenizers`` for every step kind: Split with each behaviour, inverted, over patterns that can
  match empty text and over literal strings; Digits; Punctuation; ByteLevel with and without its
  regex and prefix space; steps after ByteLevel (they see byte symbols); and the real families.
* The character classes of Digits and Punctuation agree with ``tokenizers`` on every code point.
* The engine trains, encodes, extends, counts chunks, pickles and saves with a pipeline and a
  normalizer; a single plain pattern still takes the fast path.
"""

from __future__ import annotations

import json
import pickle
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex, pre_tokenizers

from hf_bbpe import RegexTokenizer, Tokenizer
from hf_bbpe.engine.training import counting_reference as chunk_counting
from hf_bbpe.engine.chunking.byte_unicode import token_to_unicode
from hf_bbpe.engine.training.counting_reference import count_chunks
from hf_bbpe.engine.files.minbpe_model import read_model_file
from hf_bbpe.engine.chunking.chunking import Chunking
from hf_bbpe.engine.chunking.patterns import SPLIT_PATTERNS, chunk_splitter
from hf_bbpe.engine.chunking.pre_tokenizers import (
    ByteLevel,
    Digits,
    Punctuation,
    Sequence,
    Split,
    pre_tokenizer_from_json,
)
from hf_bbpe.engine.chunking.onig_regex import translate_pattern_from_onig

from .test_normalizers import CODE_POINTS

DOCS = [doc for doc in open(__import__("pathlib").Path(__file__).resolve().parents[2] / "data" / "text" /
                            "mix-sample.txt", encoding="utf-8").read().split("\n\n") if doc.strip()]
BEHAVIORS = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]


def _split(pattern: str, behavior: str = "isolated", invert: bool = False) -> pre_tokenizers.Split:
    return pre_tokenizers.Split(Regex(pattern), behavior=behavior, invert=invert)


def _bytes(use_regex: bool = False, add_prefix_space: bool = False) -> pre_tokenizers.ByteLevel:
    return pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, trim_offsets=True, use_regex=use_regex)


PIPELINES = {
    "starcoder": pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), _bytes(True)]),
    "gpt_neox": _bytes(True),
    "prefix_space": _bytes(True, add_prefix_space=True),
    "prefix_space_no_regex": pre_tokenizers.Sequence([_split(r"\s+", "merged_with_next"), _bytes(False, True)]),
    "deepseek_v3": pre_tokenizers.Sequence([_split(r"\p{N}{1,3}"), _split(r"[一-龥\u3040-ゟ゠-ヿ]+"),
                                            _split(r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
                                            _bytes()]),
    "digit_runs": pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False), _bytes()]),
    **{f"punctuation_{b}": pre_tokenizers.Sequence([pre_tokenizers.Punctuation(b), _bytes(True)]) for b in BEHAVIORS},
    **{f"split_{b}{'_inverted' if inv else ''}": pre_tokenizers.Sequence([_split(r"\s+|[,.]", b, inv), _bytes()])
       for b in BEHAVIORS for inv in (False, True)},
    **{f"empty_matches_{b}": pre_tokenizers.Sequence([_split(r"a*|(?=b)", b), _bytes()]) for b in BEHAVIORS},
    "literal_string": pre_tokenizers.Sequence([pre_tokenizers.Split("ab", "merged_with_next"), _bytes()]),
    "after_byte_level": pre_tokenizers.Sequence([_bytes(True), pre_tokenizers.Digits(True),
                                                 pre_tokenizers.Punctuation("contiguous"), _split("Ġ", "merged_with_next")]),
    "byte_level_twice": pre_tokenizers.Sequence([_bytes(True, True), _split("Ã", "merged_with_previous"), _bytes()]),
}

ALPHABET = list("aab b 12 ３٣²½⑫\n\t\r  .,!?-—«»'s'tÄé\u0301日本語ｶ😀ĠÃ\u00a0\u3000") + ["ab", "don't", "WE'LL"]
TEXTS = st.lists(st.sampled_from(ALPHABET), max_size=25).map("".join)


def _ours(name: str):
    return pre_tokenizer_from_json(json.loads(PIPELINES[name].__getstate__()), translate=translate_pattern_from_onig)


def _spelled(piece: str | bytes) -> str:
    return token_to_unicode(piece if isinstance(piece, bytes) else piece.encode("utf-8"))


def _compare(name: str, text: str) -> None:
    expected = PIPELINES[name].pre_tokenize_str(text)
    ours = _ours(name)
    assert [_spelled(piece) for piece in ours.pre_tokenize(text)] == [piece for piece, _ in expected]
    with_positions = ours.pre_tokenize_with_positions(text)
    assert [(_spelled(piece), (min(pos), max(pos) + 1)) for piece, pos in with_positions] == expected


@pytest.mark.parametrize("name", list(PIPELINES))
@settings(max_examples=120, deadline=None)
@given(text=TEXTS)
def test_pipeline_splits_like_tokenizers(name, text):
    _compare(name, text)


@pytest.mark.parametrize("name", ["starcoder", "deepseek_v3", "prefix_space", "after_byte_level", "punctuation_merged_with_next"])
def test_pipeline_splits_documents_like_tokenizers(name):
    for doc in DOCS[::4]:
        _compare(name, doc)


@pytest.mark.parametrize("table,step", [("NUMERIC", pre_tokenizers.Digits(individual_digits=True)),
                                        ("PUNCTUATION", pre_tokenizers.Punctuation())])
def test_character_classes_agree_with_tokenizers_on_every_code_point(table, step):
    ours = Digits(True) if table == "NUMERIC" else Punctuation()
    for start in range(0, len(CODE_POINTS), 100_000):
        text = "a" + "a".join(chr(c) for c in CODE_POINTS[start : start + 100_000]) + "a"
        assert ours.pre_tokenize(text) == [piece for piece, _ in step.pre_tokenize_str(text)]


def test_python_categories_differ_from_tokenizers_classes():
    """Why the classes come from tokenizers: Python's Unicode data says otherwise for some."""
    python_numeric = {c for c in CODE_POINTS if unicodedata.category(chr(c)) in ("Nd", "Nl", "No")}
    from hf_bbpe.engine.chunking.unicode_tables import code_points

    assert python_numeric != code_points("NUMERIC")


def test_plain_patterns_are_recognised():
    """A plain pattern (chunks = its matches) is what ``pattern=`` makes; the built-in patterns
    match every character, so their isolated Split is plain too, and they keep the C scanner."""
    gpt2, gpt4, o200k = (SPLIT_PATTERNS[name] for name in ("gpt2", "gpt4", "o200k"))
    assert Split(gpt4).plain_pattern == gpt4
    assert Sequence([Split(o200k), ByteLevel(use_regex=False)]).plain_pattern == o200k
    assert ByteLevel(use_regex=True).plain_pattern == SPLIT_PATTERNS["gpt2"]
    assert ByteLevel(use_regex=False).plain_pattern == ""
    assert Split(r"\p{L}+", "removed", invert=True).plain_pattern == r"\p{L}+"
    isolated = Sequence([Split(r"\p{L}+"), ByteLevel(use_regex=False)])
    assert isolated.plain_pattern is None and isolated.split_pattern == r"\p{L}+"
    assert isolated.pre_tokenize("ab 12cd!") == ["ab", " 12", "cd", "!"]  # skipped text is kept
    for pipeline in (ByteLevel(add_prefix_space=True), Split(gpt4, "merged_with_next"), Split(gpt4, invert=True),
                     Sequence([Digits(True), ByteLevel()]), Sequence([Split(gpt2), Split(gpt4)])):
        assert pipeline.plain_pattern is None and pipeline.split_pattern is None, pipeline
    tok = RegexTokenizer("gpt4")
    assert tok.chunking.split is chunk_splitter(SPLIT_PATTERNS["gpt4"])  # the C scanner, nothing in between
    own = RegexTokenizer(r"\p{L}+")
    assert own.pre_tokenizer == Split(r"\p{L}+", "removed", invert=True) and own.is_plain
    assert own.chunks("ab 12cd!") == ["ab", "cd"]  # tiktoken's and minbpe's reading: skipped text is dropped


def test_json_round_trip_and_errors():
    pipeline = Sequence([Split(r"\p{N}{1,3}", "merged_with_previous", True), Digits(True), Punctuation("contiguous"),
                         Split("ab", literal=True), ByteLevel(True, False, False)])
    data = pipeline.to_json()
    assert data["pretokenizers"][0] == {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"},
                                        "behavior": "MergedWithPrevious", "invert": True}
    assert pre_tokenizer_from_json(data) == pipeline
    assert pickle.loads(pickle.dumps(pipeline)) == pipeline
    with pytest.raises(ValueError, match="pre_tokenizer 'WhitespaceSplit' is not supported"):
        pre_tokenizer_from_json({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}]})
    with pytest.raises(ValueError, match="unknown split behavior 'sideways'"):
        Split("a", "sideways")
    with pytest.raises(ValueError, match="invalid split pattern"):
        Split("(a")
    assert Split("gpt4").pre_tokenize("a gpt4 b") == ["a ", "gpt4", " b"]  # a file's regex, not a pattern name


STARCODER = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                   {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]}


@pytest.fixture(scope="module")
def starcoder_nfkc():
    tok = RegexTokenizer(pre_tokenizer=STARCODER, normalizer="NFKC")
    tok.train(DOCS, 700, progress=False)
    return tok


def test_training_counts_pipeline_chunks(starcoder_nfkc):
    tok = starcoder_nfkc
    assert not any(tok.vocab[i].strip().isdigit() and len(tok.vocab[i].strip()) > 1 for i in tok.vocab)
    counts = count_chunks(DOCS, tok.chunking.counting_spec, num_workers=2)
    assert counts == count_chunks(DOCS, tok.chunking.counting_spec, num_workers=1)
    assert "12" not in counts and "fi" in count_chunks(["ﬁ"], tok.chunking.counting_spec, num_workers=1)
    for doc in DOCS[:200]:
        ids = tok.encode(doc)
        assert tok.decode(ids) == unicodedata.normalize("NFKC", doc)
        assert ids == [i for chunk in tok.chunks(doc) for i in tok.encode_single_piece(chunk)]


def test_pipeline_and_normalizer_survive_save_pickle_and_batches(starcoder_nfkc, tmp_path):
    tok = starcoder_nfkc
    tok.save(tmp_path / "star")
    assert (tmp_path / "star.model").read_text(encoding="utf-8").startswith("hf_bbpe v2\n\n{")
    contents = read_model_file(tmp_path / "star.model")
    assert contents.normalizer == {"type": "NFKC"} and contents.pre_tokenizer == STARCODER | {
        "pretokenizers": [STARCODER["pretokenizers"][0], dict(STARCODER["pretokenizers"][1], trim_offsets=True)]}
    back = Tokenizer.from_file(tmp_path / "star.model")
    unpickled = pickle.loads(pickle.dumps(tok))
    texts = [doc + " ﬁ①" for doc in DOCS[:300]]
    expected = [tok.encode(text) for text in texts]
    assert [back.encode(t) for t in texts] == expected == [unpickled.encode(t) for t in texts]
    assert tok.encode_batch(texts * 8, num_workers=2) == expected * 8
    with pytest.raises(ValueError, match="pre-tokenizes with a pipeline"):
        tok.pattern


def test_extend_keeps_the_pipeline_and_old_ids(starcoder_nfkc):
    extended = starcoder_nfkc.extend(DOCS[::2], 50)
    assert extended.pre_tokenizer == starcoder_nfkc.pre_tokenizer and extended.normalizer == starcoder_nfkc.normalizer
    assert len(extended.merges) == len(starcoder_nfkc.merges) + 50
    plain = "1234 5678 9"
    assert extended.encode(plain) == starcoder_nfkc.encode(plain) == [ord(c) for c in plain]


def test_normalizer_runs_on_each_stretch_between_special_tokens():
    """As tokenizers: specials are cut from the text first, so a mark after one does not compose."""
    tok = RegexTokenizer("gpt4", normalizer="NFC")
    tok.register_special_tokens({"<s>": 300})
    assert tok.encode("e<s>\u0301", allowed_special="all") == [ord("e"), 300, 0xCC, 0x81]
    assert tok.encode("e\u0301") == list("é".encode())


def test_an_isolated_split_counts_the_text_its_pattern_skips(monkeypatch):
    """Training on a pipeline that keeps skipped text counts that text too, in parallel or not."""
    monkeypatch.setattr(chunk_counting, "_BATCH_CHARS", 5000)
    tok = RegexTokenizer(pre_tokenizer=Sequence([Split(r"\p{L}+"), ByteLevel(use_regex=False)]))
    expected: dict[str, int] = {}
    for doc in DOCS[:300]:
        for chunk in tok.chunks(doc):
            expected[chunk] = expected.get(chunk, 0) + 1
    assert count_chunks(DOCS[:300], tok.chunking.counting_spec, num_workers=2) == expected
    assert sum(len(c) * n for c, n in expected.items()) == sum(map(len, DOCS[:300]))


def test_chunk_splitter_with_spans_maps_chunks_to_the_original_text():
    splitter = Chunking("NFKC", Sequence([Digits(True), ByteLevel(add_prefix_space=True, use_regex=True)]))
    text = "ﬁ ①2"
    chunks = splitter.with_spans(text)
    assert [piece for piece, _ in chunks] == splitter(text) == [" fi", " ", " 1", " 2"]
    # an inserted space takes the span of the character after it, as in tokenizers' offsets
    assert [spans for _, spans in chunks] == [[(0, 1)] * 3, [(1, 2)], [(2, 3)] * 2, [(3, 4)] * 2]
    bytes_chunks = Chunking(None, Sequence([ByteLevel(use_regex=True), Digits(True)])).with_spans("é1")
    assert bytes_chunks == [("é".encode(), [(0, 1), (0, 1)]), (b"1", [(1, 2)])]
