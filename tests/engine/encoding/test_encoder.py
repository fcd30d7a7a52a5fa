"""The encoder gives minbpe's ``_encode_chunk`` result, whatever the chunk length, and tiktoken's ids.

* Equal to the naive reference encoder (tests/reference_bpe.py) on hypothesis text, for trained
  tokenizers and for arbitrary merge tables with permuted byte ids, including chunks longer than
  64 bytes (the heap path): runs of one letter, random letters with no split point, digits, CJK.
* decode(encode(x)) == x for any text without lone surrogates.
* 1 MB with no split point encodes, instead of hanging, and correctly (equal to tiktoken, decodes back).
* Equal, whole sequence, to ``tiktoken.Encoding`` built from ``mergeable_ranks()`` on real text.
* Both chunk encoders, the C kernel and the pure-Python one (which runs in remote-code copies),
  equal the reference, on both their short-chunk and heap paths, and each other on any bytes.
* The chunk cache never serves ids of an old merge table; encode_batch keeps order, in parallel;
  a pickled tokenizer encodes the same.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.reference_bpe import naive_encode, naive_encode_chunk

from hf_bbpe import (
    GPT2_SPLIT_PATTERN,
    GPT4_SPLIT_PATTERN,
    O200K_SPLIT_PATTERN,
    BasicTokenizer,
    RegexTokenizer,
    Tokenizer,
)
from hf_bbpe.engine.encoding import batches as batch_encoding
from hf_bbpe.engine.encoding import encoder as chunk_encoder
from hf_bbpe.engine.encoding.encoder import ChunkEncoder

TEXT_DIR = Path(__file__).resolve().parents[2] / "data" / "text"
PATTERNS = {"basic": None, "gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN, "o200k": O200K_SPLIT_PATTERN}
NO_SPLIT = r"[\s\S]+"  # tiktoken's stand-in for "no split pattern": the whole text is one piece
CJK = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起"  # common Hanzi


def documents(name: str) -> list[str]:
    return (TEXT_DIR / name).read_text(encoding="utf-8").split("\n\n")


def synthetic_documents() -> list[str]:
    """Text with long runs, so that merges for "aaaa...", digit strings and CJK runs exist."""
    rng = random.Random(0)
    return [
        "a" * 600,
        "".join(rng.choices("ab", k=3000)),
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=3000)),
        "".join(rng.choices("0123456789", k=3000)),
        "".join(rng.choices(CJK, k=2000)),
    ]


@pytest.fixture(scope="module")
def trained() -> dict[str, object]:
    """A 1024-token tokenizer per pattern, trained on the multilingual sample plus long runs."""
    docs = documents("mix-sample.txt") + synthetic_documents()
    toks = {}
    for name, pattern in PATTERNS.items():
        tok = BasicTokenizer() if pattern is None else RegexTokenizer(pattern)
        tok.train(docs, 1024, progress=False)
        toks[name] = tok
    return toks


def tiktoken_for(tok) -> tiktoken.Encoding:
    return tiktoken.Encoding(
        "hf_bbpe-test",
        pat_str=tok.pattern or NO_SPLIT,
        mergeable_ranks=tok.mergeable_ranks(),
        special_tokens=dict(tok.special_tokens),
    )


surrogate_free_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


# ------------------------------------------------------------- naive reference encoder


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=surrogate_free_text | st.text(st.sampled_from("ab a\n1234日本é'sll"), max_size=300),
    name=st.sampled_from(sorted(PATTERNS)),
)
def test_encoder_equals_naive_reference(trained, text, name):
    tok = trained[name]
    assert tok.encode_ordinary(text) == naive_encode(text, tok.merges, tok.pattern)


# chunks with no split point longer than 64 bytes: the heap path (above 64 bytes in Python, 128 in C)
long_chunks = st.one_of(
    st.builds(lambda ch, n: ch * n, st.sampled_from("ab日"), st.integers(65, 700)),
    st.text(st.sampled_from("ab"), min_size=65, max_size=700),
    st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=65, max_size=700),
    st.text(st.sampled_from("0123456789"), min_size=65, max_size=700),
    st.text(st.sampled_from(CJK), min_size=22, max_size=300),
    # runs glued to random letters: the same pair both inside a run and at its edges
    st.lists(st.builds(lambda ch, n: ch * n, st.sampled_from("abc"), st.integers(1, 40)), min_size=3, max_size=40).map(
        "".join
    ),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=long_chunks, name=st.sampled_from(["basic", "gpt2", "gpt4"]))
def test_long_chunks_equal_naive_reference(trained, text, name):
    tok = trained[name]
    assert tok.encode_ordinary(text) == naive_encode(text, tok.merges, tok.pattern)


@st.composite
def merge_tables(draw):
    """Any valid merge table over a few byte tokens, with byte ids permuted or not."""
    byte_ids = list(range(256))
    if draw(st.booleans()):
        draw(st.randoms(use_true_random=False)).shuffle(byte_ids)
    known = [byte_ids[b] for b in b"abc"]
    merges = {}
    next_id = 256
    for _ in range(draw(st.integers(0, 25))):
        pair = (draw(st.sampled_from(known)), draw(st.sampled_from(known)))
        if pair not in merges:
            merges[pair] = next_id
            known.append(next_id)
            next_id += 1
    return merges, byte_ids


@settings(max_examples=300, deadline=None)
@given(table=merge_tables(), text=st.text(st.sampled_from("abc"), max_size=300), split=st.booleans())
def test_any_merge_table_equals_naive_reference(table, text, split):
    """Not only trained tables: the lowest merge id wins even where BPE training could not lead."""
    merges, byte_ids = table
    pattern = r"a+|[^a]+" if split else None
    tok = Tokenizer.from_merges(merges, pattern=pattern, byte_ids=byte_ids)
    assert tok.encode_ordinary(text) == naive_encode(text, merges, pattern, byte_ids)


def test_native_kernel_is_built():
    """Otherwise every encoder test below would only test the pure-Python fallback."""
    assert chunk_encoder._native is not None


@pytest.mark.parametrize("native", [True, False], ids=["C", "python"])
@settings(max_examples=200, deadline=None)
@given(table=merge_tables(), text=st.text(st.sampled_from("abc"), max_size=300))
def test_both_chunk_encoders_equal_naive_reference(native, table, text):
    merges, byte_ids = table
    encoder = ChunkEncoder(merges, byte_ids, native=native)
    data = text.encode("utf-8")
    expected = naive_encode_chunk(data, merges, byte_ids)
    assert encoder.encode_bytes(data) == expected
    assert encoder.encode_chunks([text, text]) == expected + expected  # cold, then cached


@pytest.mark.parametrize("native", [True, False], ids=["C", "python"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=long_chunks)
def test_both_chunk_encoders_on_long_chunks(trained, native, text):
    tok = trained["basic"]
    encoder = ChunkEncoder(tok.merges, tok.byte_ids, native=native)
    assert encoder.encode_bytes(text.encode("utf-8")) == naive_encode_chunk(text.encode("utf-8"), tok.merges)


@st.composite
def byte_merge_tables(draw):
    """A merge table over a few arbitrary byte values (any of 0..255), byte ids permuted or not,
    and the bytes each token spells (to build chunks that many merges apply to)."""
    alphabet = draw(st.lists(st.integers(0, 255), min_size=1, max_size=4, unique=True))
    byte_ids = list(range(256))
    if draw(st.booleans()):
        draw(st.randoms(use_true_random=False)).shuffle(byte_ids)
    spelling = {byte_ids[b]: bytes([b]) for b in alphabet}
    merges = {}
    for _ in range(draw(st.integers(0, 40))):
        pair = (draw(st.sampled_from(sorted(spelling))), draw(st.sampled_from(sorted(spelling))))
        if pair not in merges:
            merges[pair] = 256 + len(merges)
            spelling[merges[pair]] = spelling[pair[0]] + spelling[pair[1]]
    return merges, byte_ids, spelling


@settings(max_examples=200, deadline=None)
@given(table=byte_merge_tables(), data=st.data())
def test_c_chunk_encoder_equals_python_twin(table, data):
    """The kernel against its twin directly, on bytes that need not be UTF-8, short and long (the
    heap path), glued from the spellings of random tokens, through encode_bytes and the cached
    encode_chunks."""
    merges, byte_ids, spelling = table
    pieces = st.sampled_from(sorted(spelling.values()))
    chunk = b"".join(data.draw(st.lists(pieces, max_size=200) | st.lists(pieces, min_size=30, max_size=400)))
    c, python = ChunkEncoder(merges, byte_ids, native=True), ChunkEncoder(merges, byte_ids, native=False)
    assert c.encode_bytes(chunk) == python.encode_bytes(chunk)
    characters = st.sampled_from([piece.decode("latin-1") for piece in spelling.values()] + ["日"])
    texts = data.draw(st.lists(st.lists(characters, max_size=100).map("".join), max_size=6))
    assert c.encode_chunks(texts + texts) == python.encode_chunks(texts + texts)


@settings(max_examples=100, deadline=None)
@given(table=byte_merge_tables(), data=st.data())
def test_c_kernel_with_ids_too_wide_to_pack_equals_python_twin(table, data):
    """The kernel's pair table packs (left, right, merged) in one word while every id is below
    2**21 - 1; ids from there on (given to the kernel directly: the encoder renumbers sparse ids)
    take two words a slot, and must give the same ids, short chunks and long (the heap path)."""
    merges, byte_ids, spelling = table
    shift = (1 << 21) - 160  # byte ids on both sides of the limit; merged ids above it
    pieces = st.sampled_from(sorted(spelling.values()))
    chunk = b"".join(data.draw(st.lists(pieces, max_size=60) | st.lists(pieces, min_size=60, max_size=300)))
    kernel = chunk_encoder._native.ChunkBPE({(a + shift, b + shift): m + shift for (a, b), m in merges.items()},
                                            [b + shift for b in byte_ids])
    python = ChunkEncoder(merges, byte_ids, native=False)
    assert kernel.encode_bytes(chunk) == [idx + shift for idx in python.encode_bytes(chunk)]


def test_merge_ids_out_of_order_are_refused():
    """Merge ids are the encoder's priorities, so a table whose ids do not increase in merge order
    (here 256 is made from 300, a later id) would encode differently on short and long chunks:
    it is refused, naming the merge, by from_merges and by the merges setter."""
    merges = {(97, 97): 300, (300, 97): 256}
    with pytest.raises(ValueError, match=r"\(300, 97\) -> 256"):
        Tokenizer.from_merges(merges)
    tok = BasicTokenizer()
    with pytest.raises(ValueError, match=r"\(300, 97\) -> 256"):
        tok.merges = merges
    assert tok.merges == {}


# ------------------------------------------------------------------------- round trip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=surrogate_free_text, name=st.sampled_from(sorted(PATTERNS)))
def test_round_trip(trained, text, name):
    tok = trained[name]
    ids = tok.encode_ordinary(text)
    assert tok.decode(ids) == text
    assert tok.decode_bytes(ids) == text.encode("utf-8")
    assert tok.encode(text, disallowed_special=()) == ids


# ------------------------------------------------------------------ 1 MB, no split point


def one_megabyte(kind: str) -> str:
    rng = random.Random(kind)
    size = 1 << 20
    if kind == "one letter":
        return "a" * size
    if kind == "random letters":
        return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=size))
    if kind == "digits":
        return "".join(rng.choices("0123456789", k=size))
    return "".join(rng.choices(CJK, k=size // 3))  # CJK: 3 bytes a character


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, name",
    # gpt4 keeps a letter or CJK run in one chunk; it cuts digits in threes, gpt2 does not
    [("one letter", "gpt4"), ("random letters", "gpt4"), ("digits", "gpt2"), ("CJK", "gpt4"), ("one letter", "basic")],
)
def test_one_megabyte_without_split_point(trained, kind, name):
    tok = trained[name]
    text = one_megabyte(kind)
    ids = tok.encode_ordinary(text)
    assert tok.decode(ids) == text
    assert ids == tiktoken_for(tok).encode_ordinary(text)


# ---------------------------------------------------------------- tiktoken, whole text


@pytest.mark.parametrize("name", ["gpt2", "gpt4", "o200k"])
@pytest.mark.parametrize("text_file", ["mix-sample.txt", "taylorswift.txt"])
def test_ids_equal_tiktoken_on_real_text(trained, name, text_file):
    tok = trained[name]
    text = (TEXT_DIR / text_file).read_text(encoding="utf-8")
    assert tok.encode_ordinary(text) == tiktoken_for(tok).encode_ordinary(text)


@pytest.mark.parametrize("vocab_size", [4096])
def test_ids_equal_tiktoken_for_a_larger_vocabulary(vocab_size):
    docs = documents("mix-sample.txt")
    tok = RegexTokenizer("gpt4")
    tok.train(docs, vocab_size, progress=False)
    text = "\n\n".join(docs)
    assert tok.encode_ordinary(text) == tiktoken_for(tok).encode_ordinary(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=surrogate_free_text, name=st.sampled_from(["gpt2", "gpt4", "o200k"]))
def test_ids_equal_tiktoken_on_any_text(trained, text, name):
    """Also checks that the regex module splits like tiktoken's fancy-regex on odd characters."""
    tok = trained[name]
    assert tok.encode_ordinary(text) == tiktoken_for(tok).encode_ordinary(text)


# ------------------------------------------------------------------------------ cache


def test_cache_follows_the_merge_table(trained):
    tok = trained["gpt4"]
    tok = Tokenizer.from_merges(tok.merges, pattern=tok.pattern)
    text = "\n\n".join(documents("mix-sample.txt")[:50]) + " " + "x" * 300
    cold = tok.encode_ordinary(text)
    assert tok.encode_ordinary(text) == cold  # warm
    assert cold == naive_encode(text, tok.merges, tok.pattern)
    fewer = dict(list(tok.merges.items())[:100])
    tok.merges = fewer  # the cache must not serve ids of the old merges
    assert tok.encode_ordinary(text) == naive_encode(text, fewer, tok.pattern)


def test_pickled_tokenizer_encodes_the_same(trained):
    """datasets.map and spawn-based pools pickle the tokenizer."""
    import pickle

    tok = trained["gpt4"]
    text = "\n\n".join(documents("mix-sample.txt")[:100])
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.encode_ordinary(text) == tok.encode_ordinary(text)
    assert copy.merges == tok.merges and copy.pattern == tok.pattern


# ----------------------------------------------------------------------- encode_batch


def test_encode_batch_in_parallel_keeps_order(trained):
    tok = trained["gpt4"]
    docs = documents("mix-sample.txt")
    texts = []
    while sum(map(len, texts)) <= 2 * batch_encoding._PARALLEL_MIN_CHARS:  # the parallel path
        texts += docs[len(texts) % 7 :: 3] + [""]
    assert len(texts) > 2
    assert tok.encode_batch(texts, num_workers=2) == [tok.encode(t) for t in texts]


def test_encode_batch_passes_special_token_options():
    tok = RegexTokenizer()
    tok.train(documents("mix-sample.txt"), 400, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 400})
    docs = documents("mix-sample.txt")
    texts = [d + "<|endoftext|>" for d in docs] * (batch_encoding._PARALLEL_MIN_CHARS // sum(map(len, docs)) + 1)
    expected = [tok.encode(t, allowed_special="all") for t in texts]
    assert all(ids[-1] == 400 for ids in expected)
    assert tok.encode_batch(texts, num_workers=2, allowed_special="all") == expected
    with pytest.raises(ValueError, match="<\\|endoftext\\|>"):
        tok.encode_batch(texts, num_workers=2)
    small = texts[:3]
    assert tok.encode_batch(small, num_workers=2, allowed_special="all") == expected[:3]


def _encode_batch_in_worker(job):
    tok, texts = job
    return tok.encode_batch(texts, num_workers=2)


def test_encode_batch_inside_a_pool_worker(trained):
    import multiprocessing

    tok = trained["gpt4"]
    texts = ["hello world " * 1000] * (batch_encoding._PARALLEL_MIN_CHARS // 12000 + 2)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        result = pool.apply(_encode_batch_in_worker, ((tok, texts),))
    assert result == [tok.encode(t) for t in texts]


def test_merges_setter_validates_like_from_merges():
    tok = BasicTokenizer()
    with pytest.raises(ValueError, match="1000"):
        tok.merges = {(97, 1000): 256}
    with pytest.raises(ValueError, match="97"):
        tok.merges = {(97, 98): 97}
