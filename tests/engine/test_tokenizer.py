"""``Tokenizer``'s public API as minbpe and tiktoken users call it, in one place.

Each call is held to the real library it copies: tiktoken's ``Encoding`` built from the same
ranks (o200k_base, tests/data/tiktoken), and minbpe's train / encode / decode / save / load
cycle on its own test text. The deeper properties of each layer are in the folders beside this
file (chunking/, encoding/, training/, files/).
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import tiktoken

from hf_bbpe import GPT4_SPLIT_PATTERN, O200K_SPLIT_PATTERN, BasicTokenizer, RegexTokenizer, Tokenizer

DATA = Path(__file__).resolve().parents[1] / "data"
TAYLOR = (DATA / "text" / "taylorswift.txt").read_text(encoding="utf-8")
MIX = (DATA / "text" / "mix-sample.txt").read_text(encoding="utf-8")
SPECIALS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


@pytest.fixture(scope="module")
def o200k_ranks() -> dict[bytes, int]:
    ranks = {}
    for line in (DATA / "tiktoken" / "o200k_base.tiktoken").read_bytes().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


@pytest.fixture(scope="module")
def pair(o200k_ranks) -> tuple[Tokenizer, tiktoken.Encoding]:
    ours = Tokenizer.from_ranks(o200k_ranks, pattern=O200K_SPLIT_PATTERN, special_tokens=SPECIALS)
    theirs = tiktoken.Encoding("o200k_test", pat_str=O200K_SPLIT_PATTERN, mergeable_ranks=o200k_ranks,
                               special_tokens=SPECIALS)
    return ours, theirs


def test_tiktoken_calls_give_tiktokens_ids(pair):
    ours, theirs = pair
    docs = [doc for doc in MIX.split("\n\n") if doc][:300]
    assert [ours.encode_ordinary(doc) for doc in docs] == [theirs.encode_ordinary(doc) for doc in docs]
    assert ours.encode_batch(docs, num_threads=2) == theirs.encode_batch(docs, num_threads=2)
    text = "say <|endoftext|> then <|endofprompt|>"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    assert ours.encode(text, disallowed_special=()) == theirs.encode(text, disallowed_special=())
    with pytest.raises(ValueError, match="<|endoftext|>"):
        ours.encode(text)
    with pytest.raises(ValueError):
        theirs.encode(text)
    assert ours.encode_to_numpy(MIX).tolist() == theirs.encode_to_numpy(MIX).tolist()
    assert ours.n_vocab == theirs.n_vocab


def test_decoding_is_tiktokens(pair):
    ours, theirs = pair
    ids = theirs.encode_ordinary(MIX)
    assert ours.decode_bytes(ids) == theirs.decode_bytes(ids)
    assert ours.decode(ids) == theirs.decode(ids) == MIX
    assert [ours.decode_single_token_bytes(i) for i in ids[:500]] == \
        [theirs.decode_single_token_bytes(i) for i in ids[:500]]
    cut = theirs.encode_ordinary("日本語")[:1]  # part of a character
    assert ours.decode(cut) == theirs.decode(cut)


@pytest.mark.parametrize("cls", [BasicTokenizer, RegexTokenizer])
def test_minbpe_cycle_train_encode_decode_save_load(cls, tmp_path):
    tok = cls() if cls is BasicTokenizer else cls(GPT4_SPLIT_PATTERN)
    tok.train(TAYLOR, 512, progress=False)
    assert len(tok.merges) == 512 - 256 and tok.n_vocab == 512
    ids = tok.encode(TAYLOR)
    assert tok.decode(ids) == TAYLOR
    tok.save(tmp_path / "toy")
    loaded = Tokenizer.from_file(tmp_path / "toy.model")
    assert loaded.encode(TAYLOR) == ids and loaded.merges == tok.merges
    again = cls()
    again.load(tmp_path / "toy.model")
    assert again.encode(MIX) == tok.encode(MIX)


def test_special_tokens_are_registered_and_kept_by_save(tmp_path):
    tok = RegexTokenizer(GPT4_SPLIT_PATTERN)
    tok.train(TAYLOR, 300, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 300})
    assert tok.special_tokens == {"<|endoftext|>": 300}
    ids = tok.encode("a<|endoftext|>b", allowed_special="all")
    assert 300 in ids and tok.decode(ids) == "a<|endoftext|>b"
    tok.save(tmp_path / "s")
    assert Tokenizer.from_file(tmp_path / "s.model").encode("a<|endoftext|>b", allowed_special="all") == ids
