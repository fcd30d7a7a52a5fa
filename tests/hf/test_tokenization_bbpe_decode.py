"""``BBPETokenizer.decode`` refuses ids that are not integers (transformers would truncate
``65.9`` to ``65``) and takes ids as users hold them. Runs on 5.x and 4.57."""

from __future__ import annotations

import array

import numpy as np
import pytest
from tests.support.hf import EOT, mix_docs, trained_engine

from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat


@pytest.fixture(scope="module")
def hf():
    return BBPETokenizer.from_engine(trained_engine(), eos_token=EOT)


@pytest.mark.parametrize("bad", [[65.9], [65.0], 65.9, ["A"], np.array([65.5])])
def test_non_integer_ids_are_an_error_naming_them(hf, bad):
    shown = "65.5" if isinstance(bad, np.ndarray) else repr(bad[-1] if isinstance(bad, list) else bad)
    with pytest.raises(TypeError, match=f"integers, got {shown}"):
        hf.decode(bad)
    with pytest.raises(TypeError, match=f"integers, got {shown}"):
        hf.convert_ids_to_tokens(bad)
    with pytest.raises(TypeError, match=f"integers, got {shown}"):
        hf.batch_decode([[66], bad if isinstance(bad, (list, np.ndarray)) else [bad]])


def test_ids_as_users_hold_them(hf):
    doc = mix_docs()[5]
    ids = hf(doc)["input_ids"]
    assert hf.decode(ids) == doc
    for held in (tuple(ids), np.array(ids), np.array(ids, dtype=np.int32), array.array("q", ids)):
        assert hf.decode(held) == doc
    assert hf.decode(65) == hf.decode(np.int64(65)) == hf.decode(np.array(65)) == "A"
    assert hf.convert_ids_to_tokens(np.array(ids[:3])) == hf.convert_ids_to_tokens(ids[:3])
    assert hf.convert_ids_to_tokens(np.int64(65)) == "A"
    batch = hf(mix_docs()[:3], padding=False)["input_ids"]
    assert hf.batch_decode(batch) == mix_docs()[:3]
    torch = pytest.importorskip("torch")
    assert hf.decode(torch.tensor(ids)) == doc and hf.decode(torch.tensor(65)) == "A"
    padded = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, pad_token=EOT)
    tensors = padded(mix_docs()[:3], padding=True, return_tensors="pt")["input_ids"]
    assert [text.replace(EOT, "") for text in padded.batch_decode(tensors)] == mix_docs()[:3]
