"""The chunk encoder's three modes (hf_bbpe/engine/encoding/encoder.py) against the systems they copy.

* "ranks" is tiktoken's algorithm: on random rank vocabularies, including ones whose tokens no
  merge of lower ranks builds (reached as whole pieces, or by merging parts of higher rank, as
  Llama 3's ``.:.:`` is), the engine's ids equal ``tiktoken.Encoding``'s, whole sequence, on
  hypothesis text, for the C kernel and the pure-Python twin, on short and long chunks.
* "ignore_merges" is ``tokenizers``' BPE with ``ignore_merges=True``: equal ids on random merge
  tables, against ``tokenizers`` itself.
* The merges recovered from ranks (``Tokenizer.merges`` in "ranks" mode) and the unmerged
  tokens equal the Python twin's, and "ranks" mode on a vocabulary whose every token is built
  equals "merges" mode on the recovered merges.
* A "ranks" tokenizer survives pickling, the .model file (hf_bbpe v2) and ``extend``.
* Ids anywhere in tiktoken's u32 range (renumbered for the C kernel): "ranks" equals tiktoken,
  including its rank 2**32 - 1 that no merge makes; "merges"/"ignore_merges" with ids spread in
  the same order encode id for id as before.
"""

from __future__ import annotations

import pickle
import random

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, pre_tokenizers

from hf_bbpe import Tokenizer
from hf_bbpe.engine.chunking.byte_unicode import token_to_unicode
from hf_bbpe.engine.encoding.encoder import ChunkEncoder
from hf_bbpe.engine.files.minbpe_model import read_model_file

NO_SPLIT = r"[\s\S]+"  # tiktoken's stand-in for "no split pattern"
ALPHABET = b"abc\xc3\xa9"


def random_ranks(seed: int, steps: int, extra: int, shuffle: bool) -> dict[bytes, int]:
    """256 single bytes, tokens grown like BPE, then ``extra`` random tokens at random ranks
    (most of them built by no merge of lower ranks), ranks shuffled among the multi-byte tokens
    if ``shuffle`` (so a token may rank below its own parts)."""
    rng = random.Random(seed)
    ranks = {bytes([b]): b for b in range(256)}
    words = [bytes(rng.choice(ALPHABET[:3]) for _ in range(rng.randint(2, 12))) for _ in range(6)]
    tokens: list[bytes] = []
    for _ in range(steps):
        word = rng.choice(words)
        i = rng.randrange(len(word) - 1)
        j = rng.randint(i + 2, min(len(word), i + 5))
        if word[i:j] not in ranks and word[i:j] not in tokens:
            tokens.append(word[i:j])
    for _ in range(extra):
        token = bytes(rng.choice(ALPHABET[:3]) for _ in range(rng.randint(2, 6)))
        if token not in tokens:
            tokens.insert(rng.randrange(len(tokens) + 1), token)
    if shuffle:
        rng.shuffle(tokens)
    for i, token in enumerate(tokens):
        ranks[token] = 256 + i
    return ranks


texts = st.text(st.sampled_from("abcé "), max_size=200)


@pytest.mark.parametrize("native", [True, False], ids=["C", "python"])
@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 40), extra=st.integers(0, 8), shuffle=st.booleans(),
       text=texts)
def test_ranks_mode_equals_tiktoken(native, seed, steps, extra, shuffle, text):
    ranks = random_ranks(seed, steps, extra, shuffle)
    reference = tiktoken.Encoding("t", pat_str=NO_SPLIT, mergeable_ranks=ranks, special_tokens={})
    encoder = ChunkEncoder({}, [ranks[bytes([b])] for b in range(256)], mode="ranks",
                           vocab={rank: token for token, rank in ranks.items()}, native=native)
    data = text.encode("utf-8")
    expected = reference.encode_ordinary(text)
    assert encoder.encode_bytes(data) == expected
    assert encoder.encode_bytes(data * 3) == reference.encode_ordinary(text * 3)  # long chunks: the heap path
    assert encoder.encode_chunks([text, text]) == expected + expected


def spread_ids(ids, seed: int, top: bool) -> dict[int, int]:
    """Each id of ``ids`` at or above 256 moved to a random id of tiktoken's u32 range, in the same
    order; the highest to 2**32 - 1 if ``top`` (tiktoken's "no rank" value)."""
    rng = random.Random(seed)
    old = sorted(i for i in set(ids) if i >= 256)
    new = sorted(rng.sample(range(256, 2**32 - 1), len(old)))
    if top and new:
        new[-1] = 2**32 - 1
    return {i: i for i in range(256)} | dict(zip(old, new))


@pytest.mark.parametrize("native", [True, False], ids=["C", "python"])
@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 40), extra=st.integers(0, 8), shuffle=st.booleans(),
       top=st.booleans(), text=texts)
def test_ranks_anywhere_in_u32_equal_tiktoken(native, seed, steps, extra, shuffle, top, text):
    """Ranks past int32 (which the C kernel gets renumbered) and the rank 2**32 - 1, which tiktoken
    never makes by a merge: same ids as tiktoken, and the twin's recovered merges."""
    ranks = random_ranks(seed, steps, extra, shuffle)
    moved = spread_ids(ranks.values(), seed, top)
    ranks = {token: moved[rank] for token, rank in ranks.items()}
    reference = tiktoken.Encoding("t", pat_str=NO_SPLIT, mergeable_ranks=ranks, special_tokens={})
    vocab = {rank: token for token, rank in ranks.items()}
    encoder = ChunkEncoder({}, [ranks[bytes([b])] for b in range(256)], mode="ranks", vocab=vocab, native=native)
    data = text.encode("utf-8")
    assert encoder.encode_bytes(data) == reference.encode_ordinary(text)
    assert encoder.encode_bytes(data * 3) == reference.encode_ordinary(text * 3)
    assert encoder.encode_chunks([text, text]) == reference.encode_ordinary(text) * 2
    twin = ChunkEncoder({}, encoder.byte_ids, mode="ranks", vocab=vocab, native=False)
    assert encoder.recover_merges() == twin.recover_merges()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(0, 30), text=st.text(st.sampled_from("abc "), max_size=120))
def test_merge_ids_anywhere_in_u32_encode_as_before(seed, size, text):
    """Merges and ignore_merges with ids spread over u32, in the same order: the same encoding, id for id."""
    merges, unmerged = _merge_table(random.Random(seed), size)
    moved = spread_ids([*merges.values(), *unmerged], seed, top=False)
    wide_merges = {(moved[a], moved[b]): moved[m] for (a, b), m in merges.items()}
    wide_unmerged = {moved[i]: token for i, token in unmerged.items()}
    for mode in ("merges", "ignore_merges"):
        plain = Tokenizer.from_merges(merges, pattern=r" ?[^ ]+| +", unmerged_tokens=unmerged, mode=mode)
        wide = Tokenizer.from_merges(wide_merges, pattern=r" ?[^ ]+| +", unmerged_tokens=wide_unmerged, mode=mode)
        expected = [moved[i] for i in plain.encode_ordinary(text)]
        assert wide.encode_ordinary(text) == expected
        python = ChunkEncoder(wide_merges, list(range(256)), mode=mode, vocab=wide.vocab, native=False)
        assert python.encode_chunks(text.split(" ")) == [moved[i] for i in plain._encoder.encode_chunks(text.split(" "))]


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 40), extra=st.integers(0, 8), shuffle=st.booleans(),
       split=st.booleans(), text=texts)
def test_ranks_tokenizer_equals_tiktoken_and_recovers_the_twins_merges(seed, steps, extra, shuffle, split, text):
    ranks = random_ranks(seed, steps, extra, shuffle)
    pattern = r" ?[^ ]+| +" if split else None
    reference = tiktoken.Encoding("t", pat_str=pattern or NO_SPLIT, mergeable_ranks=ranks, special_tokens={})
    tok = Tokenizer.from_ranks(ranks, pattern=pattern)
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert tok.mergeable_ranks() == ranks
    vocab = {rank: token for token, rank in ranks.items()}
    twin = ChunkEncoder({}, tok.byte_ids, mode="ranks", vocab=vocab, native=False).recover_merges()
    assert (tok.merges, sorted(tok.unmerged_tokens)) == twin
    assert tok.mergeable_ranks() == ranks  # recovery changed nothing
    if not tok.unmerged_tokens:  # every token built: the recovered merges encode alike (representability.py)
        merges_mode = Tokenizer.from_merges(tok.merges, pattern=pattern, byte_ids=tok.byte_ids)
        assert merges_mode.encode_ordinary(text) == reference.encode_ordinary(text)


def _merge_table(rng: random.Random, size: int) -> tuple[dict[tuple[int, int], int], dict[int, bytes]]:
    """Random merges over a b c (one per new token, increasing ids) plus a few tokens no merge builds."""
    vocab = {b: bytes([b]) for b in range(256)}
    merges: dict[tuple[int, int], int] = {}
    parts = [ord("a"), ord("b"), ord("c")]
    seen = set()
    for new in range(256, 256 + size):
        a, b = rng.choice(parts), rng.choice(parts)
        if vocab[a] + vocab[b] in seen:
            continue
        merges[(a, b)] = new
        vocab[new] = vocab[a] + vocab[b]
        seen.add(vocab[new])
        parts.append(new)
    unmerged = {}
    for idx in range(256 + size, 256 + size + 3):
        token = bytes(rng.choice(b"abc") for _ in range(rng.randint(2, 5)))
        if token not in seen:
            unmerged[idx] = token
            seen.add(token)
    return merges, unmerged


@pytest.mark.parametrize("native", [True, False], ids=["C", "python"])
@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(0, 30), text=st.text(st.sampled_from("abc "), max_size=120))
def test_ignore_merges_mode_equals_tokenizers(native, seed, size, text):
    merges, unmerged = _merge_table(random.Random(seed), size)
    tok = Tokenizer.from_merges(merges, pattern=r" ?[^ ]+| +", unmerged_tokens=unmerged, mode="ignore_merges")
    encoder = ChunkEncoder(merges, list(range(256)), mode="ignore_merges", vocab=tok.vocab, native=native)
    spelled = {token_to_unicode(data): idx for idx, data in tok.vocab.items()}
    by_id = {idx: text for text, idx in spelled.items()}
    hf = HFTokenizer(models.BPE(spelled, [(by_id[a], by_id[b]) for a, b in merges], ignore_merges=True))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    for word in text.split(" "):
        if word:
            assert encoder.encode_bytes(word.encode("utf-8")) == hf.encode(word).ids, word
            assert tok.encode_single_piece(word) == hf.encode(word).ids, word


MAYBE_MISSING = [ord("d"), 0xC3, 0xA9, 0xC0, 0xF5, 0xFF]  # "d", the bytes of "é", three that UTF-8 never uses


@pytest.mark.parametrize("native", [True, False], ids=["C", "python"])
@pytest.mark.parametrize("mode", ["merges", "ignore_merges"])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(0, 30), missing=st.sets(st.sampled_from(MAYBE_MISSING)),
       text=st.text(st.sampled_from("abcdé "), max_size=120))
def test_merge_modes_without_some_bytes_equal_tokenizers(native, mode, seed, size, missing, text):
    """A vocabulary that lacks some single bytes (byte_ids -1), as a tokenizer.json from
    tokenizers' BpeTrainer does: a piece whose bytes it has gets tokenizers' ids, one that needs a
    missing byte raises MissingByteError naming it (tokenizers drops the character), in the C
    kernel and the Python twin, piece by piece and through encode_ordinary and encode_batch."""
    from hf_bbpe import MissingByteError

    merges, unmerged = _merge_table(random.Random(seed), size)
    byte_ids = [-1 if b in missing else b for b in range(256)]
    tok = Tokenizer.from_merges(merges, pattern=r" ?[^ ]+| +", byte_ids=byte_ids, unmerged_tokens=unmerged, mode=mode)
    assert all(bytes([b]) not in tok.vocab.values() for b in missing)
    vocab = tok.vocab if mode == "ignore_merges" else None
    encoder = ChunkEncoder(merges, byte_ids, mode=mode, vocab=vocab, native=native)
    spelled = {token_to_unicode(data): idx for idx, data in tok.vocab.items()}
    by_id = {idx: text for text, idx in spelled.items()}
    hf = HFTokenizer(models.BPE(spelled, [(by_id[a], by_id[b]) for a, b in merges], ignore_merges=mode != "merges"))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    expected = []
    for piece in tok.chunks(text):
        data = piece.encode("utf-8")
        lacking = [b for b in data if b in missing]
        if lacking:
            for encode in (encoder.encode_bytes, tok.encode_single_piece):
                with pytest.raises(MissingByteError) as excinfo:
                    encode(data)
                assert excinfo.value.byte in lacking
        else:
            assert encoder.encode_bytes(data) == tok.encode_single_piece(data) == hf.encode(piece).ids, piece
            expected += hf.encode(piece).ids
    if any(b in missing for b in text.encode("utf-8")):
        with pytest.raises(MissingByteError):
            tok.encode_ordinary(text)
    else:
        assert tok.encode_ordinary(text) == tok.encode_batch([text, text], num_threads=2)[1] == expected


def test_ranks_tokenizer_round_trips_through_pickle_and_the_model_file(tmp_path):
    ranks = random_ranks(7, 40, 8, True)
    tok = Tokenizer.from_ranks(ranks, pattern=r" ?[^ ]+| +", special_tokens={"<|x|>": 1000})
    assert tok.unmerged_tokens, "the vocabulary must hold tokens that no merge builds"
    text = "abcab cabba aaabbbccc abcabcabc " * 3
    ids = tok.encode_ordinary(text)
    assert pickle.loads(pickle.dumps(tok)).encode_ordinary(text) == ids
    tok.save(tmp_path / "r")
    assert (tmp_path / "r.model").read_text(encoding="utf-8").startswith("hf_bbpe v2\n")
    contents = read_model_file(tmp_path / "r.model")
    assert contents.mode == "ranks" and contents.unmerged == tok.unmerged_tokens
    back = Tokenizer.from_file(tmp_path / "r.model")
    assert back.mode == "ranks" and back.vocab == tok.vocab and back.special_tokens == tok.special_tokens
    assert back.encode_ordinary(text) == ids


def test_extend_keeps_ranks_mode_and_every_old_id():
    ranks = random_ranks(11, 40, 8, True)
    tok = Tokenizer.from_ranks(ranks, pattern=r" ?[^ ]+| +")
    extended = tok.extend(["éaé éaéaé bcé " * 20], 5, progress=False)
    assert extended.mode == "ranks"
    assert all(extended.vocab[idx] == data for idx, data in tok.vocab.items())
    new_tokens = [extended.vocab[idx] for idx in set(extended.vocab) - set(tok.vocab)]
    assert new_tokens and all(min(set(extended.vocab) - set(tok.vocab)) > max(tok.vocab) for _ in new_tokens)
    reference = tiktoken.Encoding("t", pat_str=r" ?[^ ]+| +", mergeable_ranks=extended.mergeable_ranks(),
                                  special_tokens={})
    for text in ["abc cab abba", "éaé éaéaé bcé", "ccc éa"]:
        assert extended.encode_ordinary(text) == reference.encode_ordinary(text)
        if not any(token in text.encode("utf-8") for token in new_tokens):
            assert extended.encode_ordinary(text) == tok.encode_ordinary(text)


def test_modes_are_checked():
    with pytest.raises(ValueError, match="unknown mode 'tiktoken'"):
        Tokenizer.from_merges({}, mode="tiktoken")
    missing_nul = Tokenizer.from_ranks({bytes([b]): b for b in range(1, 256)})  # tiktoken builds it too
    assert missing_nul.encode_ordinary("ab") == [97, 98]
    with pytest.raises(ValueError, match=r"cannot encode the byte b'\\x00'"):
        missing_nul.encode_ordinary("a\x00")
    with pytest.raises(ValueError, match=r"the single byte b'\\x00' has no rank"):
        missing_nul.merges  # noqa: B018
