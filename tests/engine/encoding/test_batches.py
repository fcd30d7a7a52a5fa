"""Batches on threads (hf_bbpe/engine/encoding/batches.py) and the C path that splits and encodes a whole
text without the GIL (``_chunk_bpe.encode_text``/``encode_texts`` over ``_pretokenize``'s scanners).

* For random text, every mode and each C-scanned pattern: ``encode_batch(num_threads=2)``,
  ``encode_batch_to_numpy`` and per-document ``encode_ordinary`` equal the pure-Python twin
  (``ChunkEncoder(native=False)`` over the ``regex`` module's split), and tiktoken in "ranks" mode.
* Special tokens in a threaded batch behave exactly as in ``encode`` (allowed, disallowed, raised).
* Lone surrogates take ``encode_ordinary``'s replacement rule in every batch path.
* Without the C modules (remote code), ``encode_batch(num_threads=2)`` still gives ``encode``'s ids.
* A long text cut into parts on threads (``encode_ordinary(num_threads=N)``) gives the ids of one
  thread, and tiktoken's, wherever the cuts fall (inside whitespace runs, words, chunks longer
  than a part); a big batch's lists, filled without the GIL, and a long text's list, its
  references counted per id, hold correct reference counts.
"""

from __future__ import annotations

from pathlib import Path

import sys

import numpy as np
import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import Tokenizer
from hf_bbpe.engine.encoding import batches as batch_encoding
from hf_bbpe.engine.encoding.encoder import ChunkEncoder
from hf_bbpe.engine.chunking.chunking import Chunking
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS, compile_pattern
from hf_bbpe.engine.encoding.special_tokens import DisallowedSpecialToken

from tests.support.families import mix_documents

from .test_encoder_modes import random_ranks

# letters of several scripts and cases, digits, contractions, spaces and line breaks, an emoji
CHARS = "abcAB é'stlv 12345\n\r\t  ,.!/-日本語Ωω😀\u0301"
documents = st.lists(st.text(st.sampled_from(CHARS), max_size=80), min_size=0, max_size=12)


def twin_ids(tok: Tokenizer, pattern: str, text: str) -> list[int]:
    """The pure-Python pipeline: the regex module's split, then the Python chunk encoder."""
    enc = tok._encoder
    twin = ChunkEncoder(enc.merges, enc.byte_ids, mode=enc.mode, vocab=enc.vocab, native=False)
    return twin.encode_chunks(compile_pattern(pattern).findall(text))


@pytest.fixture(scope="module")
def cl100k_ranks() -> dict[bytes, int]:
    import tiktoken_ext
    from tiktoken.load import load_tiktoken_bpe

    return load_tiktoken_bpe(str(Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"))


@pytest.fixture(scope="module")
def cl100k(cl100k_ranks) -> Tokenizer:
    return Tokenizer.from_ranks(cl100k_ranks, pattern="gpt4", special_tokens={"<|endoftext|>": 100257})


def check_batch(tok: Tokenizer, pattern: str, docs: list[str]) -> list[list[int]]:
    expected = [twin_ids(tok, pattern, d) for d in docs]
    assert tok._scanner is not None and tok._encoder.native  # the C whole-text path is under test
    assert [tok.encode_ordinary(d) for d in docs] == expected
    # a big batch goes to the thread pool; the same texts repeated keep the check cheap
    many = docs * (batch_encoding._THREAD_MIN_CHARS // max(1, sum(map(len, docs))) + 1) if docs else []
    assert tok.encode_batch(many, num_threads=2) == expected * (len(many) // max(1, len(docs)))
    assert tok.encode_batch(docs, num_threads=1) == expected
    ids, offsets = tok.encode_batch_to_numpy(many, num_threads=2)
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64 and len(offsets) == len(many) + 1
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected * (len(many) // max(1, len(docs)))
    return expected


@pytest.mark.parametrize("mode", ["merges", "ignore_merges", "ranks"])
@pytest.mark.parametrize("name", list(NATIVE_PATTERNS))
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), docs=documents)
def test_threaded_batch_equals_per_document_and_the_python_twin(mode, name, seed, docs):
    ranks = random_ranks(seed, 30, 6, shuffle=True)
    tok = Tokenizer.from_ranks(ranks, pattern=name)
    tok.mode = mode
    expected = check_batch(tok, NATIVE_PATTERNS[name], docs)
    if mode == "ranks":
        reference = tiktoken.Encoding("t", pat_str=NATIVE_PATTERNS[name], mergeable_ranks=ranks, special_tokens={})
        assert expected == [reference.encode_ordinary(d) for d in docs]


@settings(max_examples=30, deadline=None)
@given(docs=documents)
def test_cl100k_threaded_batch_equals_tiktoken(cl100k, cl100k_ranks, docs):
    reference = tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks,
                                  special_tokens={})
    assert check_batch(cl100k, NATIVE_PATTERNS["gpt4"], docs) == [reference.encode_ordinary(d) for d in docs]


def test_special_tokens_in_a_threaded_batch_as_in_encode(cl100k):
    docs = ["hello <|endoftext|> world", "plain text", "<|endoftext|>"] * 2000
    for options in ({"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {"<|endoftext|>"}}):
        expected = [cl100k.encode(d, **options) for d in docs]
        assert cl100k.encode_batch(docs, num_threads=2, **options) == expected
        ids, offsets = cl100k.encode_batch_to_numpy(docs, num_threads=2, **options)
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    for batch in (cl100k.encode_batch, cl100k.encode_batch_to_numpy):
        with pytest.raises(DisallowedSpecialToken) as caught:
            batch(["fine"] * 5000 + docs, num_threads=2)
        assert caught.value.token == "<|endoftext|>"


def test_lone_surrogates_follow_encode_ordinary(cl100k):
    docs = ["ok \ud800 then", "fine", "\udc00", "pair \ud83d\ude00 joined"] * 3000
    expected = [cl100k.encode_ordinary(d) for d in docs]
    assert expected[0] == cl100k.encode_ordinary("ok \ufffd then")
    assert cl100k.encode_batch(docs, num_threads=2) == expected
    ids, offsets = cl100k.encode_batch_to_numpy(docs, num_threads=2)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected


def test_batch_on_threads_without_the_c_modules(cl100k, monkeypatch):
    """The remote-code case: no C scanner, no C kernel; threads still give encode's ids."""
    docs = ["Hello world, 123 日本語!", "second <|endoftext|> doc"] * 3000
    expected = [cl100k.encode(d, allowed_special="all") for d in docs]
    vocab = cl100k._encoder.vocab
    monkeypatch.setattr(cl100k, "_encoder", ChunkEncoder({}, cl100k.byte_ids, mode="ranks", vocab=vocab, native=False))
    monkeypatch.setattr(cl100k, "chunking", Chunking(None, cl100k.pre_tokenizer, native=False))
    assert cl100k.encode_batch(docs, num_threads=2, allowed_special="all") == expected
    ids, offsets = cl100k.encode_batch_to_numpy(docs, num_threads=2, allowed_special="all")
    assert ids.tolist() == [i for ids_ in expected for i in ids_] and offsets[-1] == len(ids)


# a unit repeated up to a long text: the cuts between parts fall at every offset of it in turn
long_units = st.text(st.sampled_from(CHARS + "    \n\n\r\n"), min_size=1, max_size=60)


@pytest.mark.parametrize("name", list(NATIVE_PATTERNS))
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), unit=long_units, extra=st.integers(0, 997), threads=st.integers(2, 5))
def test_long_text_on_threads_equals_one_thread(name, seed, unit, extra, threads):
    tok = Tokenizer.from_ranks(random_ranks(seed, 30, 6, shuffle=True), pattern=name)
    text = unit * (800_000 // len(unit) + 1)  # 3 parts of 2**18 characters + unit[: extra % len(unit)]
    assert tok._scanner is not None and tok._encoder.native  # the C whole-text path is under test
    expected = tok.encode_ordinary(text)
    assert tok.encode_ordinary(text, num_threads=threads) == expected
    assert tok.encode(text, num_threads=threads) == expected


@settings(max_examples=6, deadline=None)
@given(docs=st.lists(st.text(st.sampled_from(CHARS), min_size=1, max_size=300), min_size=1, max_size=8),
       run=st.sampled_from(["", " ", "\n", " \n", "a", "7"]), run_len=st.integers(1, 700_000))
def test_cl100k_long_text_on_threads_equals_tiktoken(cl100k, cl100k_ranks, docs, run, run_len):
    """Real text with, in the middle, a run that may be one chunk longer than a whole part."""
    reference = tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks,
                                  special_tokens={})
    body = "\n\n".join(docs)
    half = body * (300_000 // len(body) + 1)
    text = half + run * run_len + half
    assert cl100k.encode_ordinary(text, num_threads=2) == reference.encode_ordinary(text)
    assert cl100k.encode_ordinary(text, num_threads=3) == reference.encode_ordinary(text)


def test_big_batch_lists_filled_without_the_gil_hold_their_references(cl100k):
    docs = ["Hello world, 123 日本語! \ud800", "plain text again", "🙂 x"] * 20_000  # far above 65536 ids
    encode_texts, scanner = cl100k._encoder.encode_texts, cl100k._scanner
    first = encode_texts(docs[:3], scanner, True)[1][0]  # the kernel's int object of an id
    before = sys.getrefcount(first)
    lists = encode_texts(docs, scanner, True)
    assert lists[0] is None and lists[3] is None  # lone surrogate: encode_ordinary's rule, in Python
    assert lists[1::3] == [cl100k.encode_ordinary("plain text again")] * 20_000
    assert lists[2::3] == [cl100k.encode_ordinary("🙂 x")] * 20_000
    assert sys.getrefcount(first) == before + 20_000
    del lists
    assert sys.getrefcount(first) == before
    assert cl100k.encode_batch(docs[:2] * 40_000, num_threads=2) == [cl100k.encode_ordinary(d) for d in docs[:2]] * 40_000


def test_long_text_list_holds_its_references(cl100k, cl100k_ranks):
    """A list of 65536 ids or more is filled with its references counted per id and added to the
    int objects at the end (ids_to_list): tiktoken's ids, and each int object's count goes up by
    the id's occurrences in a new list and back down when the list goes."""
    reference = tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks,
                                  special_tokens={})
    body = "\n\n".join(mix_documents())
    text = body * (400_000 // len(body) + 1)
    ids = cl100k.encode_ordinary(text)
    assert len(ids) > 1 << 16 and ids == reference.encode_ordinary(text)
    word = next(i for i in ids if i > 1000)  # not one of CPython's small ints (immortal on 3.12+)
    before = sys.getrefcount(word)
    again = cl100k.encode_ordinary(text)
    assert sys.getrefcount(word) == before + ids.count(word)
    del again
    assert sys.getrefcount(word) == before


def test_encode_to_numpy_equals_tiktoken(cl100k, cl100k_ranks):
    """``encode_to_numpy`` (tiktoken's name) gives tiktoken's ids as uint32, on the C path, with
    special tokens, with a lone surrogate (encode_ordinary's rule) and on threads."""
    reference = tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks,
                                  special_tokens={"<|endoftext|>": 100257})
    docs = mix_documents() + ["a <|endoftext|> b", ""]
    for doc in docs:
        got = cl100k.encode_to_numpy(doc, allowed_special="all")
        want = reference.encode_to_numpy(doc, allowed_special="all")
        assert got.dtype == np.uint32 and got.flags.writeable and got.tolist() == want.tolist()
        assert cl100k.encode_to_numpy(doc, disallowed_special=()).tolist() == reference.encode_ordinary(doc)
    assert cl100k.encode_to_numpy("ok \ud800 then").tolist() == cl100k.encode_ordinary("ok \ud800 then")
    with pytest.raises(DisallowedSpecialToken):
        cl100k.encode_to_numpy("a <|endoftext|>")
    long_text = "\n\n".join(docs) * 4
    assert cl100k.encode_to_numpy(long_text, num_threads=2, disallowed_special=()).tolist() == \
        reference.encode_ordinary(long_text)


def test_encode_to_numpy_in_one_c_call_only_for_the_arguments_it_was_made_for(cl100k_ranks):
    """After a call that needs no special-token handling, encode_to_numpy's next calls with the same
    argument objects run in one C call (PlainArrayCall) and give the same ids; other arguments, a
    set (which could change between calls), threads, a lone surrogate and a pickled copy all take
    the general path, with its ids and errors."""
    import pickle

    from hf_bbpe.engine.encoding import _chunk_bpe

    tok = Tokenizer.from_ranks(cl100k_ranks, pattern="gpt4", special_tokens={"<|endoftext|>": 100257})
    reference = tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks,
                                  special_tokens={"<|endoftext|>": 100257})
    text = "\n\n".join(mix_documents())
    general = tok.encode_to_numpy(text, disallowed_special=())
    assert general.tolist() == reference.encode_ordinary(text)
    assert isinstance(tok._plain_array, _chunk_bpe.PlainArrayCall)
    fast = tok.encode_to_numpy(text, disallowed_special=())  # the array numpy's C API made, as frombuffer's
    assert fast.tolist() == general.tolist()
    assert (type(fast), fast.dtype, fast.shape, fast.flags.writeable, fast.flags.c_contiguous, fast.flags.owndata) == \
        (type(general), general.dtype, general.shape, True, True, False)
    fast[0] = general[0] + 1  # its own ids: writing them changes no other array
    assert tok.encode_to_numpy(text, disallowed_special=())[0] == general[0]
    assert tok.encode_to_numpy("a <|endoftext|>", disallowed_special=()).tolist() == \
        reference.encode_ordinary("a <|endoftext|>")
    assert tok._plain_array("a", "none_raise", (), 2) is None  # threads: not this call
    assert tok.encode_to_numpy(text, disallowed_special=(), num_threads=2).tolist() == reference.encode_ordinary(text)
    assert tok.encode_to_numpy("ok \ud800 then", disallowed_special=()).tolist() == tok.encode_ordinary("ok \ud800 then")
    with pytest.raises(DisallowedSpecialToken):
        tok.encode_to_numpy("a <|endoftext|>")
    assert tok.encode_to_numpy("a <|endoftext|>", allowed_special="all").tolist() == \
        reference.encode("a <|endoftext|>", allowed_special="all")
    changing: set[str] = set()
    assert tok.encode_to_numpy("a <|endoftext|>", disallowed_special=changing).tolist() == \
        reference.encode_ordinary("a <|endoftext|>")
    assert tok._plain_array("a", "none_raise", changing, 1) is None  # a set is not kept
    changing.add("<|endoftext|>")
    with pytest.raises(DisallowedSpecialToken):
        tok.encode_to_numpy("a <|endoftext|>", disallowed_special=changing)
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.encode_to_numpy(text, disallowed_special=()).tolist() == reference.encode_ordinary(text)
    with pytest.raises(TypeError):
        tok._plain_array("a", "none_raise", ())


def test_large_calls_reuse_a_freed_ids_buffer_never_a_live_one(cl100k, cl100k_ranks):
    """A large call's ids buffer is kept when its owner is freed and filled by the next large call
    (no fresh pages to fault in): arrays still alive keep their ids, whatever the calls after them
    (numpy, lists, a batch, a larger text than the kept buffer holds, one that holds less), and
    every result equals tiktoken's."""
    reference = tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks,
                                  special_tokens={})
    text = "\n\n".join(mix_documents())
    big = text * (1_500_000 // len(text) + 1)  # about half a million ids: past the size kept
    want = reference.encode_ordinary(big)
    kept = cl100k.encode_to_numpy(big, disallowed_special=())
    assert kept.tolist() == want
    calls = [(big, lambda t: cl100k.encode_to_numpy(t, disallowed_special=()).tolist()),
             (big + big, cl100k.encode_ordinary),
             (big[: len(big) // 3], lambda t: cl100k.encode_to_numpy(t, disallowed_special=()).tolist()),
             (big, lambda t: cl100k.encode_batch_to_numpy([t], num_threads=1, disallowed_special=())[0].tolist()),
             (big + text, lambda t: cl100k.encode_batch([t, text], num_threads=2)[0])]
    for argument, call in calls:
        assert call(argument) == reference.encode_ordinary(argument)
        assert kept.tolist() == want


def test_large_calls_after_a_text_of_far_fewer_ids_per_byte(cl100k, cl100k_ranks):
    """A large call makes room for as many ids per byte as the last large text had: after a
    text of long English words (few ids per byte), texts of many ids per byte (emoji, digits and
    CJK: about one id per two bytes or more) outgrow that room and are still whole, alone, in
    arrays, in lists and in a batch, and an English text after them is too."""
    reference = tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks,
                                  special_tokens={})
    sparse = " information technology" * 40_000
    dense = "🙂 7 8 9 日本語の文 ∰ " * 30_000
    for text in (sparse, dense, sparse, dense + sparse, dense):
        want = reference.encode_ordinary(text)
        assert cl100k.encode_to_numpy(text, disallowed_special=()).tolist() == want
        assert cl100k.encode_ordinary(text) == want
        assert cl100k.encode_batch_to_numpy([text], num_threads=1, disallowed_special=())[0].tolist() == want


# a batch's grains (csrc/encode/, BATCH_GRAIN_BYTES): runs of whole texts, or parts of a text this long
GRAIN_BYTES = 1 << 16


def test_a_threaded_batch_is_cut_into_small_grains_in_order(cl100k):
    """Threads take small grains of a batch from a shared cursor, not shares fixed beforehand, so a
    thread slowed by another process on its core holds back the batch by one small grain at most:
    every grain holds about 64 KB of text or less (a text of a megabyte is cut into parts, never at a
    chunk of more than a grain), and the grains cover the batch in order."""
    from hf_bbpe.engine.encoding import _chunk_bpe

    docs = mix_documents()
    long_doc = "\n\n".join(docs) * (1_000_000 // len("\n\n".join(docs).encode()) + 1)
    run = " " * 300_000 + "x" * 200_000 + " tail"  # chunks longer than a grain: no part starts in them
    batch = docs * 40 + [long_doc] + docs * 40 + [run] + docs
    sizes = [len(d.encode()) for d in batch]
    grains = _chunk_bpe.batch_grains(batch, cl100k._scanner, 2)
    assert _chunk_bpe.batch_grains(batch, cl100k._scanner, 1) == [(0, len(batch), 0, False)]
    assert len(grains) >= 16 * 2
    covered, parts = 0, []
    for i, (first, end, start, part) in enumerate(grains):
        if not part:
            assert first == covered and end > first
            assert sum(sizes[first:end]) - sizes[end - 1] < GRAIN_BYTES  # closed once it holds a grain
            covered = end
            continue
        assert (first, end) == (covered, covered + 1)
        nxt = grains[i + 1] if i + 1 < len(grains) and grains[i + 1][3] and grains[i + 1][0] == first else None
        stop = nxt[2] if nxt else sizes[first]
        assert (start == 0) == (not parts or parts[-1][0] != first) and start < stop
        parts.append((first, start, stop))
        if not nxt:
            covered += 1
    assert covered == len(batch)
    long_parts = [stop - start for doc, start, stop in parts if doc == batch.index(long_doc)]
    assert len(long_parts) >= 8 and max(long_parts) < 2 * GRAIN_BYTES
    run_starts = [start for doc, start, _ in parts if doc == batch.index(run)]
    assert run_starts[0] == 0 and all(start >= 500_000 for start in run_starts[1:])


@pytest.mark.parametrize("name", list(NATIVE_PATTERNS))
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), docs=documents, unit=long_units, extra=st.integers(0, 997),
       threads=st.integers(2, 4))
def test_batch_with_long_texts_on_threads_equals_one_thread(name, seed, docs, unit, extra, threads):
    """Long texts in a batch are cut into parts that threads encode apart; the ids are those of
    each text alone, wherever the cuts fall (in whitespace runs, words, chunks longer than a part)."""
    tok = Tokenizer.from_ranks(random_ranks(seed, 30, 6, shuffle=True), pattern=name)
    long_text = unit * (300_000 // len(unit) + 1) + unit[: extra % len(unit)]
    batch = docs + [long_text] + docs + [long_text[extra:]]
    expected = [tok.encode_ordinary(d) for d in batch]
    assert tok.encode_batch(batch, num_threads=threads) == expected
    ids, offsets = tok.encode_batch_to_numpy(batch, num_threads=threads)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected


@settings(max_examples=6, deadline=None)
@given(docs=st.lists(st.text(st.sampled_from(CHARS), min_size=1, max_size=300), min_size=1, max_size=8),
       run=st.sampled_from(["", " ", "\n", " \n", "a", "7"]), run_len=st.integers(1, 400_000))
def test_cl100k_batch_with_long_texts_equals_tiktoken(cl100k, cl100k_ranks, docs, run, run_len):
    """Real text around a run that may be one chunk longer than many grains, in a batch, on threads."""
    reference = tiktoken.Encoding("cl100k", pat_str=NATIVE_PATTERNS["gpt4"], mergeable_ranks=cl100k_ranks,
                                  special_tokens={})
    body = "\n\n".join(docs)
    half = body * (150_000 // len(body) + 1)
    batch = docs + [half + run * run_len + half, run * run_len] + docs
    expected = reference.encode_ordinary_batch(batch)
    assert cl100k.encode_batch(batch, num_threads=2) == expected
    ids, offsets = cl100k.encode_batch_to_numpy(batch, num_threads=3)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
