"""Merge-list formats (GPT-2 files, the mode-less .model) hold a whole-piece tokenizer exactly or refuse.

A ``"ranks"``/``"ignore_merges"`` tokenizer is written as merges only when plain BPE over them
gives its ids on every input (``Tokenizer.merge_list_mismatch``). Checked against tiktoken itself
on cl100k (as shipped, and with ``er`` moved past every other rank) on the mixed text, and as a
property on grown vocabularies: "exact" must mean equal ids, "not exact" must name a token whose
own bytes encode differently.
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")

import tiktoken  # noqa: E402
from tests.conversion.test_conversion_merge_recovery import _grown_vocabulary, _real_ranks  # noqa: E402
from tests.support.families import mix_documents  # noqa: E402

import conversion  # noqa: E402
from hf_bbpe.engine.chunking.patterns import GPT4_SPLIT_PATTERN  # noqa: E402
from hf_bbpe.engine.tokenizer import Tokenizer  # noqa: E402

DOCS = mix_documents()


def merges_only(tok: Tokenizer) -> Tokenizer:
    """What a reader of a merge-list file runs: plain BPE over ``tok``'s merges."""
    return Tokenizer.from_merges(tok.merges, byte_ids=tok.byte_ids, pattern=tok.pattern, check=False)


def differing(ours, reference, docs=DOCS) -> list[int]:
    return [i for i, doc in enumerate(docs) if ours(doc) != reference(doc)]


@pytest.fixture(scope="module")
def cl100k_ranks() -> dict[bytes, int]:
    return _real_ranks("cl100k_base")


def test_cl100k_round_trips_through_gpt2_files_with_tiktokens_ids(cl100k_ranks, tmp_path):
    tok = Tokenizer.from_ranks(cl100k_ranks, pattern=GPT4_SPLIT_PATTERN)
    reference = tiktoken.Encoding("cl100k", pat_str=GPT4_SPLIT_PATTERN, mergeable_ranks=cl100k_ranks, special_tokens={})
    assert tok.mode == "ranks" and tok.merge_list_mismatch() is None
    conversion.to_gpt2_files(tok, tmp_path)
    back = conversion.load(tmp_path, pattern=GPT4_SPLIT_PATTERN)
    assert back.mode == "merges"
    assert differing(back.encode_ordinary, reference.encode_ordinary) == []


def test_cl100k_with_a_moved_rank_is_refused(cl100k_ranks, tmp_path):
    moved = dict(cl100k_ranks)
    moved[b"er"] = 200000
    tok = Tokenizer.from_ranks(moved, pattern=GPT4_SPLIT_PATTERN)
    reference = tiktoken.Encoding("moved", pat_str=GPT4_SPLIT_PATTERN, mergeable_ranks=moved, special_tokens={})
    assert differing(tok.encode_ordinary, reference.encode_ordinary) == []
    # what writing the merges would have given: different ids, silently
    assert len(differing(merges_only(tok).encode_ordinary, reference.encode_ordinary)) > 10
    first = tok.merge_list_mismatch()
    assert first is not None and merges_only(tok).encode_single_piece(tok.vocab[first]) != tok.encode_single_piece(tok.vocab[first])
    with pytest.raises(conversion.FormatError) as caught:
        conversion.to_gpt2_files(tok, tmp_path / "g2")
    message = str(caught.value)
    assert "GPT-2 encoder.json/vocab.bpe cannot hold this 'ranks'-mode tokenizer" in message
    assert f"token {tok.vocab[first]!r} (id {first})" in message
    assert "tokenizer.json (ignore_merges: true), tiktoken ranks or a .model (hf_bbpe v2)" in message
    assert not (tmp_path / "g2").exists() or not any((tmp_path / "g2").iterdir())
    # every format named keeps the ids
    conversion.to_minbpe(tok, tmp_path / "moved")
    conversion.to_tokenizer_json(tok, tmp_path / "tokenizer.json")
    conversion.to_tiktoken(tok, tmp_path / "moved.tiktoken")
    for path in (tmp_path / "moved.model", tmp_path / "tokenizer.json", tmp_path / "moved.tiktoken"):
        back = conversion.load(path, pattern=GPT4_SPLIT_PATTERN) if path.suffix == ".tiktoken" else conversion.load(path)
        assert differing(back.encode_ordinary, reference.encode_ordinary, DOCS[:150]) == [], path


def test_ignore_merges_whose_merges_miss_a_whole_token_is_refused(tmp_path):
    a, b, c = b"abc"
    tok = Tokenizer.from_merges({(b, c): 256, (a, b): 257, (257, c): 258}, mode="ignore_merges")
    assert tok.encode_ordinary("abc") == [258] and merges_only(tok).encode_ordinary("abc") == [a, 256]
    assert tok.merge_list_mismatch() == 258
    with pytest.raises(conversion.FormatError, match=r"'ignore_merges'-mode tokenizer.*token b'abc' \(id 258\).*"
                                                     r"tokenizer\.json \(ignore_merges: true\) or a \.model"):
        conversion.to_gpt2_files(tok, tmp_path)
    exact = Tokenizer.from_merges({(a, b): 256, (256, c): 257}, mode="ignore_merges")
    assert exact.merge_list_mismatch() is None


def test_extended_exact_ranks_vocabulary_stays_exact_or_refuses(cl100k_ranks):
    tok = Tokenizer.from_ranks(cl100k_ranks, pattern=GPT4_SPLIT_PATTERN)
    code = [doc for doc in DOCS if "def " in doc]
    extended = tok.extend(code[: len(code) // 2], 30, progress=False)
    mismatch = extended.merge_list_mismatch()
    if mismatch is None:
        assert differing(merges_only(extended).encode_ordinary, extended.encode_ordinary) == []
    else:
        data = extended.vocab[mismatch]
        assert merges_only(extended).encode_single_piece(data) != extended.encode_single_piece(data)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), alphabet_size=st.integers(1, 7), steps=st.integers(1, 60),
       holes=st.booleans(), swap=st.booleans(), text_seed=st.integers(0, 2**32 - 1))
def test_exact_means_equal_ids_and_not_exact_names_a_differing_token(seed, alphabet_size, steps, holes, swap,
                                                                      text_seed):
    ranks = _grown_vocabulary(seed, alphabet_size, steps, False, holes, swap)
    tok = Tokenizer.from_ranks(ranks, pattern="")
    plain = merges_only(tok)
    mismatch = tok.merge_list_mismatch()
    if mismatch is not None:
        data = tok.vocab[mismatch]
        assert plain.encode_single_piece(data) != tok.encode_single_piece(data)
        return
    rng = random.Random(text_seed)
    pieces = [token for token in ranks if len(token) > 1] or [b"a"]
    for _ in range(20):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        assert plain.encode_single_piece(data) == tok.encode_single_piece(data)
    for token in ranks:
        assert plain.encode_single_piece(token) == tok.encode_single_piece(token)
