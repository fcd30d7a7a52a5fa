"""decode takes ids as users hold them, and refuses ids that are not integers, naming them."""

from __future__ import annotations

import array

import numpy as np
import pytest
from tests.support.hf import mix_docs, trained_engine

from hf_bbpe.engine.encoding.token_ids import TokenIdTypeError


@pytest.fixture(scope="module")
def engine():
    return trained_engine()


@pytest.fixture(scope="module")
def ids(engine) -> list[int]:
    return engine.encode(mix_docs()[3] + "<|endoftext|>", allowed_special="all")


def containers(ids: list[int]) -> dict:
    out = {
        "list": ids, "tuple": tuple(ids), "iterator": iter(ids),
        "numpy int64": np.array(ids, dtype=np.int64), "numpy uint16": np.array(ids, dtype=np.uint16),
        "array q": array.array("q", ids), "array H": array.array("H", ids),
        "numpy ints in a list": [np.int32(i) for i in ids],
    }
    try:
        import torch
    except ImportError:  # torch is an optional extra
        return out
    out["torch"] = torch.tensor(ids)
    out["torch int32"] = torch.tensor(ids, dtype=torch.int32)
    return out


def test_decode_takes_every_container_of_ids(engine, ids):
    text = engine.decode(ids)
    for name, held in containers(ids).items():
        assert engine.decode(held) == text, name
    for name, held in containers(ids).items():
        assert engine.decode_bytes(held) == text.encode("utf-8"), name


def test_one_id_as_a_0d_array_or_tensor(engine):
    assert engine.decode(np.array(65)) == engine.decode_single_token_bytes(np.int64(65)).decode() == "A"
    torch = pytest.importorskip("torch")
    assert engine.decode(torch.tensor(65)) == engine.decode_single_token_bytes(torch.tensor(65)).decode() == "A"


@pytest.mark.parametrize("bad", [[65.9], [65.0], ["65"], [[65, 66]], [None], np.array([65.9]),
                                 array.array("d", [65.0])])
def test_non_integer_ids_are_an_error_naming_them(engine, bad):
    shown = repr(list(bad)[-1] if not isinstance(bad, np.ndarray) else 65.9)
    for decode in (engine.decode, engine.decode_bytes):
        with pytest.raises(TypeError, match=rf"integers, got {shown.replace('[', '.').replace(']', '.')}"):
            decode(bad)
    with pytest.raises(TokenIdTypeError):
        engine.decode_single_token_bytes(list(bad)[-1] if not isinstance(bad, np.ndarray) else bad[0])


def test_float_tensors_and_unknown_ids_in_tensors_are_named_plainly(engine):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="got 65.5"):
        engine.decode(torch.tensor([65.5]))
    with pytest.raises(ValueError, match=r"unknown token id 99999 ") as info:
        engine.decode(torch.tensor([65, 99999]))
    assert "tensor" not in str(info.value)
