"""The trainer learns exactly the merges of the references.

* ``tie_break="first_occurrence"`` equals minbpe's training loop, and the default
  ``"smallest_pair"`` the same loop with rustbpe's tie-break, both as written naively in
  tests/reference_bpe.py (recount everything per merge), on hypothesis corpora full of ties and
  runs ("aaaa"), multi-byte text and several documents, with every split pattern.
* The default rule equals rustbpe 0.1.0 itself, byte for byte, on the real multilingual sample.
* ``tie_break="huggingface"`` equals ``tokenizers``' own BpeTrainer with a ByteLevel pipeline
  (GPT-2's pattern in ByteLevel, GPT-4's in a Split before it), byte for byte, on real text at
  several vocab sizes and on hypothesis corpora, with min_frequency.
* minbpe's own examples: Wikipedia's "aaabdaaabac" and minbpe parity on taylorswift.txt.
* vocab_size errors, running out of pairs, min_frequency, verbose output, train_from_counts.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path

import pytest
import rustbpe
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.reference_bpe import (
    corpus_chunks,
    merge_pair,
    merge_pair_scan,
    minbpe_verbose_lines,
    naive_train,
    naive_train_counts,
    split_chunks,
)

from tokenizers import pre_tokenizers, trainers

from hf_bbpe import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, O200K_SPLIT_PATTERN, BasicTokenizer, RegexTokenizer
from hf_bbpe.engine.chunking.byte_unicode import unicode_to_token
from tests.support.hf_trainers import byte_level_bpe

TEXT_DIR = Path(__file__).resolve().parents[2] / "data" / "text"
TIE_BREAKS = ("smallest_pair", "first_occurrence", "huggingface")
PATTERNS = {"basic": None, "gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN, "o200k": O200K_SPLIT_PATTERN}


def make_tokenizer(pattern: str | None):
    return BasicTokenizer() if pattern is None else RegexTokenizer(pattern)


def train_quietly(tok, docs, vocab_size, **kwargs):
    """Train without the "ran out of pairs" warning that small corpora give."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok.train(docs, vocab_size, progress=False, **kwargs)
    return tok


def read_documents(name: str) -> list[str]:
    """A text file of tests/data/text split into documents at blank lines."""
    return (TEXT_DIR / name).read_text(encoding="utf-8").split("\n\n")


# ---------------------------------------------------------------- minbpe's examples


@pytest.mark.parametrize("cls", [BasicTokenizer, RegexTokenizer])
@pytest.mark.parametrize(
    "tie_break, merges",
    [
        # minbpe: "aa" first, then the pair that occurs first among the ties ("aa" + "a")
        ("first_occurrence", {(97, 97): 256, (256, 97): 257, (257, 98): 258}),
        # Wikipedia's walk-through: Z=aa, Y=ab (the smaller of the tied pairs), X=ZY
        ("smallest_pair", {(97, 97): 256, (97, 98): 257, (256, 257): 258}),
    ],
)
def test_wikipedia_example(cls, tie_break, merges):
    tok = cls()
    tok.train("aaabdaaabac", 256 + 3, tie_break=tie_break)
    assert tok.merges == merges and list(tok.merges) == list(merges)
    ids = tok.encode("aaabdaaabac")
    assert ids == [258, 100, 258, 97, 99]
    assert tok.decode(ids) == "aaabdaaabac"


@pytest.mark.slow
@pytest.mark.parametrize("pattern_name", ["basic", "gpt4"])
def test_minbpe_parity_on_taylorswift(pattern_name):
    """first_occurrence reproduces minbpe's train on minbpe's own test text (200 merges)."""
    text = (TEXT_DIR / "taylorswift.txt").read_text(encoding="utf-8")
    pattern = PATTERNS[pattern_name]
    expected = naive_train(corpus_chunks([text], pattern), 200, "first_occurrence")
    tok = make_tokenizer(pattern)
    tok.train(text, 256 + 200, tie_break="first_occurrence", progress=False)
    assert list(tok.merges.items()) == list(expected.items())


# ------------------------------------------------------ parity with the naive reference

# Small alphabets make ties and runs frequent; the pool mixes ASCII, whitespace that the split
# patterns treat specially, and 2-, 3- and 4-byte UTF-8 characters.
CHAR_POOL = list("aab b1 2\n\r\t'sé日本🙂") + ["\u00a0", "ll", "  "]


@st.composite
def corpora(draw) -> list[str]:
    alphabet = draw(st.lists(st.sampled_from(CHAR_POOL), min_size=1, max_size=4, unique=True))
    piece = st.builds(lambda ch, n: ch * n, st.sampled_from(alphabet), st.integers(1, 7))  # runs like "aaaa"
    doc = st.lists(piece, max_size=25).map("".join)
    return draw(st.lists(doc, min_size=1, max_size=5).filter(any))  # training refuses empty input


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=corpora(),
    pattern_name=st.sampled_from(sorted(PATTERNS)),
    tie_break=st.sampled_from(TIE_BREAKS),
    num_merges=st.integers(0, 40),
    min_frequency=st.sampled_from([1, 1, 2, 3]),
)
def test_trainer_equals_naive_reference(docs, pattern_name, tie_break, num_merges, min_frequency):
    pattern = PATTERNS[pattern_name]
    expected = naive_train(corpus_chunks(docs, pattern), num_merges, tie_break, min_frequency)
    tok = train_quietly(
        make_tokenizer(pattern), docs, 256 + num_merges, tie_break=tie_break, min_frequency=min_frequency
    )
    assert list(tok.merges.items()) == list(expected.items())


@settings(max_examples=100, deadline=None)
@given(docs=corpora(), tie_break=st.sampled_from(TIE_BREAKS), num_merges=st.integers(1, 30))
def test_one_string_is_one_document(docs, tie_break, num_merges):
    """A str is trained on as one text (minbpe's train(text)), not cut at blank lines."""
    text = "\n\n".join(docs)
    expected = naive_train(corpus_chunks([text], GPT4_SPLIT_PATTERN), num_merges, tie_break)
    tok = train_quietly(RegexTokenizer("gpt4"), text, 256 + num_merges, tie_break=tie_break)
    assert list(tok.merges.items()) == list(expected.items())


@given(st.lists(st.integers(0, 3), max_size=30), st.integers(0, 3), st.integers(0, 3))
def test_reference_merge_scan_equals_plain_loop(ids, a, b):
    """The reference trainer's fast merge is the obvious left-to-right merge."""
    assert merge_pair_scan(list(ids), (a, b), 9) == merge_pair(ids, (a, b), 9)


# --------------------------------------------------------------------- parity with rustbpe


def rustbpe_ranks(docs, vocab_size, pattern):
    ref = rustbpe.Tokenizer()
    ref.train_from_iterator(docs, vocab_size, pattern=pattern)
    return dict(ref.get_mergeable_ranks())


@pytest.mark.parametrize(
    "pattern_name, vocab_size", [("gpt4", 2048), ("gpt4", 4096), ("gpt2", 1024), ("o200k", 1024)]
)
def test_default_rule_equals_rustbpe_on_multilingual_sample(pattern_name, vocab_size):
    docs = read_documents("mix-sample.txt")
    pattern = PATTERNS[pattern_name]
    tok = RegexTokenizer(pattern)
    tok.train(docs, vocab_size, progress=False)
    expected = rustbpe_ranks(docs, vocab_size, pattern)
    assert len(expected) == vocab_size
    assert sorted(tok.mergeable_ranks().items(), key=lambda kv: kv[1]) == sorted(expected.items(), key=lambda kv: kv[1])


@settings(max_examples=100, deadline=None)
@given(docs=corpora(), pattern_name=st.sampled_from(["gpt2", "gpt4", "o200k"]), num_merges=st.integers(1, 30))
def test_default_rule_equals_rustbpe_on_generated_corpora(docs, pattern_name, num_merges):
    pattern = PATTERNS[pattern_name]
    tok = train_quietly(RegexTokenizer(pattern), docs, 256 + num_merges)
    assert tok.mergeable_ranks() == rustbpe_ranks(docs, 256 + num_merges, pattern)


# ------------------------------------------------------------ parity with tokenizers' BpeTrainer


def bpe_trainer_merges(docs, vocab_size, pattern_name, min_frequency=0):
    """BpeTrainer's merges as byte pairs, with the ByteLevel pipeline people use for this pattern."""
    ref = byte_level_bpe(None if pattern_name == "gpt2" else PATTERNS[pattern_name])
    ref.train_from_iterator(docs, trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    ))
    merges = json.loads(ref.to_str())["model"]["merges"]
    return [(unicode_to_token(a), unicode_to_token(b)) for a, b in merges]


def merges_as_bytes(tok):
    return [(tok.vocab[a], tok.vocab[b]) for a, b in tok.merges]


@pytest.mark.parametrize("text", ["mix-sample.txt", "taylorswift.txt"])
@pytest.mark.parametrize("pattern_name", ["gpt2", "gpt4"])
@pytest.mark.parametrize("vocab_size", [300, 1000, 5000])
def test_huggingface_rule_equals_bpe_trainer_on_real_text(text, pattern_name, vocab_size):
    docs = read_documents(text)
    tok = RegexTokenizer(PATTERNS[pattern_name])
    tok.train(docs, vocab_size, tie_break="huggingface", progress=False)
    expected = bpe_trainer_merges(docs, vocab_size, pattern_name)
    assert len(expected) == vocab_size - 256
    assert merges_as_bytes(tok) == expected


@settings(max_examples=100, deadline=None)
@given(
    docs=corpora(),
    pattern_name=st.sampled_from(["gpt2", "gpt4"]),
    num_merges=st.integers(1, 30),
    min_frequency=st.sampled_from([0, 1, 2, 3]),
)
def test_huggingface_rule_equals_bpe_trainer_on_generated_corpora(docs, pattern_name, num_merges, min_frequency):
    tok = train_quietly(
        RegexTokenizer(PATTERNS[pattern_name]), docs, 256 + num_merges, tie_break="huggingface",
        min_frequency=min_frequency,
    )
    assert merges_as_bytes(tok) == bpe_trainer_merges(docs, 256 + num_merges, pattern_name, min_frequency)


# ---------------------------------------------------------------- options and edge cases


@pytest.mark.parametrize("vocab_size", [255, 0, -1])
def test_vocab_size_below_256_is_an_error(vocab_size):
    tok = RegexTokenizer()
    with pytest.raises(ValueError, match="vocab_size"):
        tok.train("hello world", vocab_size)
    with pytest.raises(ValueError, match="vocab_size"):
        tok.train_from_counts({"hello": 1}, vocab_size)


def test_vocab_size_256_learns_nothing():
    tok = BasicTokenizer()
    tok.train("hello hello", 256)
    assert tok.merges == {}
    assert tok.encode("hi") == [104, 105]


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_running_out_of_pairs_stops_early_with_a_warning(tie_break):
    tok = RegexTokenizer()
    with pytest.warns(UserWarning, match="merges"):
        tok.train("abab ab", 300, tie_break=tie_break)
    assert list(tok.merges.items()) == list(naive_train(corpus_chunks(["abab ab"], tok.pattern), 44, tie_break).items())
    assert len(tok.merges) == 3  # ab, abab, " ab"
    with pytest.warns(UserWarning):  # minbpe crashes here: max() arg is an empty sequence
        tok.train("1 2 3", 260, tie_break=tie_break)  # chunks "1", " ", "2", ...: no pair at all
    assert tok.merges == {}


def test_min_frequency_stops_at_rare_pairs():
    text = "ab ab ab cd cd xy"
    tok = RegexTokenizer()
    with pytest.warns(UserWarning, match="min_frequency"):
        tok.train(text, 300, min_frequency=2)
    expected = naive_train(corpus_chunks([text], tok.pattern), 44, "smallest_pair", min_frequency=2)
    assert list(tok.merges.items()) == list(expected.items())
    # " c" before " ab": both occur twice, and (32, 99) < (32, 256)
    assert [tok.vocab[i] for i in tok.merges.values()] == [b"ab", b" c", b" ab", b" cd"]


def test_unknown_tie_break_is_an_error():
    with pytest.raises(ValueError, match="tie_break"):
        RegexTokenizer().train("aaa", 260, tie_break="random")


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_verbose_prints_merges_as_minbpe(tie_break, capsys):
    text = "aaabdaaabac hello hello wörld"
    tok = RegexTokenizer()
    tok.train(text, 256 + 8, verbose=True, tie_break=tie_break, progress=False)
    chunks = corpus_chunks([text], tok.pattern)
    expected = minbpe_verbose_lines(tok.merges, naive_train_counts(chunks, tok.merges))
    assert list(tok.merges.items()) == list(naive_train(chunks, 8, tie_break).items())
    assert capsys.readouterr().out.splitlines() == expected


def test_progress_bars_on_request_only(capsys):
    docs = read_documents("mix-sample.txt")[:100]
    RegexTokenizer().train(docs, 300, progress=True)
    shown = capsys.readouterr().err
    assert "counting" in shown and "merging" in shown
    RegexTokenizer().train(docs, 300, progress=False)
    RegexTokenizer().train(docs, 300)  # default: only on a terminal, and pytest's stderr is not one
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
@pytest.mark.parametrize("as_bytes", [False, True])
def test_train_from_counts_equals_train(tie_break, as_bytes):
    """Counts made elsewhere (in order of first appearance) give the same merges as train()."""
    docs = read_documents("mix-sample.txt")[:300]
    counts = Counter(chunk for doc in docs for chunk in split_chunks(doc, GPT4_SPLIT_PATTERN))
    if as_bytes:
        counts = {chunk.encode("utf-8"): n for chunk, n in counts.items()}
    from_counts = RegexTokenizer()
    from_counts.train_from_counts(counts, 600, tie_break=tie_break, progress=False)
    trained = RegexTokenizer()
    trained.train(docs, 600, tie_break=tie_break, progress=False)
    assert list(from_counts.merges.items()) == list(trained.merges.items())
    assert len(trained.merges) == 600 - 256


def test_training_skips_ids_of_registered_special_tokens():
    docs = read_documents("mix-sample.txt")[:200]
    plain = RegexTokenizer()
    plain.train(docs, 400, progress=False)
    tok = RegexTokenizer()
    tok.register_special_tokens({"<|endoftext|>": 300})
    tok.train(docs, 400, progress=False)
    assert tok.special_tokens == {"<|endoftext|>": 300}
    assert 300 not in tok.merges.values() and len(tok.merges) == 400 - 256
    # the same tokens are learned in the same order, only their ids move past 300
    assert [tok.vocab[i] for i in tok.merges.values()] == [plain.vocab[i] for i in plain.merges.values()]
    assert tok.encode("<|endoftext|>", allowed_special="all") == [300]


def test_retraining_starts_from_scratch():
    docs = read_documents("mix-sample.txt")
    tok = RegexTokenizer()
    tok.train(docs[:100], 300, progress=False)
    tok.train(docs[100:200], 300, progress=False)
    fresh = RegexTokenizer()
    fresh.train(docs[100:200], 300, progress=False)
    assert list(tok.merges.items()) == list(fresh.merges.items())


def test_generator_of_documents_equals_list():
    docs = read_documents("mix-sample.txt")[:200]
    from_list = RegexTokenizer()
    from_list.train(docs, 500, progress=False)
    from_generator = RegexTokenizer()
    from_generator.train((d for d in docs), 500, progress=False)
    assert list(from_generator.merges.items()) == list(from_list.merges.items())


def test_train_from_counts_rejects_keys_that_are_not_text():
    with pytest.raises(TypeError, match="5"):
        BasicTokenizer().train_from_counts({5: 3, "ab": 2}, 258)


def test_train_from_counts_refuses_negative_counts():
    """A negative count was dropped without a word; it is a caller's error (issue 36)."""
    with pytest.raises(ValueError, match="must not be negative: 'ab' has count -1"):
        RegexTokenizer().train_from_counts({"ab": -1, "cd": 5}, 260)


def test_train_from_counts_refuses_counts_that_overflow_the_merge_loop():
    """Pair counts past 2**63 - 1 wrapped the C loop's int64 (UBSan: signed overflow) while the
    twin learned on (issue 36): such counts are refused before the loop; the largest that fit train."""
    with pytest.raises(ValueError, match="pair counts could reach 18,446,744,073,709,551,616"):
        RegexTokenizer().train_from_counts({"ab": 2**62, "abab": 2**62}, 260)
    tok = RegexTokenizer()
    tok.train_from_counts({"ab": 2**62, "ba": 2**62 - 1}, 257)
    assert tok.merges == {(97, 98): 256}
