"""``BBPETokenizer(text, return_offsets_mapping=True)`` returns the fast twin's offsets, on
transformers 4.57 (whose slow tokenizers refuse offsets) and 5.x (which dropped them silently):
multilingual text, added and special tokens in the text, bos/eos added around sequences, pairs,
truncation, padding and tensors. Runs on 5.x and 4.57.
"""

from __future__ import annotations

import pytest
from tests.support.hf import EOT, mix_docs, trained_engine
from transformers import AddedToken, AutoTokenizer

from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat


@pytest.fixture(scope="module", params=["plain", "bos_eos"])
def pair(request, tmp_path_factory):
    """(BBPETokenizer, its fast twin loaded from the saved folder), without and with bos/eos."""
    extra = {"bos_token": "<|bos|>", "add_bos_token": True, "add_eos_token": True} if request.param == "bos_eos" else {}
    hf = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, pad_token="<|pad|>",
                                   additional_special_tokens=["<|im_start|>"], **extra)
    hf.add_tokens(["<x>", AddedToken("[L]", lstrip=True), AddedToken("[R]", rstrip=True)])
    folder = tmp_path_factory.mktemp("saved")
    hf.save_pretrained(folder)
    fast = AutoTokenizer.from_pretrained(folder)
    assert fast.is_fast
    return BBPETokenizer.from_pretrained(folder), fast


def docs() -> list[str]:
    return mix_docs() + [f"<|im_start|>user {EOT} a  [L]b[R]  c <x>日本語", "", " ", "日"]


def offsets_of(encoding) -> list:
    return [tuple(span) for span in encoding["offset_mapping"]]


def test_one_text_at_a_time(pair):
    hf, fast = pair
    for doc in docs():
        for add_special_tokens in (True, False):
            mine = hf(doc, return_offsets_mapping=True, add_special_tokens=add_special_tokens)
            theirs = fast(doc, return_offsets_mapping=True, add_special_tokens=add_special_tokens)
            assert mine["input_ids"] == theirs["input_ids"]
            assert offsets_of(mine) == offsets_of(theirs), doc[:60]
            assert list(mine) == list(theirs)


def test_batches_pairs_truncation_and_padding(pair):
    hf, fast = pair
    batch = docs()[:12] + docs()[-4:]
    requests = [
        ((batch,), {}),
        ((batch,), {"padding": True}),
        ((batch,), {"padding": "max_length", "truncation": True, "max_length": 24, "padding_side": "left"}),
        ((batch[:6], batch[6:12]), {"padding": True, "truncation": "longest_first", "max_length": 64}),
        ((batch[3], batch[4]), {"return_special_tokens_mask": True}),
        ((batch[3],), {"truncation": True, "max_length": 10}),
    ]
    for args, options in requests:
        mine = hf(*args, return_offsets_mapping=True, **options)
        theirs = fast(*args, return_offsets_mapping=True, **options)
        assert mine["input_ids"] == theirs["input_ids"], options
        assert mine["attention_mask"] == theirs["attention_mask"], options
        rows = mine["offset_mapping"] if isinstance(mine["offset_mapping"][0], list) else [mine["offset_mapping"]]
        fast_rows = theirs["offset_mapping"] if isinstance(theirs["offset_mapping"][0], list) else [theirs["offset_mapping"]]
        assert [[tuple(s) for s in row] for row in rows] == [[tuple(s) for s in row] for row in fast_rows], options


def test_tensors(pair):
    hf, fast = pair
    batch = docs()[:5]
    for tensors in ("np", "pt"):
        if tensors == "pt":
            pytest.importorskip("torch")
        mine = hf(batch, padding=True, return_offsets_mapping=True, return_tensors=tensors)
        theirs = fast(batch, padding=True, return_offsets_mapping=True, return_tensors=tensors)
        assert mine["offset_mapping"].shape == theirs["offset_mapping"].shape
        assert mine["offset_mapping"].tolist() == theirs["offset_mapping"].tolist()
    single = hf(batch[0], return_offsets_mapping=True, return_tensors="np")
    assert single["offset_mapping"].tolist() == fast(batch[0], return_offsets_mapping=True,
                                                       return_tensors="np")["offset_mapping"].tolist()


def test_split_special_tokens_offsets_follow_the_text(pair):
    hf, fast = pair
    text = f"say {EOT} twice {EOT}"
    mine = hf(text, return_offsets_mapping=True, split_special_tokens=True, add_special_tokens=False)
    assert mine["input_ids"] == hf.engine.encode_ordinary(text)
    assert offsets_of(mine)[-1][1] == len(text)


def test_what_has_no_offsets_is_refused(pair):
    hf, _ = pair
    with pytest.raises(ValueError, match="needs text"):
        hf.encode([1, 2, 3], return_offsets_mapping=True)
    with pytest.raises(NotImplementedError, match="is_split_into_words"):
        hf(["two", "words"], is_split_into_words=True, return_offsets_mapping=True)
