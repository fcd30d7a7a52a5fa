"""``BBPETokenizer.decode``, ``batch_decode``, ``convert_tokens_to_string`` and ``decode_stream``
against transformers' fast class (``PreTrainedTokenizerFast``) loading the same saved folder: real
multilingual text with special tokens, tokens added after loading (special and not), ids that cut
characters, ``skip_special_tokens`` and ``clean_up_tokenization_spaces`` both ways. Runs on 5.x
and 4.57 (the fast class cleans up on 4.57 and not on 5.x, for a BPE model: so do we).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.hf import EOT, mix_docs, run_python, trained_engine
from transformers import PreTrainedTokenizerFast

from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat

SPECIAL = ["<|im_start|>", "<|im_end|>"]
ADDED = ["<tool>", " naïve café", "日本語だ"]  # not special; the last two are not ASCII


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[BBPETokenizer, PreTrainedTokenizerFast]:
    """Ours (tokens added after building it) and the fast class on the folder ours saved."""
    tok = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, pad_token="<|pad|>")
    tok.add_special_tokens({"additional_special_tokens": SPECIAL})
    tok.add_tokens(ADDED)
    folder = tmp_path_factory.mktemp("decode") / "tok"
    tok.save_pretrained(folder)
    return tok, PreTrainedTokenizerFast.from_pretrained(folder)


def sequences(tok: BBPETokenizer) -> list[list[int]]:
    """Ids of real documents with special and added tokens between them, and ids that cut characters."""
    docs = mix_docs()
    texts = [f"{SPECIAL[0]}{docs[i]}{ADDED[i % 3]} , I do n't know .{EOT}{docs[i + 1]}<|pad|>{SPECIAL[1]}"
             for i in range(0, 24, 2)]
    out = [tok(text, add_special_tokens=False)["input_ids"] for text in texts]
    cjk = next(doc for doc in docs if any("\u4e00" <= ch <= "\u9fff" for ch in doc))
    ids = tok(cjk, add_special_tokens=False)["input_ids"]
    out += [ids[1:], ids[:-1], ids[::2], [len(tok) - 1, *ids[3:9], tok.convert_tokens_to_ids(ADDED[2])], []]
    return out


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("clean_up", [False, True, None])
def test_decode_and_batch_decode_equal_the_fast_class(pair, skip, clean_up):
    ours, fast = pair
    batch = sequences(ours)
    options = {"skip_special_tokens": skip, "clean_up_tokenization_spaces": clean_up}
    want = [fast.decode(ids, **options) for ids in batch]
    assert [ours.decode(ids, **options) for ids in batch] == want
    assert ours.batch_decode(batch, **options) == fast.batch_decode(batch, **options) == want
    assert [ours.decode(np.array(ids, dtype=np.uint32), **options) for ids in batch] == want
    assert any(EOT in text for text in want) != skip  # the texts hold what the options are about
    assert any(" n't" in text for text in ours.batch_decode(batch, clean_up_tokenization_spaces=False))


def test_the_default_clean_up_and_the_flag_of_5x(pair):
    ours, fast = pair
    ids = ours("Hello , world . I do n't", add_special_tokens=False)["input_ids"]
    for tok in (ours, fast):
        tok.clean_up_tokenization_spaces = True
    try:
        assert ours.decode(ids) == fast.decode(ids)
        assert ours.batch_decode([ids, ids]) == fast.batch_decode([ids, ids])
        if hasattr(fast, "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"):  # 5.x
            assert ours.decode(ids) == "Hello , world . I do n't"
            for tok in (ours, fast):
                tok.clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output = True
            assert ours.decode(ids) == fast.decode(ids) == "Hello, world. I don't"
        else:
            assert ours.decode(ids) == "Hello, world. I don't"
    finally:
        for tok in (ours, fast):
            tok.clean_up_tokenization_spaces = False
            if hasattr(tok, "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"):
                tok.clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output = False


def test_decode_of_a_batch_as_transformers_takes_it(pair):
    ours, fast = pair
    batch = sequences(ours)[:4]
    try:
        want = fast.decode(batch, skip_special_tokens=True)
    except (TypeError, ValueError):  # 4.57: decode takes one sequence
        with pytest.raises((TypeError, ValueError)):
            ours.decode(batch)
        return
    assert ours.decode(batch, skip_special_tokens=True) == want
    assert ours.batch_decode(np.array([ids[:20] for ids in batch])) == fast.batch_decode([ids[:20] for ids in batch])
    assert ours.batch_decode([]) == fast.batch_decode([]) == []


def test_convert_tokens_to_string_equals_the_fast_class(pair):
    ours, fast = pair
    for ids in sequences(ours)[:6]:
        tokens = ours.convert_ids_to_tokens(ids)
        assert tokens == fast.convert_ids_to_tokens(ids)
        assert ours.convert_tokens_to_string(tokens) == fast.convert_tokens_to_string(tokens)
        plain = [token for token in tokens if token not in ours.get_added_vocab()]
        assert ours.convert_tokens_to_string(plain) == fast.convert_tokens_to_string(plain)


def test_added_token_ids_that_are_no_token_are_an_error(pair):
    ours, _ = pair
    with pytest.raises(ValueError, match=f"unknown token id {len(ours) + 5}"):
        ours.decode([65, len(ours) + 5])
    with pytest.raises(ValueError, match="unknown token id -1"):
        ours.batch_decode([[65], [66, -1]])


@settings(max_examples=60, deadline=None)
@given(data=st.data(), skip=st.booleans())
def test_the_streams_steps_joined_equal_decode(pair, data, skip):
    ours, _ = pair
    batch = sequences(ours)
    ids = data.draw(st.sampled_from(batch))
    ids = ids[: data.draw(st.integers(0, 60))]
    prefill_len = data.draw(st.integers(0, len(ids)))
    cuts = sorted(data.draw(st.lists(st.integers(prefill_len, len(ids)), max_size=8)))
    stream = ours.decode_stream(skip_special_tokens=skip, prefill=ids[:prefill_len] or None)
    parts, start = [], prefill_len
    for end in [*cuts, len(ids)]:
        step = ids[start:end]
        text = stream.step(step[0] if len(step) == 1 else step)
        assert text is None or text
        parts.append(text or "")
        start = end
    parts.append(stream.flush() or "")
    whole, joined = ours.decode(ids, skip_special_tokens=skip), "".join(parts)
    prompt = ours.decode(ids[:prefill_len], skip_special_tokens=skip)
    assert whole.endswith(joined)
    head = whole[: len(whole) - len(joined)]  # the prompt's text; a character it cuts is the steps'
    assert head == prompt or (prompt.endswith("\ufffd") and head == prompt[:-1])


def test_remote_code_decodes_alike_with_the_python_twin(pair, tmp_path):
    """A remote-code folder carries no compiled code: its BBPETokenizer decodes with the twin of
    the C decoder (added tokens included), giving the same texts, batches and streams."""
    ours, _ = pair
    ours.save_pretrained(tmp_path / "folder", remote_code=True)
    batch = sequences(ours)
    out = run_python(
        f"""
        import importlib, json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        module = importlib.import_module("folder.tokenization_bbpe")
        tok = module.BBPETokenizer.from_pretrained({str(tmp_path / "folder")!r})
        batch = {batch!r}
        stream = tok.decode_stream(skip_special_tokens=True, prefill=batch[0][:5])
        steps = [stream.step(idx) for idx in batch[0][5:]] + [stream.flush()]
        print(json.dumps([type(tok._decoder().kernel).__name__,
                          [tok.decode(ids) for ids in batch], tok.batch_decode(batch, skip_special_tokens=True),
                          "".join(step or "" for step in steps)]))
        """,
        tmp_path, block_hf_bbpe=True)
    kernel, texts, skipped, streamed = json.loads(out.splitlines()[-1])
    assert kernel == "ReferenceDecoder"
    assert texts == [ours.decode(ids) for ids in batch]
    assert skipped == ours.batch_decode(batch, skip_special_tokens=True)
    prompt = ours.decode(batch[0][:5], skip_special_tokens=True)
    assert prompt + streamed == ours.decode(batch[0], skip_special_tokens=True)
