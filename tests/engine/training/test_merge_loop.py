"""The C merge loop (``csrc/merge/``) and its pure-Python twin (``engine/training/merge_loop_reference.py``) are one function.

* On hypothesis corpora given straight to both kernels (small alphabets to force ties, runs,
  empty and one-symbol words, counts past 2**32, bytes and int32 symbols, taken ids, all three
  tie-break rules (BpeTrainer's with its 32-bit counts wrapping), min_frequency, more merges than
  the corpus supports, a vetoing allow_pair, new ids too large for a 2- or 3-byte token's own
  bytes, symbols used in place, merges as arrays), the two return the same merges in the same
  order, the same stop code, and call on_merge and allow_pair with the same arguments in the same
  order. Again with the C kernel's memory sizes made tiny (pairs tracked from count 1, 2, 3 or
  never at first; tracking scans split into parts of one pair; the position pool compacted after
  every merge; a merge's log of created pairs absent or too small for most merges, so that their
  positions are found by walking the merged positions again), so that every path of its storage
  runs.
* The twin alone equals the naive reference trainer (tests/support/reference_bpe.py) under all
  three tie-break rules.
* ``reduce_words`` (the words of token ids cut where no merge of the counts that matter can join
  them, as SuperBPE's stage 2 gives them to the loop) is the same in C and in the twin, and
  ``training.learn`` learns on the cut words the merges it learns on the words themselves
  (vetoes, repeated bytes refused, the check that sends it back to the whole words), also where
  the words are cut at any ``least`` by exact counts, and a pair of count exactly ``least`` is kept.
* With the C module unimportable (a fresh interpreter), training falls back to the twin and
  learns the same merges on taylorswift.txt as the C kernel does here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import warnings
from array import array
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.reference_bpe import corpus_chunks, naive_train

from hf_bbpe import RegexTokenizer, SuperwordConfig
from hf_bbpe.engine.training import merge_loop_reference as merge_loop
from hf_bbpe.engine.training import merge_loop as trainer
from hf_bbpe.engine.training import api as training
from hf_bbpe.engine.training.options import TrainingOptions
from hf_bbpe.engine.chunking.patterns import GPT4_SPLIT_PATTERN

QUIET = TrainingOptions(progress=False)  # learn's options: smallest_pair, min_frequency 1, no output

ROOT = Path(__file__).resolve().parents[3]
TAYLORSWIFT = ROOT / "tests" / "data" / "text" / "taylorswift.txt"
KERNEL = trainer.merge_kernel()
TWIN = merge_loop

COUNTS = st.one_of(
    st.integers(1, 4),  # small and equal counts: ties
    st.integers(2**32 - 3, 2**32 + 3),  # wrong if a count were cut to 32 bits
    st.integers(0, 2**40),
)


@st.composite
def kernel_inputs(draw) -> dict:
    """Arguments for ``train`` of either kernel: words over a few symbols, with counts."""
    as_bytes = draw(st.booleans())
    pool = [97, 98, 99, 200] if as_bytes else [0, 5, 300, 70_000, 2**31 - 2]
    alphabet = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
    run = st.builds(lambda symbol, n: [symbol] * n, st.sampled_from(alphabet), st.integers(1, 6))  # "aaaa"
    word = st.lists(run, max_size=5).map(lambda runs: [s for r in runs for s in r])
    words = draw(st.lists(word, max_size=12))
    # from 65,530 up a 2-byte token's id overflows its bytes, from 2**24 - 5 a 3-byte token's
    first_id = draw(st.sampled_from([256, 256, 65_530, 2**24 - 5])) if as_bytes else 2**31 - 40
    taken = draw(st.none() | st.sets(st.integers(first_id, first_id + 30), min_size=1))
    rule = draw(st.sampled_from(["smallest_pair", "first_occurrence", "huggingface"]))
    ranks = None
    if rule == "huggingface":  # BpeTrainer's byte order, or any order of the first ids (extend's words)
        size = draw(st.sampled_from([0, 6, 301]))
        ranks = trainer.huggingface_ranks() if as_bytes else array("i", draw(st.permutations(range(size))))
    return {
        "symbols": bytes(s for w in words for s in w) if as_bytes else array("i", [s for w in words for s in w]),
        "lengths": array("i", map(len, words)),
        "counts": array("q", [draw(COUNTS) for _ in words]),
        "num_merges": draw(st.integers(0, 40)),
        "first_id": first_id,
        "taken": taken,
        "by_occurrence": rule == "first_occurrence",
        "min_frequency": draw(st.sampled_from([1, 1, 2, 3, 2**32])),
        "ranks": ranks,
        "consume": draw(st.booleans()),
        "as_arrays": draw(st.booleans()),
    }


def run_kernel(kernel, args: dict, veto: int | None) -> dict:
    """Everything a kernel returns and calls back with, for one set of arguments."""
    calls = []

    def on_merge(a, b, new_id, count):
        calls.append(("merged", a, b, new_id, count))

    def allow_pair(a, b):
        calls.append(("asked", a, b))
        return (a * 7 + b) % veto != 0

    symbols = args["symbols"]
    if args.get("consume"):  # the kernel may write in it: give it a copy of its own
        symbols = bytearray(symbols) if isinstance(symbols, bytes) else array("i", symbols)
    try:
        merges, stop = kernel.train(
            symbols, args["lengths"], args["counts"], args["num_merges"], args["first_id"], args["taken"],
            args["by_occurrence"], args["min_frequency"], on_merge, allow_pair if veto else None, args.get("ranks"),
            args.get("consume", False), args.get("as_arrays", False),
        )
    except OverflowError as error:  # new ids past 2**31 - 1
        return {"error": str(error), "calls": calls}
    return {"merges": merges, "stop": stop, "calls": calls}


@contextlib.contextmanager
def kernel_sizes(first_threshold: int, min_budget: int, compact_bytes: int, min_log: int = 1 << 16):
    """The C kernel with other memory sizes (they change how it stores things, never the merges)."""
    previous = KERNEL._tune(first_threshold, min_budget, compact_bytes, min_log)
    try:
        yield
    finally:
        KERNEL._tune(*previous)


def test_merge_kernel_is_built():
    """Otherwise the C-versus-twin tests below would compare the twin with itself."""
    assert KERNEL.__name__ == "hf_bbpe.engine.training._merge_loop"
    assert TWIN.__name__ == "hf_bbpe.engine.training.merge_loop_reference"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=kernel_inputs(), veto=st.sampled_from([None, None, 3, 5]))
def test_c_kernel_equals_twin(args, veto):
    assert run_kernel(KERNEL, args, veto) == run_kernel(TWIN, args, veto)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    args=kernel_inputs(),
    veto=st.sampled_from([None, None, 3, 5]),
    first_threshold=st.sampled_from([1, 2, 3, 2**40]),
    min_budget=st.sampled_from([1, 2, 1 << 16]),
    compact_bytes=st.sampled_from([0, 1 << 18]),
    min_log=st.sampled_from([0, 1, 2, 1 << 16]),
)
def test_c_kernel_equals_twin_with_tiny_memory_sizes(args, veto, first_threshold, min_budget, compact_bytes, min_log):
    with kernel_sizes(first_threshold, min_budget, compact_bytes, min_log):
        out = run_kernel(KERNEL, args, veto)
    assert out == run_kernel(TWIN, args, veto)


def test_merges_as_arrays_are_the_merges():
    args = {"symbols": b"aaabdaaabac", "lengths": array("i", [11]), "counts": array("q", [3]),
            "num_merges": 3, "first_id": 256, "taken": None, "by_occurrence": False, "min_frequency": 1}
    merges = run_kernel(KERNEL, args, None)["merges"]
    raw_ids, raw_counts = run_kernel(KERNEL, {**args, "as_arrays": True}, None)["merges"]
    ids, counts = array("i", raw_ids), array("q", raw_counts)
    assert [tuple(ids[3 * k:3 * k + 3]) + (c,) for k, c in enumerate(counts)] == merges
    assert ids.tolist() == [97, 97, 256, 97, 98, 257, 256, 257, 258]


@pytest.mark.parametrize("kernel", [KERNEL, TWIN], ids=["C", "python"])
def test_counts_past_32_bits_decide_the_order(kernel):
    """(a, b) occurs 2**32 + 1 times, (c, d) 2 times: cut to 32 bits, (c, d) would come first."""
    args = {"symbols": b"abcd", "lengths": array("i", [2, 2]), "counts": array("q", [2**32 + 1, 2]),
            "num_merges": 5, "first_id": 256, "taken": None, "by_occurrence": False, "min_frequency": 1}
    out = run_kernel(kernel, args, None)
    assert out["merges"] == [(97, 98, 256, 2**32 + 1), (99, 100, 257, 2)]
    assert out["stop"] == merge_loop.OUT_OF_PAIRS


@pytest.mark.parametrize("kernel", [KERNEL, TWIN], ids=["C", "python"])
@pytest.mark.parametrize(
    "by_occurrence, expected",
    [
        (True, [(97, 97, 256), (256, 97, 257), (257, 98, 258)]),  # minbpe: the tie that occurs first
        (False, [(97, 97, 256), (97, 98, 257), (256, 257, 258)]),  # rustbpe: the smaller pair
    ],
)
def test_both_tie_breaks_on_wikipedias_example(kernel, by_occurrence, expected):
    """The two rules give different merges here, so a test that swapped them would fail."""
    args = {"symbols": b"aaabdaaabac", "lengths": array("i", [11]), "counts": array("q", [1]),
            "num_merges": 3, "first_id": 256, "taken": None, "by_occurrence": by_occurrence, "min_frequency": 1}
    assert [m[:3] for m in run_kernel(kernel, args, None)["merges"]] == expected


@pytest.mark.parametrize("kernel", [KERNEL, TWIN], ids=["C", "python"])
def test_huggingface_rule_orders_bytes_by_their_characters(kernel):
    """'a'+'b' and ' '+'c' tie; by byte value (32, 99) wins, in BpeTrainer's ids ' ' (U+0120) comes after 'a'."""
    args = {"symbols": b"ab c", "lengths": array("i", [2, 2]), "counts": array("q", [1, 1]),
            "num_merges": 2, "first_id": 256, "taken": None, "by_occurrence": False, "min_frequency": 1}
    assert [m[:2] for m in run_kernel(kernel, args, None)["merges"]] == [(32, 99), (97, 98)]
    args["ranks"] = trainer.huggingface_ranks()
    assert [m[:2] for m in run_kernel(kernel, args, None)["merges"]] == [(97, 98), (32, 99)]


@pytest.mark.parametrize("kernel", [KERNEL, TWIN], ids=["C", "python"])
def test_huggingface_rule_counts_in_32_bits(kernel):
    """BpeTrainer's i32 pair counts: 2**32 + 1 reads as 1; 2**31 + 1 (negative) and 2**32 (0) are never queued."""
    args = {"symbols": b"abcdefgh", "lengths": array("i", [2, 2, 2, 2]),
            "counts": array("q", [2**32 + 1, 2, 2**31 + 1, 2**32]), "num_merges": 5, "first_id": 256,
            "taken": None, "by_occurrence": False, "min_frequency": 1, "ranks": trainer.huggingface_ranks()}
    out = run_kernel(kernel, args, None)
    assert out["merges"] == [(99, 100, 256, 2), (97, 98, 257, 2**32 + 1)]
    assert out["stop"] == merge_loop.OUT_OF_PAIRS


@pytest.mark.parametrize("kernel", [KERNEL, TWIN], ids=["C", "python"])
def test_huggingface_rule_wraps_a_queued_count_below_zero(kernel):
    """(b, c) counts 2**32 + 3 (3 to BpeTrainer); merging (a, b) takes 4 away: -1 to BpeTrainer, a huge u64,
    so (b, c) is merged when its out-of-date entry (3) comes up, after (ab, c) (4), before anything else."""
    args = {"symbols": b"bcabc", "lengths": array("i", [2, 3]), "counts": array("q", [2**32 - 1, 4]),
            "num_merges": 3, "first_id": 256, "taken": None, "by_occurrence": False, "min_frequency": 1,
            "ranks": trainer.huggingface_ranks()}
    assert run_kernel(kernel, args, None)["merges"] == [(97, 98, 256, 4), (256, 99, 257, 4), (98, 99, 258, 2**32 - 1)]


@pytest.mark.parametrize("kernel", [KERNEL, TWIN], ids=["C", "python"])
def test_bad_buffers_are_refused_alike(kernel):
    with pytest.raises(ValueError, match="one per word"):
        kernel.train(b"ab", array("i", [2]), array("i", [1]), 1, 256, None, False, 1, None)
    with pytest.raises(ValueError, match="do not add up"):
        kernel.train(b"ab", array("i", [3]), array("q", [1]), 1, 256, None, False, 1, None)
    with pytest.raises(ValueError, match="int32"):
        kernel.train(b"ab", array("i", [2]), array("q", [1]), 1, 256, None, False, 1, None, None, array("q", [0]))
    with pytest.raises(ValueError, match="permutation"):
        kernel.train(b"ab", array("i", [2]), array("q", [1]), 1, 256, None, False, 1, None, None, array("i", [0, 0]))
    with pytest.raises(ValueError, match="by_occurrence"):
        kernel.train(b"ab", array("i", [2]), array("q", [1]), 1, 256, None, True, 1, None, None, array("i", [0]))
    with pytest.raises(ValueError, match="non-negative"):
        kernel.train(array("i", [1, -2]), array("i", [2]), array("q", [1]), 1, 256, None, False, 1, None)
    with pytest.raises(ValueError, match="do not add up"):
        kernel.train(b"ab", array("i", [2, -1, 1]), array("q", [1, 1, 1]), 1, 256, None, False, 1, None)


# ---------------------------------------------------------- the twin and the naive reference

CHAR_POOL = list("aab b1 \n'sé日🙂")


@settings(max_examples=300, deadline=None)
@given(
    docs=st.lists(st.text(st.sampled_from(CHAR_POOL), max_size=60), min_size=1, max_size=5),
    split=st.booleans(),
    tie_break=st.sampled_from(trainer.TIE_BREAKS),
    num_merges=st.integers(0, 40),
    min_frequency=st.sampled_from([1, 1, 2, 3]),
)
def test_twin_equals_naive_reference(docs, split, tie_break, num_merges, min_frequency):
    chunks = corpus_chunks(docs, GPT4_SPLIT_PATTERN if split else None)
    expected = naive_train(chunks, num_merges, tie_break, min_frequency)
    unique = Counter(chunks)  # in order of first appearance, as the trainer gives words
    merges, _ = TWIN.train(
        b"".join(unique), array("i", map(len, unique)), array("q", unique.values()), num_merges, 256, None,
        tie_break == "first_occurrence", min_frequency, None, None,
        trainer.huggingface_ranks() if tie_break == "huggingface" else None,
    )
    assert [((a, b), new) for a, b, new, _ in merges] == list(expected.items())


# ------------------------------------------------------------ training without the C module

FALLBACK_SCRIPT = """
import json, sys
sys.modules["hf_bbpe.engine.training._merge_loop"] = None  # importing it now raises ImportError, as if never built
from hf_bbpe import BasicTokenizer, RegexTokenizer
from hf_bbpe.engine.training import merge_loop as trainer
text = open(sys.argv[1], encoding="utf-8").read()
out = {"kernel": trainer.merge_kernel().__name__, "merges": {}}
for tie_break in ("smallest_pair", "first_occurrence", "huggingface"):
    tok = RegexTokenizer("gpt4")
    tok.train(text, 1024, tie_break=tie_break, progress=False)
    out["merges"][tie_break] = [[a, b, new] for (a, b), new in tok.merges.items()]
tok = BasicTokenizer()
tok.train(text, 512, tie_break="first_occurrence", progress=False)
out["merges"]["basic"] = [[a, b, new] for (a, b), new in tok.merges.items()]
print(json.dumps(out))
"""


def test_training_without_the_c_module_learns_the_same_merges():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FALLBACK_SCRIPT), str(TAYLORSWIFT)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["kernel"] == "hf_bbpe.engine.training.merge_loop_reference"
    text = TAYLORSWIFT.read_text(encoding="utf-8")
    for tie_break in trainer.TIE_BREAKS:
        tok = RegexTokenizer("gpt4")
        tok.train(text, 1024, tie_break=tie_break, progress=False)
        assert out["merges"][tie_break] == [[a, b, new] for (a, b), new in tok.merges.items()], tie_break
        assert len(tok.merges) == 1024 - 256
    expected = naive_train(corpus_chunks([text], None), 256, "first_occurrence")
    assert out["merges"]["basic"] == [[a, b, new] for (a, b), new in expected.items()]


# ------------------------------------------------------------------ words cut for the loop


@st.composite
def id_words(draw, alphabet_pool=st.integers(0, 2**31 - 1) | st.integers(0, 6)) -> tuple[list, list, int]:
    """Words of token ids whose pairs repeat (counts up to past a 16-bit counter), and a number of
    merges: enough that half the num_merges-th counter is 2 or more and words get cut, or not."""
    alphabet = draw(st.lists(alphabet_pool, min_size=1, max_size=6, unique=True))
    words = draw(st.lists(st.lists(st.sampled_from(alphabet), max_size=9), max_size=24))
    counts = draw(st.lists(st.integers(0, 12) | st.sampled_from([40, 70_000]), min_size=len(words),
                           max_size=len(words)))
    return words, counts, draw(st.integers(0, 25))


def flat(words: list, counts: list) -> tuple[array, array, array]:
    return array("i", [i for w in words for i in w]), array("i", map(len, words)), array("q", counts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=id_words())
def test_reduce_words_c_equals_twin(case):
    words, counts, num_merges = case
    got = KERNEL.reduce_words(*flat(words, counts), num_merges)
    assert got == TWIN.reduce_words(*flat(words, counts), num_merges)
    if got is not None:  # the parts: the words' ids, cut, one-id parts dropped, equal ones counted once
        ids, lengths = array("i", got[0]), array("i", got[1])
        assert min(lengths) >= 2 and sum(lengths) == len(ids) and len(set(map(tuple, _split(ids, lengths)))) == len(lengths)


def _split(ids: array, lengths: array) -> list[list[int]]:
    out, at = [], 0
    for n in lengths:
        out.append(list(ids[at : at + n]))
        at += n
    return out


def test_reduce_words_refuses_bad_buffers_alike():
    for kernel in (KERNEL, TWIN):
        with pytest.raises(ValueError, match="reduce_words"):
            kernel.reduce_words(array("i", [1, 2]), array("i", [3]), array("q", [1]), 1)
        with pytest.raises(ValueError, match="reduce_words"):
            kernel.reduce_words(array("i", [1, -2]), array("i", [2]), array("q", [1]), 1)
        with pytest.raises(ValueError, match="reduce_words"):
            kernel.reduce_words(array("i", [1, 2]), array("i", [2]), array("q", [-1]), 1)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=id_words(st.sampled_from(list(b"ab c:"))), rules=st.sampled_from([None, 1, 2]), twin=st.booleans())
def test_learn_on_cut_words_equals_learn_on_the_words(case, rules, twin):
    """training.learn cuts (ids, lengths, counts) words (SuperBPE's stage 2) with reduce_words and
    checks the merges it learns on them; they must be the merges of the whole words, which the
    list-of-words path learns without cutting."""
    words, counts, num_merges = case
    tok = RegexTokenizer()
    rule = None if rules is None else SuperwordConfig(max_words=rules).allows
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        if twin:
            patch.setattr(trainer, "merge_kernel", lambda: TWIN)
        warnings.simplefilter("ignore")  # a small corpus runs out of pairs
        got = training.learn(tok, flat(words, counts), None, num_merges, QUIET,
                             unique_bytes=True, token_filter=rule)
        expected = training.learn(tok, [list(w) for w in words], counts, num_merges, QUIET,
                                  unique_bytes=True, token_filter=rule)
    assert got == expected


def test_learn_takes_the_cut_words_and_goes_back_when_the_check_fails(monkeypatch):
    """Where the last merge counts at least `least`, the loop runs on the cut words only; where it
    counts less (here the third merge counts 10, below least = 15), it runs again on all words."""
    runs = []
    real = training.train_flat_merges
    monkeypatch.setattr(training, "train_flat_merges", lambda *a, **k: runs.append(bytes(a[1])) or real(*a, **k))
    words = [list(b"ba"), list(b"bcabcab "), list(b"cabc"), list(b"aab")]
    counts = [2, 10, 10, 10]
    tok = RegexTokenizer()
    for num_merges, whole_words_too in ((1, False), (3, True)):
        least = KERNEL.reduce_words(*flat(words, counts), num_merges)[3]
        runs.clear()
        got = training.learn(tok, flat(words, counts), None, num_merges, QUIET)
        expected = training.learn(tok, words, counts, num_merges, QUIET)
        assert got == expected
        assert runs[0] != bytes(flat(words, counts)[1])  # the cut words first
        assert len(runs) == 1 + whole_words_too
        assert whole_words_too == (num_merges == 3 and least == 15)


@pytest.mark.parametrize("kernel", [KERNEL, TWIN], ids=["c", "twin"])
def test_a_pair_that_counts_exactly_least_is_not_cut(kernel, monkeypatch):
    """The margin of the cut: words are cut only where a pair counts *less* than ``least``. Here
    (5, 6) counts 30, (6, 7) 20 and (1, 2) 10, so for 2 merges least is 10; after (5, 6) is merged,
    (1, 2), (6, 7) and (5+6, 7) all count 10 and (1, 2) comes first. A cut that dropped the pair
    of count exactly least would merge (6, 7) second, at a count the check accepts."""
    words, counts = [[5, 6, 7], [5, 6], [6, 7], [1, 2]], [10, 20, 10, 10]
    monkeypatch.setattr(trainer, "merge_kernel", lambda: kernel)
    assert kernel.reduce_words(*flat(words, counts), 2)[3] == 10
    got = training.learn(RegexTokenizer(), flat(words, counts), None, 2, QUIET)
    assert list(got) == [(5, 6), (1, 2)]
    assert got == training.learn(RegexTokenizer(), words, counts, 2, QUIET)


def _cut_at(least: int):
    """A stand-in for trainer.reduce_words that cuts at a given ``least`` by the pairs' exact counts
    (the most a valid cut at that least may drop; the sketch's counters only ever cut less)."""

    def cut(symbols, lengths, counts, num_merges):
        ids, sizes, weights = array("i", bytes(symbols)), array("i", bytes(lengths)), array("q", bytes(counts))
        pair_counts, at = Counter(), 0
        for n, c in zip(sizes, weights):
            for k in range(at, at + n - 1):
                pair_counts[ids[k], ids[k + 1]] += c
            at += n
        parts, at = {}, 0
        for n, c in zip(sizes, weights):
            start = at
            for k in range(at, at + n):
                if k + 1 < at + n and pair_counts[ids[k], ids[k + 1]] >= least:
                    continue
                if k + 1 - start >= 2:
                    parts[tuple(ids[start : k + 1])] = parts.get(tuple(ids[start : k + 1]), 0) + c
                start = k + 1
            at += n
        return (bytearray(array("i", [i for part in parts for i in part]).tobytes()),
                bytearray(array("i", map(len, parts)).tobytes()), bytearray(array("q", parts.values()).tobytes()), least)

    return cut


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=id_words(st.sampled_from(list(b"ab c:"))), least=st.integers(2, 60), rules=st.sampled_from([None, 1, 2]),
       min_frequency=st.sampled_from([1, 1, 3]))
def test_learn_is_exact_for_any_cut_its_check_accepts(case, least, rules, min_frequency):
    """training.learn's exactness does not rest on how reduce_words picks ``least``: for words cut
    at any least by the pairs' exact counts (where the last merges fall near least, which the
    sketch's half of the num_merges-th counter rarely lets happen), the check and the run on the
    whole words give the merges of the whole words, vetoes and min_frequency too."""
    words, counts, num_merges = case
    tok = RegexTokenizer()
    rule = None if rules is None else SuperwordConfig(max_words=rules).allows
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setattr(training, "reduce_words", _cut_at(least))
        warnings.simplefilter("ignore")  # a small corpus runs out of pairs
        got = training.learn(tok, flat(words, counts), None, num_merges, TrainingOptions(min_frequency=min_frequency, progress=False),
                             unique_bytes=True, token_filter=rule)
        expected = training.learn(tok, [list(w) for w in words], counts, num_merges, TrainingOptions(min_frequency=min_frequency, progress=False),
                                  unique_bytes=True, token_filter=rule)
    assert got == expected


def test_learn_on_words_of_bytes_laid_end_to_end():
    """``(symbols, lengths, counts)`` with uint8 symbols, which the merge loop takes as it takes
    ChunkCounts' buffers, is no input for reduce_words (int32 ids): learn runs the loop on it whole."""
    words, counts = [b"abcabcabcabc", b"abcab", b"bcb"], [50, 40, 30]
    flat_bytes = (bytearray(b"".join(words)), array("i", map(len, words)), array("q", counts))
    expected = training.learn(RegexTokenizer(), [list(w) for w in words], counts, 4, QUIET)
    assert training.learn(RegexTokenizer(), flat_bytes, None, 4, QUIET) == expected


def test_huggingface_rules_past_2_32_stop_where_bpe_trainer_stops():
    """The reliability pass's shrunk case (issue 42, 1): (170, 47) counts 2**33 + 5, whose i32 view
    falls to 0 and then -1 as merges take its occurrences. BpeTrainer (tokenizers' trainer.rs:
    i32 pair counts that wrap, a u64 heap, an out-of-date entry re-queued with its current count,
    the first current entry at 0 ends the loop) stops after 6 merges, before (103, 101) at 0 lets
    it reach (170, 47); so does the twin. The C loop did not track that rare pair and merged
    (170, 47) with count 2**33 - 1 as a 7th."""
    words = [[170, 47], [99, 170, 47], [100, 170, 47], [101, 102], [103, 101, 102]]
    counts = array("q", [2**33 - 1, 5, 1, 100, 1])
    symbols = bytes(s for word in words for s in word)
    lengths = array("i", map(len, words))
    ranks = trainer.huggingface_ranks()
    results = [kernel.train(symbols, lengths, counts, 20, 256, None, False, 1, None, None, ranks)
               for kernel in (KERNEL, TWIN)]
    assert results[0] == results[1]
    merges, stop = results[1]
    assert [m[:2] for m in merges] == [(101, 102), (99, 170), (257, 47), (100, 170), (103, 256), (259, 47)]
    assert stop == 1
