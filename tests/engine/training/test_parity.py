"""Parity-aware training learns exactly ``tokenizers``' ParityBpeTrainer's merges.

* ``tie_break="huggingface"`` equals ``tokenizers.trainers.ParityBpeTrainer`` (0.23) byte for byte
  on real text in five languages and scripts (tests/data/text/parity), for ``variant="base"`` and
  ``"window"``, balanced by a dev set and by target ratios, at two sizes, with
  ``global_merges``, ``min_frequency``, special tokens and GPT-4's pattern.
* Both tie-breaks equal a naive loop that recounts every pair of every language at each merge
  (written from the paper's description, below), on hypothesis corpora full of ties.
* Bad configurations are one-line errors naming the setting.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizers import pre_tokenizers, trainers

from hf_bbpe import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, ParityConfig, RegexTokenizer
from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode, unicode_to_token
from hf_bbpe.engine.training import parity_reference
from tests.support.hf_trainers import byte_level_bpe

DATA = Path(__file__).resolve().parents[2] / "data" / "text" / "parity"
LANGUAGES = ("en", "de", "ru", "zh", "pl")
RATIO = {"en": 1.0, "de": 1.2, "ru": 2.0, "zh": 2.5, "pl": 1.1}
PATTERNS = {"gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN}


def documents(name: str) -> list[str]:
    return [doc for doc in (DATA / name).read_text(encoding="utf-8").split("\n\n") if doc]


TRAIN = {language: documents(f"{language}.txt") for language in LANGUAGES}
DEV = {language: documents(f"{language}.dev.txt") for language in LANGUAGES}


def parity_trainer_merges(train, num_merges, pattern_name="gpt2", dev=None, ratio=None, special_tokens=(), **options):
    """ParityBpeTrainer's merges as byte pairs, with the ByteLevel pipeline of the pattern."""
    ref = byte_level_bpe(None if pattern_name == "gpt2" else PATTERNS[pattern_name])
    trainer = trainers.ParityBpeTrainer(num_merges=num_merges, show_progress=False, special_tokens=list(special_tokens),
                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), **options)
    names = list(train)
    trainer.train_from_iterator(ref, [iter(train[name]) for name in names],
                                dev_iterators=None if dev is None else [iter(dev[name]) for name in names],
                                ratio=None if ratio is None else [ratio[name] for name in names])
    return [(unicode_to_token(a), unicode_to_token(b)) for a, b in json.loads(ref.to_str())["model"]["merges"]]


def merges_as_bytes(tok):
    return [(tok.vocab[a], tok.vocab[b]) for a, b in tok.merges]


def train_parity(train, vocab_size, pattern_name="gpt2", dev=None, ratio=None, tie_break="huggingface",
                 min_frequency=1, **config):
    tok = RegexTokenizer(PATTERNS[pattern_name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok.train(languages=train, vocab_size=vocab_size, tie_break=tie_break, min_frequency=min_frequency,
                  parity=ParityConfig(dev=dev, ratio=ratio, **config), progress=False)
    return tok


@pytest.mark.parametrize("variant", ["base", "window"])
@pytest.mark.parametrize("balance", ["dev", "ratio"])
@pytest.mark.parametrize("vocab_size", [400, 1200])
def test_merges_equal_parity_bpe_trainer(variant, balance, vocab_size):
    balancing = {"dev": DEV} if balance == "dev" else {"ratio": RATIO}
    window = {"window_size": 10} if variant == "window" else {}  # (4 of 10 is exactly alpha / 5 languages)
    tok = train_parity(TRAIN, vocab_size, variant=variant, **balancing, **window)
    expected = parity_trainer_merges(TRAIN, vocab_size - 256, variant=variant, **balancing, **window)
    assert len(expected) == vocab_size - 256
    assert merges_as_bytes(tok) == expected


@pytest.mark.parametrize("balance", ["dev", "ratio"])
def test_global_merges_min_frequency_special_tokens_and_gpt4_pattern(balance):
    balancing = {"dev": DEV} if balance == "dev" else {"ratio": RATIO}
    config = {"variant": "window", "window_size": 11, "alpha": 1.5, "global_merges": 40}
    tok = train_parity(TRAIN, 700, "gpt4", min_frequency=3, **balancing, **config)
    expected = parity_trainer_merges(TRAIN, 700 - 256, "gpt4", min_frequency=3, special_tokens=["<|endoftext|>"],
                                     **balancing, **config)
    assert merges_as_bytes(tok) == expected


def test_languages_run_out_of_pairs_as_parity_bpe_trainer_does():
    train = {name: TRAIN[name][:20] for name in ("en", "ru")}
    ratio = {"en": 1.0, "ru": 2.0}
    with pytest.warns(UserWarning, match="every language ran out"):
        tok = RegexTokenizer(GPT2_SPLIT_PATTERN)
        tok.train(languages=train, vocab_size=5000, min_frequency=4, tie_break="huggingface",
                  parity=ParityConfig(ratio=ratio), progress=False)
    expected = parity_trainer_merges(train, 5000 - 256, ratio=ratio, min_frequency=4)
    assert len(expected) < 5000 - 256
    assert merges_as_bytes(tok) == expected


def test_files_and_special_tokens_keep_their_ids(tmp_path):
    paths = {}
    for name in ("en", "zh"):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(TRAIN[name]), encoding="utf-8")
    tok = RegexTokenizer(GPT2_SPLIT_PATTERN)
    tok.register_special_tokens({"<|endoftext|>": 300})
    tok.train(languages=paths, vocab_size=400, parity=ParityConfig(ratio={"en": 1, "zh": 3}), progress=False)
    assert tok.special_tokens == {"<|endoftext|>": 300}
    assert 300 not in dict(tok.merges.items()).values() and len(tok.merges) == 144
    text = TRAIN["zh"][0]
    assert tok.decode(tok.encode(text)) == text


def test_a_language_given_as_a_hugging_face_dataset_trains_as_its_texts():
    datasets = pytest.importorskip("datasets")  # (a reference in the test extra, not hf_bbpe's own module)
    texts = {name: TRAIN[name] for name in ("en", "ru")}
    as_lists = RegexTokenizer(GPT2_SPLIT_PATTERN)
    as_lists.train(languages=texts, vocab_size=500, parity=ParityConfig(ratio={"en": 1, "ru": 2}), progress=False)
    as_datasets = RegexTokenizer(GPT2_SPLIT_PATTERN)
    as_datasets.train(languages={name: datasets.Dataset.from_dict({"text": t}) for name, t in texts.items()},
                      vocab_size=500, parity=ParityConfig(ratio={"en": 1, "ru": 2}), progress=False)
    assert len(as_lists.merges) == 244
    assert as_datasets.merges == as_lists.merges


# ------------------------------------------------ a naive loop: every count made again at each merge


def naive_parity(languages, dev, ratio, num_merges, tie_break, variant="base", window_size=100, alpha=2.0,
                 min_frequency=0):
    """The paper's loop as plainly as it reads: words as lists of byte strings, recounted each merge."""
    def split(words):
        return {tuple(bytes([b]) for b in w): c for w, c in words.items()}

    def merge(words, pair):
        out = {}
        for word, count in words.items():
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            out[tuple(merged)] = out.get(tuple(merged), 0) + count
        return out

    def length(words):
        return sum(len(w) * c for w, c in words.items())

    order = {bytes([b]): b for b in range(256)}
    table = bytes_to_unicode()

    def key(pair):
        if tie_break == "huggingface":
            return tuple("".join(table[b] for b in token) for token in pair)
        return tuple(-order[token] for token in pair)  # smallest ids win: max of the negated

    train = [split(w) for w in languages]
    devs = None if dev is None else [split(w) for w in dev]
    initial = [length(w) for w in train]
    exhausted, recent, merges = set(), [], []
    while len(merges) < num_merges and len(exhausted) < len(train):
        if ratio is not None:
            values = [-(initial[k] / length(w) / ratio[k]) for k, w in enumerate(train)]
        else:
            values = [length(w) for w in devs]
        values = [float("-inf") if k in exhausted else v for k, v in enumerate(values)]
        if variant == "base":
            language = max(range(len(values)), key=lambda k: (values[k], -k))
        else:
            language = naive_window(values, exhausted, recent, window_size, alpha / len(train))
            recent = (recent + [language])[-window_size:]
        counts = {}
        for word, count in train[language].items():
            for pair in zip(word, word[1:]):
                counts[pair] = counts.get(pair, 0) + count
        pair = max(counts, key=lambda p: (counts[p], key(p)), default=None)
        if pair is None or counts[pair] < min_frequency:
            exhausted.add(language)
            continue
        merges.append(pair)
        order.setdefault(pair[0] + pair[1], len(order))
        train = [merge(w, pair) for w in train]
        devs = None if devs is None else [merge(w, pair) for w in devs]
    return merges


def naive_window(values, exhausted, recent, window_size, threshold):
    """The window variant's choice, written out: the languages from worst to best compressed,
    the first whose share of the window is at most the threshold; then ParityBpeTrainer's
    fallbacks (the last language tried, or language 0; where it never returns, the worst)."""
    def share(k):
        return recent.count(k) / window_size

    candidates = sorted((k for k in range(len(values)) if k not in exhausted), key=lambda k: (-values[k], k))
    for k in candidates:
        if share(k) <= threshold:
            return k
    if not exhausted:
        return candidates[-1]
    if 0 in exhausted and (share(0) <= threshold or exhausted == {0}):
        return 0
    return candidates[0]


words = st.dictionaries(st.text("ab ц", min_size=1, max_size=6).map(str.encode), st.integers(1, 4), min_size=1,
                        max_size=6)


@settings(max_examples=150, deadline=None)
@given(languages=st.lists(words, min_size=2, max_size=3), dev_words=st.lists(words, min_size=3, max_size=3),
       use_ratio=st.booleans(), ratio=st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=3, max_size=3),
       tie_break=st.sampled_from(["huggingface", "smallest_pair"]), variant=st.sampled_from(["base", "window"]),
       window_size=st.integers(1, 4), alpha=st.sampled_from([0.5, 1.0, 2.0]), num_merges=st.integers(1, 12),
       min_frequency=st.sampled_from([0, 3]))
def test_loop_equals_naive_loop(languages, dev_words, use_ratio, ratio, tie_break, variant, window_size, alpha,
                                num_merges, min_frequency):
    n = len(languages)
    dev = None if use_ratio else dev_words[:n]
    ratio = ratio[:n] if use_ratio else None
    got = parity_reference.train([(list(w), list(w.values())) for w in languages], num_merges,
                                 dev=None if dev is None else [(list(w), list(w.values())) for w in dev],
                                 ratio=ratio, tie_break=tie_break, variant=variant, window_size=window_size,
                                 alpha=alpha, min_frequency=min_frequency)
    assert got == naive_parity(languages, dev, ratio, num_merges, tie_break, variant, window_size, alpha, min_frequency)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(("config", "message"), [
    ({}, "exactly one of them"),
    ({"dev": {"en": ["a"]}, "ratio": {"en": 1.0}}, "not both"),
    ({"ratio": {"en": 1.0}, "variant": "sliding"}, "variant must be 'base' or 'window'"),
    ({"ratio": {"en": 0.0}}, r"ratio\['en'\] must be a positive"),
    ({"ratio": {"en": 1.0}, "window_size": 0}, "window_size must be an int >= 1"),
    ({"ratio": {"en": 1.0}, "alpha": float("nan")}, "alpha must be a positive finite"),
    ({"ratio": {"en": 1.0}, "global_merges": -1}, "global_merges must be an int >= 0"),
])
def test_bad_configs_are_one_line_errors(config, message):
    with pytest.raises(ValueError, match=message):
        ParityConfig(**config)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"parity": ParityConfig(ratio={"en": 1, "fr": 1})}, ValueError, "names 'fr', which is not a training language"),
    ({"parity": ParityConfig(ratio={"en": 1})}, ValueError, "nothing for language 'de'"),
    ({"parity": ParityConfig(dev={"en": ["x"], "de": [""]})}, ValueError, r"language 'de' \(dev set\): empty input"),
    ({}, TypeError, "needs parity=ParityConfig"),
    ({"parity": ParityConfig(ratio={"en": 1, "de": 1}), "tie_break": "first_occurrence"}, ValueError,
     "'huggingface' or 'smallest_pair'"),
])
def test_bad_calls_are_one_line_errors(kwargs, error, message):
    tok = RegexTokenizer(GPT2_SPLIT_PATTERN)
    with pytest.raises(error, match=message):
        tok.train(languages={"en": ["hello there"], "de": ["guten Tag"]}, vocab_size=300, progress=False, **kwargs)


def test_parity_without_languages_is_an_error():
    with pytest.raises(TypeError, match="languages=.*without text"):
        RegexTokenizer().train("some text", 300, parity=ParityConfig(ratio={"en": 1}))
