"""Decoding (engine/encoding/decoding.py): the C decoder held to its Python twin
(decoding_reference.py) on every id, every errors mode, invalid UTF-8 at every cut, special and
reserved tokens and bad ids; both held to tiktoken on real multilingual text."""

from __future__ import annotations

import array
import codecs
import pickle
from pathlib import Path

import numpy as np
import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.families import mix_documents, tiktoken_pattern

from hf_bbpe import Tokenizer
from hf_bbpe.engine.encoding import decoding
from hf_bbpe.engine.encoding.decoding import Decoding
from hf_bbpe.engine.encoding.token_ids import TokenIdTypeError

SPECIALS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|reserved_special_token_7|>": 100300}
ERRORS = ["strict", "replace", "ignore", "backslashreplace", "surrogateescape"]


@pytest.fixture(scope="module")
def cl100k_ranks() -> dict[bytes, int]:
    import tiktoken_ext
    from tiktoken.load import load_tiktoken_bpe

    return load_tiktoken_bpe(str(Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"))


@pytest.fixture(scope="module")
def cl100k(cl100k_ranks) -> Tokenizer:
    return Tokenizer.from_ranks(cl100k_ranks, pattern="gpt4", special_tokens=SPECIALS)


@pytest.fixture(scope="module")
def reference(cl100k_ranks) -> tiktoken.Encoding:
    return tiktoken.Encoding("cl100k", pat_str=tiktoken_pattern("cl100k_base"), mergeable_ranks=cl100k_ranks,
                             special_tokens=SPECIALS)


@pytest.fixture(scope="module")
def twin(cl100k):
    """The Python twin of cl100k's decoder (what a remote-code folder decodes with)."""
    return Decoding(cl100k.vocab, list(SPECIALS.values()), cl100k.n_vocab, native=False)


@pytest.fixture(scope="module")
def docs(cl100k) -> list[list[int]]:
    return [cl100k.encode(doc, allowed_special="all") for doc in mix_documents()]


def test_the_c_decoder_runs(cl100k):
    assert decoding._native is not None and cl100k._decoding().kernel.native


def test_decode_equals_tiktoken_on_multilingual_text(cl100k, reference, docs):
    for ids in docs:
        assert cl100k.decode(ids) == reference.decode(ids)
        assert cl100k.decode_bytes(ids) == reference.decode_bytes(ids)
    every = [i for ids in docs for i in ids]
    assert cl100k.decode(every) == reference.decode(every)
    assert cl100k.decode(np.array(every, dtype=np.uint32)) == reference.decode(every)


def test_decode_with_offsets_equals_tiktoken(cl100k, twin, reference, docs):
    for ids in docs:
        expected = reference.decode_with_offsets(ids)
        assert cl100k.decode_with_offsets(ids) == expected
        assert twin.kernel.decode_with_offsets(ids) == expected
    cut = docs[5] + [100257] + docs[7]
    assert cl100k.decode_with_offsets(np.array(cut)) == reference.decode_with_offsets(cut)
    # a token that starts inside a multibyte character: the offset of that character
    ids = cl100k.encode("日本語 😀")
    assert cl100k.decode_with_offsets(ids) == reference.decode_with_offsets(ids)
    with pytest.raises(UnicodeDecodeError):
        cl100k.decode_with_offsets(cl100k.encode("😀")[:1])


def id_containers(ids: list[int]) -> dict:
    out = {"list": ids, "tuple": tuple(ids), "range-free iterator": iter(ids), "array q": array.array("q", ids),
           "array L": array.array("L", ids), "memoryview": memoryview(array.array("i", ids)),
           "numpy ints in a list": [np.int64(i) for i in ids], "strided": np.repeat(np.array(ids), 2)[::2]}
    for dtype in (np.int32, np.uint32, np.int64, np.uint64, np.intp):
        out[f"numpy {np.dtype(dtype).name}"] = np.array(ids, dtype=dtype)
    try:
        import torch
    except ImportError:  # an optional extra
        return out
    out["torch int64"] = torch.tensor(ids)
    out["torch int32"] = torch.tensor(ids, dtype=torch.int32)
    return out


def test_every_container_of_ids(cl100k, docs):
    ids = docs[3] + [100257] + docs[4]
    text = cl100k.decode(ids)
    for name, held in id_containers(ids).items():
        assert cl100k.decode(held) == text, name
        assert cl100k.decode_bytes(id_containers(ids)[name]) == text.encode("utf-8"), name
        assert cl100k.decode_batch([id_containers(ids)[name], id_containers(ids)[name]]) == [text, text], name
    small = [65, 66, 67]
    for dtype in (np.int8, np.uint8, np.int16, np.uint16):
        assert cl100k.decode(np.array(small, dtype=dtype)) == "bcd"


def test_non_integers_keep_their_type_error(cl100k):
    for bad in ([65.5], np.array([65.5]), ["65"], [[65, 66]], array.array("d", [1.0])):
        with pytest.raises(TokenIdTypeError, match="integers"):
            cl100k.decode(bad)
    assert cl100k.decode(np.array([True, False])) == cl100k.decode([1, 0])


token_ids = st.one_of(st.integers(0, 300), st.integers(100000, 100300), st.sampled_from(list(SPECIALS.values())))


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(token_ids, max_size=40), errors=st.sampled_from(ERRORS), skip=st.booleans(),
       skip_ids=st.one_of(st.none(), st.frozensets(st.integers(0, 300), max_size=5)))
def test_c_equals_the_twin(cl100k, twin, ids, errors, skip, skip_ids):
    """Single bytes 0..255 (ids 0..255 in cl100k are not in byte order, so both halves of every
    byte class), longer tokens, special and reserved tokens and holes (100261..100299 are no token)."""
    c = cl100k._decoding()
    skip_c, skip_twin = c.skip(skip, skip_ids), twin.skip(skip, skip_ids)

    def run(decoder, mask, call):
        try:
            return call(decoder, mask)
        except (ValueError, UnicodeDecodeError) as exc:
            return type(exc), str(exc)

    calls = [lambda d, m: d.decode_bytes(ids, m), lambda d, m: d.decode(ids, errors, m),
             lambda d, m: d.decode_batch([ids, ids[::-1]], errors, m, 2),
             lambda d, m: d.decode_bytes_batch([ids[::-1], ids], m, 2), lambda d, m: d.decode_with_offsets(ids)]
    for call in calls:
        assert run(c.kernel, skip_c, call) == run(twin.kernel, skip_twin, call)


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 300), min_size=1, max_size=30), data=st.data())
def test_bad_ids_are_named_with_their_position(cl100k, twin, ids, data):
    position = data.draw(st.integers(0, len(ids)))
    bad = data.draw(st.sampled_from([-1, -(2**40), 100261, 100299, 2**32, 2**31, 2**70, 10**6]))
    ids = ids[:position] + [bad] + ids[position:]
    message = f"unknown token id {bad} at position {position} (n_vocab=100301)"
    for kernel in (cl100k._decoding().kernel, twin.kernel):
        with pytest.raises(ValueError) as caught:
            kernel.decode(ids, "replace", None)
        assert str(caught.value) == message
        if -(2**63) <= bad < 2**63:
            with pytest.raises(ValueError) as caught:
                kernel.decode(np.array(ids, dtype=np.int64), "replace", None)
            assert str(caught.value) == message
        with pytest.raises(ValueError) as caught:
            kernel.decode_batch([[1, 2], ids], "replace", None, 2)
        assert str(caught.value) == message.replace(f"{position} (", f"{position} of sequence 1 (")


def test_skip_special_tokens_and_other_ids(cl100k, docs):
    ids = [100257, *docs[0], 100300, 100258, *docs[1], 100257]
    plain = docs[0] + docs[1]
    assert cl100k.decode(ids, skip_special_tokens=True) == cl100k.decode(plain)
    assert cl100k.decode(ids, skip_ids=frozenset(SPECIALS.values())) == cl100k.decode(plain)
    assert cl100k.decode(ids, skip_ids={100257}) == cl100k.decode([100300, 100258]).join(
        [cl100k.decode(docs[0]), cl100k.decode(docs[1])])
    assert cl100k.decode_bytes(ids, skip_special_tokens=True, skip_ids=[docs[0][0]]) == cl100k.decode_bytes(plain[1:])
    with pytest.raises(ValueError, match="unknown token id 100290 at position 1 "):
        cl100k.decode([100257, 100290], skip_ids={100290}, skip_special_tokens=True)


def test_decode_batch_on_threads(cl100k, reference, docs):
    many = docs * 20
    expected = [reference.decode(ids) for ids in many]
    for threads in (1, 2, 4):
        assert cl100k.decode_batch(many, num_threads=threads) == expected
        assert cl100k.decode_bytes_batch(many, num_threads=threads) == [reference.decode_bytes(i) for i in many]
    assert cl100k.decode_batch([]) == []
    assert cl100k.decode_batch([[], docs[0]]) == ["", expected[0]]
    arrays = [np.array(ids, dtype=np.uint32) for ids in many]
    assert cl100k.decode_batch(arrays, num_threads=2) == expected


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(token_ids, max_size=30), data=st.data(), errors=st.sampled_from(ERRORS[1:]),
       skip=st.booleans())
def test_stream_steps_join_to_decode_at_every_cut(cl100k, twin, ids, data, errors, skip):
    ids = [i for i in ids if i in cl100k.vocab]
    prefill_end = data.draw(st.integers(0, len(ids)))
    cuts = sorted(data.draw(st.lists(st.integers(prefill_end, len(ids)), max_size=6)))
    pieces = [ids[a:b] for a, b in zip([prefill_end, *cuts], [*cuts, len(ids)]) if b > a]
    outputs = []
    for kernel, mask in ((cl100k._decoding().kernel, cl100k._decoding().skip(skip, None)),
                         (twin.kernel, twin.skip(skip, None))):
        stream = kernel.stream(mask, errors, ids[:prefill_end])
        steps = [stream.step(piece if len(piece) > 1 else piece[0]) for piece in pieces]
        steps.append(stream.flush())
        assert all(step is None or step for step in steps)  # None, never ""
        outputs.append(steps)
        # the prompt's text, as far as it is whole, is not returned; the rest is
        head = codecs.utf_8_decode(kernel.decode_bytes(ids[:prefill_end], mask), errors, False)[0]
        assert head + "".join(step or "" for step in steps) == kernel.decode(ids, errors, mask)
    assert outputs[0] == outputs[1]


@pytest.fixture(scope="module")
def gpt2_pair():
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers

    from conversion.gpt2_files import from_gpt2_files

    data = Path(__file__).resolve().parents[2] / "data" / "gpt2"
    theirs = HFTokenizer(models.BPE.from_file(str(data / "encoder.json"), str(data / "vocab.bpe")))
    theirs.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    theirs.decoder = decoders.ByteLevel()
    theirs.add_special_tokens(["<|endoftext|>"])
    ours = from_gpt2_files(data / "encoder.json", data / "vocab.bpe", special_tokens={"<|endoftext|>": 50256})
    return ours, theirs


def test_stream_behaves_like_tokenizers_decode_stream(gpt2_pair):
    from tokenizers.decoders import DecodeStream

    ours, theirs = gpt2_pair
    texts = ["Hello, streaming world!", "héllo 日本 😀 x", "a<|endoftext|>b 🤗🤗 ü", *mix_documents()[:12]]
    for text in texts:
        ids = theirs.encode(text).ids
        assert ours.encode(text, allowed_special="all") == ids
        for skip in (False, True):
            stream, reference = ours.decode_stream(skip_special_tokens=skip), DecodeStream(skip_special_tokens=skip)
            assert [stream.step(i) for i in ids] == [reference.step(theirs, i) for i in ids], text
            assert stream.flush() is None
            for prefill in (ids[:1], ids[: len(ids) // 2]):  # a prompt that ends on a whole character
                if theirs.decode(prefill).endswith("\ufffd"):
                    continue
                stream = ours.decode_stream(skip, prefill=prefill)
                reference = DecodeStream(ids=prefill, skip_special_tokens=skip)
                rest = ids[len(prefill):]
                assert [stream.step(i) for i in rest] == [reference.step(theirs, i) for i in rest], text
            # several ids at once, as DecodeStream takes a list
            stream, reference = ours.decode_stream(skip), DecodeStream(skip_special_tokens=skip)
            pairs = [ids[k : k + 2] for k in range(0, len(ids), 2)]
            assert [stream.step(p) for p in pairs] == [reference.step(theirs, p) for p in pairs]


def test_stream_holds_a_partial_character_and_flushes_it(cl100k):
    ids = cl100k.encode("😀")
    assert len(ids) > 1
    stream = cl100k.decode_stream()
    assert [stream.step(i) for i in ids] == [None] * (len(ids) - 1) + ["😀"]
    stream = cl100k.decode_stream(prefill=ids[:1])
    assert stream.step(ids[1:]) == "😀"
    stream = cl100k.decode_stream()
    assert stream.step(ids[0]) is None and stream.flush() == "\ufffd" and stream.flush() is None
    strict = cl100k.decode_stream(errors="strict")
    assert strict.step(ids[0]) is None
    with pytest.raises(UnicodeDecodeError):
        strict.flush()
    with pytest.raises(ValueError, match="unknown token id 100290 at position 1 "):
        cl100k.decode_stream().step([5, 100290])


def test_the_table_follows_the_vocabulary(cl100k_ranks):
    tok = Tokenizer.from_ranks(cl100k_ranks, pattern="gpt4", special_tokens={"<|endoftext|>": 100257})
    assert tok.decode([100257]) == "<|endoftext|>"
    with pytest.raises(ValueError, match="unknown token id 100258"):
        tok.decode([100258])
    tok.register_special_tokens({"<|new|>": 100258})
    assert tok.decode([100258, 100257], skip_ids={100257}) == "<|new|>"
    assert tok.decode([100258], skip_special_tokens=True) == ""
    again = pickle.loads(pickle.dumps(tok))
    assert again.decode([100258, 9906]) == "<|new|>Hello"
    small = Tokenizer()
    small.train("hello hello world " * 50, 260)
    assert small.decode(small.encode("hello world")) == "hello world"
    assert small.decode([258]) == small.vocab[258].decode()
    small.train("abc abc abd " * 50, 259)
    assert small.decode([256]) == small.vocab[256].decode()


def test_large_special_ids(cl100k_ranks):
    """An id far above the others (allow_large_ids) is looked up apart from the dense table."""
    tok = Tokenizer.from_ranks(cl100k_ranks, pattern="gpt4", special_tokens={"<|endoftext|>": 100257})
    tok.register_special_tokens({"<|far|>": 2**32 - 1, "<|mid|>": 2**31 + 5}, allow_large_ids=True)
    ids = [9906, 2**32 - 1, 100257, 2**31 + 5]
    assert tok.decode(ids) == "Hello<|far|><|endoftext|><|mid|>"
    assert tok.decode(np.array(ids, dtype=np.uint32), skip_ids={2**31 + 5}) == "Hello<|far|><|endoftext|>"
    assert tok.decode(ids, skip_special_tokens=True) == "Hello"
    with pytest.raises(ValueError, match=f"unknown token id {2**32 - 2} at position 0 "):
        tok.decode([2**32 - 2])


def test_every_id_alone(cl100k, twin):
    ids = sorted(cl100k.vocab)
    expected = [cl100k.vocab[i] for i in ids]
    assert cl100k.decode_bytes_batch([[i] for i in ids], num_threads=2) == expected
    assert twin.kernel.decode_bytes_batch([[i] for i in ids[:3000]], None, 1) == expected[:3000]
    assert cl100k.decode_bytes(np.array(ids)) == b"".join(expected)
    assert cl100k.decode_batch([[i] for i in ids], errors="replace") == [t.decode("utf-8", "replace") for t in expected]


def test_long_tokens_outgrow_the_text_buffer(cl100k, twin):
    """A list's or an array's text is copied into a buffer of UTF-16 units guessed from its length
    (4 an id) and grown while it is read: lists and arrays of cl100k's longest tokens (up to 128
    bytes, some not ASCII) decode as the twin does, from a fresh decoder and from one whose kept
    buffer is smaller or larger."""
    longest = sorted(cl100k.vocab, key=lambda i: len(cl100k.vocab[i]))[-300:]
    fresh = Decoding(cl100k.vocab, list(SPECIALS.values()), cl100k.n_vocab).kernel
    for ids in (longest[:5], longest * 30, longest[::-1] * 3 + [1, 2], longest[:2] * 500, [201] + longest * 7):
        expected = twin.kernel.decode(ids, "replace", None)
        assert expected.encode("utf-8", "surrogatepass") != b"" and len(expected) > 4 * len(ids)
        for kernel in (fresh, cl100k._decoding().kernel):
            assert kernel.decode(ids, "replace", None) == expected
            assert kernel.decode(tuple(ids), "strict" if ids[0] != 201 else "replace", None) == expected
            assert kernel.decode(np.array(ids, dtype=np.uint32), "replace", None) == expected
            assert kernel.decode(np.repeat(np.array(ids, dtype=np.int64), 2)[::2], "replace", None) == expected  # (strided)


def _utf16_units(token: bytes) -> int | None:
    """How many UTF-16 units a token's text has, or None when it is not valid UTF-8 alone."""
    try:
        return len(token.decode("utf-8").encode("utf-16-le")) // 2
    except UnicodeDecodeError:
        return None


def test_tokens_either_side_of_the_text_entry(cl100k, twin):
    """decode() to a str copies a token's 16-byte text entry when it holds the token's text (up to
    14 ASCII characters, or up to 7 UTF-16 units) and decodes the bytes of the others in runs (a
    token cut inside a character, one with more units): lists mixing tokens either side of each
    limit, astral characters, and single-byte tokens that make a run longer than the 1 KB one kept
    on the stack, with skipped ids and in every errors mode, decode as the twin does."""
    vocab = cl100k.vocab
    by_units: dict[int | None, list[int]] = {}
    for i in sorted(vocab):
        by_units.setdefault(_utf16_units(vocab[i]), []).append(i)
    ascii_ = [i for i in sorted(vocab) if vocab[i].isascii() and 13 <= len(vocab[i]) <= 16][:40]
    wide = [i for n in (6, 7, 8, 9) for i in [j for j in by_units[n] if not vocab[j].isascii()][:15]]
    cut = [i for i in by_units[None] if len(vocab[i]) >= 4][:20] + by_units[None][:20]
    astral = cl100k.encode("😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🎉")
    assert {len(vocab[i]) for i in ascii_} == {13, 14, 15, 16} and {_utf16_units(vocab[i]) for i in wide} == {6, 7, 8, 9}
    byte_id = {vocab[i]: i for i in vocab if len(vocab[i]) == 1}
    run = [byte_id[bytes([b])] for b in ("日本語の文章、" * 30 + "éèàç" * 150).encode("utf-8")]  # 1,830 bytes, a token each
    valid = [x for group in zip(ascii_, wide, wide[::-1], ascii_[::-1]) for x in group] + astral + [100257, 32]
    valid += run + ascii_[:3] + astral
    ids = valid + cut + astral[::-1] + run[:-1]  # (cut inside characters, and ends inside one)
    c = cl100k._decoding()

    def decode(kernel, held, errors, mask):
        try:
            return kernel.decode(held, errors, mask)
        except UnicodeDecodeError as exc:
            return str(exc)

    for skip_ids in (None, frozenset(wide[::3] + cut[::4] + run[5:9])):
        mask, twin_mask = c.skip(True, skip_ids), twin.skip(True, skip_ids)
        for errors in ERRORS:
            expected = decode(twin.kernel, ids, errors, twin_mask)
            assert decode(c.kernel, ids, errors, mask) == expected
            assert decode(c.kernel, np.array(ids, dtype=np.int32), errors, mask) == expected
    for skip_ids in (None, frozenset(wide[::3] + ascii_[::5])):  # (valid text: the one-pass path makes it)
        mask, twin_mask = c.skip(True, skip_ids), twin.skip(True, skip_ids)
        assert c.kernel.decode(valid, "strict", mask) == twin.kernel.decode(valid, "strict", twin_mask)


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=60))
def test_text_of_every_kind_round_trips(cl100k, twin, text):
    """ASCII, Latin-1, BMP and astral text: each kind of str the C decoder writes itself."""
    ids = cl100k.encode(text, disallowed_special=())
    assert cl100k.decode(ids) == twin.kernel.decode(ids) == text
    assert cl100k.decode(np.array(ids, dtype=np.uint32)) == text
    half = ids[: len(ids) // 2]
    assert cl100k.decode_batch([ids, half], num_threads=2) == [text, twin.kernel.decode(half)]
    stream = cl100k.decode_stream()
    assert "".join(filter(None, [*map(stream.step, ids), stream.flush()])) == text


@pytest.mark.slow
def test_a_remote_code_folder_decodes_with_the_twin(tmp_path):
    """A saved folder carries no compiled code: its copy of decoding.py takes the twin, and
    decodes, batches and streams as the C decoder does."""
    import json

    from tests.support.hf import EOT, mix_docs, run_python, trained_engine

    from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

    engine = trained_engine()
    folder = tmp_path / "folder"
    BBPETokenizer.from_engine(engine, eos_token=EOT).save_pretrained(folder, remote_code=True)
    batch = [engine.encode(doc) + [engine.special_tokens[EOT]] for doc in mix_docs()[:20]]
    out = run_python(
        f"""
        import importlib, json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        hf = importlib.import_module("folder.tokenization_bbpe").BBPETokenizer.from_pretrained({str(folder)!r})
        engine = hf._engine
        decoder = engine._decoding().kernel
        stream = engine.decode_stream(skip_special_tokens=True)
        steps = [stream.step(i) for i in {batch[0]!r}]
        print(json.dumps([type(decoder).__module__, engine.decode_batch({batch!r}, num_threads=2),
                          engine.decode_with_offsets({batch[1]!r}), steps]))
        """,
        tmp_path, block_hf_bbpe=True)
    module, texts, offsets, steps = json.loads(out.splitlines()[-1])
    assert module == "folder.decoding_reference"
    assert texts == engine.decode_batch(batch) and offsets == list(engine.decode_with_offsets(batch[1]))
    stream = engine.decode_stream(skip_special_tokens=True)
    assert steps == [stream.step(i) for i in batch[0]]
