"""Vocabulary extension: BPE continued on a new corpus on top of an existing tokenizer."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import BasicTokenizer, RegexTokenizer, Tokenizer
from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode

DATA = Path(__file__).resolve().parents[2] / "data" / "text"
ENGLISH = (DATA / "taylorswift.txt").read_text(encoding="utf-8")
MIXED = (DATA / "mix-sample.txt").read_text(encoding="utf-8")
MIXED_DOCS = MIXED.split("\n\n")
TRAIN_DOCS, HELD_OUT_DOCS = MIXED_DOCS[::2], MIXED_DOCS[1::2]


@pytest.fixture(scope="module")
def base() -> RegexTokenizer:
    tok = RegexTokenizer("gpt4")
    tok.train(ENGLISH, 256 + 300)
    tok.register_special_tokens({"<|endoftext|>": 556, "<|pad|>": 600})  # 556 = next free id
    return tok


@pytest.fixture(scope="module")
def extended(base: RegexTokenizer) -> Tokenizer:
    return base.extend(TRAIN_DOCS, 400)


def expand(tok: Tokenizer, base: Tokenizer, ids: list[int]) -> list[int]:
    """Replace every id that base lacks by its two parents, recursively."""
    parents = {new: pair for pair, new in tok.merges.items() if new not in base.vocab}
    out: list[int] = []
    stack = list(reversed(ids))
    while stack:
        i = stack.pop()
        if i in parents:
            stack += reversed(parents[i])
        else:
            out.append(i)
    return out


def test_old_ids_and_merges_are_kept(base, extended):
    assert all(extended.vocab[i] == b for i, b in base.vocab.items())
    assert list(extended.merges.items())[: len(base.merges)] == list(base.merges.items())
    assert extended.special_tokens == base.special_tokens
    assert len(extended.merges) == len(base.merges) + 400


def test_new_ids_start_above_and_skip_taken_ids(base, extended):
    new_ids = [new for new in extended.merges.values() if new not in base.vocab]
    assert new_ids == sorted(new_ids)
    assert max(base.merges.values()) + 1 == 556  # taken by <|endoftext|>, so skipped
    assert new_ids[0] == 557 and 600 not in new_ids
    assert new_ids == [i for i in range(557, new_ids[-1] + 1) if i != 600]


def test_no_two_tokens_share_bytes(extended):
    assert len(set(extended.vocab.values())) == len(extended.vocab)


def test_new_tokens_come_from_the_new_corpus(base, extended):
    """The domain (code, Cyrillic, CJK) gains tokens: held-out domain text needs fewer tokens."""
    held_out = "\n\n".join(HELD_OUT_DOCS)
    before = len(base.encode_ordinary(held_out))
    after = len(extended.encode_ordinary(held_out))
    assert after < 0.9 * before
    assert extended.decode(extended.encode_ordinary(held_out)) == held_out


def test_extended_encoding_is_old_encoding_then_new_merges(base, extended):
    """Expanding new ids into their parents gives exactly the old tokenizer's ids."""
    for text in (ENGLISH[:20000], "\n\n".join(HELD_OUT_DOCS)[:50000]):
        ids = extended.encode_ordinary(text)
        assert expand(extended, base, ids) == base.encode_ordinary(text)


def test_text_without_new_merges_encodes_as_before(base, extended):
    new_tokens = [extended.vocab[i] for i in extended.vocab if i not in base.vocab]
    untouched = [p for p in ENGLISH.split("\n") if p and not any(t in p.encode() for t in new_tokens)]
    assert len(untouched) > 50
    for paragraph in untouched:
        assert extended.encode_ordinary(paragraph) == base.encode_ordinary(paragraph)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab cé€😀\n"), max_size=80))
def test_expansion_property_on_any_text(base, extended, text):
    assert expand(extended, base, extended.encode_ordinary(text)) == base.encode_ordinary(text)
    assert extended.decode(extended.encode_ordinary(text)) == text


def naive_extension(base: Tokenizer, docs: list[str], num_merges: int, rule: str) -> dict[tuple[int, int], int]:
    """minbpe-style reference: recount every pair each merge, skip pairs whose bytes exist."""
    pattern = regex.compile(base.pattern)
    seqs = [base.encode_ordinary(chunk) for doc in docs for chunk in pattern.findall(doc)]
    vocab = dict(base.vocab)
    known = set(vocab.values())
    byte_of = {idx: b for b, idx in enumerate(base.byte_ids)}

    def hf_rank(idx):
        return (0, ord(bytes_to_unicode()[byte_of[idx]])) if idx in byte_of else (1, idx)

    next_id = max([*base.byte_ids, *base.merges.values()]) + 1
    merges: dict[tuple[int, int], int] = {}
    for _ in range(num_merges):
        stats: dict[tuple[int, int], int] = {}
        for seq in seqs:
            for pair in zip(seq, seq[1:]):
                stats[pair] = stats.get(pair, 0) + 1
        allowed = {p: c for p, c in stats.items() if vocab[p[0]] + vocab[p[1]] not in known}
        if not allowed:
            break
        top = max(allowed.values())
        if rule == "first_occurrence":
            pair = max(allowed, key=allowed.get)
        elif rule == "huggingface":  # BpeTrainer's order: bytes by their byte-level characters, then ids
            pair = min((p for p, c in allowed.items() if c == top), key=lambda p: (hf_rank(p[0]), hf_rank(p[1])))
        else:
            pair = min(p for p, c in allowed.items() if c == top)
        while next_id in vocab:
            next_id += 1
        merges[pair] = next_id
        vocab[next_id] = vocab[pair[0]] + vocab[pair[1]]
        known.add(vocab[next_id])
        new_seqs = []
        for seq in seqs:
            out, i = [], 0
            while i < len(seq):
                if i + 1 < len(seq) and (seq[i], seq[i + 1]) == pair:
                    out.append(next_id)
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            new_seqs.append(out)
        seqs = new_seqs
    return merges


@pytest.mark.parametrize("rule", ["smallest_pair", "first_occurrence", "huggingface"])
def test_each_tie_break_equals_the_naive_reference(rule):
    base = RegexTokenizer("gpt4")
    base.train(ENGLISH[:30000], 256 + 60, tie_break=rule)
    base.register_special_tokens({"<|endoftext|>": 316})
    docs = TRAIN_DOCS[:40]
    extended = base.extend(docs, 80, tie_break=rule)
    learned = {p: i for p, i in extended.merges.items() if i not in base.vocab}
    assert list(learned.items()) == list(naive_extension(base, docs, 80, rule).items())


@settings(max_examples=40, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("aab c\n"), min_size=1, max_size=60),  # training refuses empty input
    st.text(alphabet=st.sampled_from("abbcé "), max_size=60),
    st.sampled_from(["smallest_pair", "first_occurrence", "huggingface"]),
)
def test_naive_reference_on_generated_corpora(first, second, rule):
    base = RegexTokenizer("gpt2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base.train(first, 256 + 10, tie_break=rule)
        extended = base.extend([second], 15, tie_break=rule)
    learned = {p: i for p, i in extended.merges.items() if i not in base.vocab}
    assert list(learned.items()) == list(naive_extension(base, [second], 15, rule).items())


@pytest.mark.parametrize("byte_ids", [None, list(range(255, -1, -1))], ids=["byte_values", "reversed"])
def test_huggingface_rule_ranks_byte_tokens_by_their_characters(byte_ids):
    """Byte tokens rank by their characters wherever their ids are (here byte b may have id 255 - b)."""
    base = Tokenizer.from_merges({}, pattern="gpt2", byte_ids=byte_ids)
    extended = base.extend(TRAIN_DOCS[:40], 60, tie_break="huggingface")
    learned = {p: i for p, i in extended.merges.items() if i not in base.vocab}
    assert list(learned.items()) == list(naive_extension(base, TRAIN_DOCS[:40], 60, "huggingface").items())


def test_basic_tokenizer_extends_too():
    base = BasicTokenizer()
    base.train(ENGLISH[:5000], 256 + 20)
    extended = base.extend("Привет мир, привет мир, привет!", 10)
    assert list(extended.merges.items())[:20] == list(base.merges.items())
    assert len(extended.merges) > 20
    text = "привет, Taylor"
    assert extended.decode(extended.encode(text)) == text


def test_extension_round_trips_through_model_file(extended, tmp_path):
    extended.save(tmp_path / "ext")
    loaded = Tokenizer.from_file(tmp_path / "ext.model")
    assert loaded.merges == extended.merges and loaded.special_tokens == extended.special_tokens
    assert (tmp_path / "ext.model").read_text().startswith("hf_bbpe v1")  # ids skip specials
    assert loaded.encode_ordinary(MIXED[:5000]) == extended.encode_ordinary(MIXED[:5000])


def test_extension_exports_to_every_format(base, extended, tmp_path):
    """GPT-2 files, tokenizer.json, tiktoken ranks (or a clear refusal) and minbpe: each reads back
    as the same tokenizer, and tokenizer.json and tiktoken give the extended tokenizer's ids."""
    import conversion
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tokenizers import Tokenizer as HFTokenizer

    text = "\n\n".join(HELD_OUT_DOCS[:80])
    expected = extended.encode_ordinary(text)
    assert expected != base.encode_ordinary(text)  # the new merges apply to this text

    conversion.to_gpt2_files(extended, tmp_path / "gpt2")
    back = conversion.from_gpt2_files(tmp_path / "gpt2" / "encoder.json", tmp_path / "gpt2" / "vocab.bpe",
                                      pattern=extended.pattern, special_tokens=extended.special_tokens)
    assert back.merges == extended.merges and back.encode_ordinary(text) == expected

    conversion.to_tokenizer_json(extended, tmp_path / "tokenizer.json")
    assert HFTokenizer.from_file(str(tmp_path / "tokenizer.json")).encode(text).ids == expected

    try:
        conversion.check_rank_representable(extended)
    except conversion.RepresentabilityError as exc:  # a clear refusal naming the token
        assert "rank-based BPE" in str(exc) or "distinct tokens" in str(exc)
    else:
        conversion.to_tiktoken(extended, tmp_path / "ext.tiktoken")
        ranks = load_tiktoken_bpe(str(tmp_path / "ext.tiktoken"))
        enc = tiktoken.Encoding("ext", pat_str=extended.pattern, mergeable_ranks=ranks, special_tokens={})
        assert enc.encode_ordinary(text) == expected

    conversion.to_minbpe(extended, tmp_path / "ext")
    assert conversion.from_minbpe(tmp_path / "ext.model").encode_ordinary(text) == expected


def test_running_out_of_pairs_warns(base):
    with pytest.warns(UserWarning, match="ran out of pairs"):
        extended = base.extend(["zq"], 50)
    assert len(extended.merges) == len(base.merges) + 1
