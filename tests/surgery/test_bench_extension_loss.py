"""scripts/bench_extension_model.py trains and scores its tiny GPT-2 through its own chunked
LM-head loss (to skip the full float32 logits); it must give the model's own loss, gradients and
bits per byte, or the benchmark would measure something else."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

pytestmark = pytest.mark.torch

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_extension_model.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_extension_model", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    module.HEAD_CHUNK = 7  # several chunks and a ragged last one
    return module


def tiny(untied: bool = False) -> GPT2LMHeadModel:
    torch.manual_seed(0)
    config = GPT2Config(n_embd=32, n_layer=1, n_head=2, n_positions=64, vocab_size=300, tie_word_embeddings=not untied,
                        bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return GPT2LMHeadModel(config)


def loss_and_grads(model, window, own: bool, bench, bf16: bool):
    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        if own:
            loss = bench.causal_lm_loss(model, window, torch.bfloat16 if bf16 else torch.float32)
        else:
            loss = model(input_ids=window, labels=window).loss
    loss.backward()
    return float(loss), {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("untied", [False, True])
@pytest.mark.parametrize("bf16", [False, True])
def test_chunked_head_loss_matches_the_models_own(bench, untied, bf16):
    model = tiny(untied)
    window = torch.randint(0, 300, (2, 40), generator=torch.Generator().manual_seed(1))
    want_loss, want = loss_and_grads(model, window, False, bench, bf16)
    got_loss, got = loss_and_grads(model, window, True, bench, bf16)
    tolerance = 2e-2 if bf16 else 1e-5  # bf16: the rounding of bf16 gradients, taken in another order
    assert got_loss == pytest.approx(want_loss, rel=1e-3 if bf16 else 1e-6)
    assert want.keys() == got.keys()
    for name in want:
        assert float((got[name] - want[name]).norm()) <= tolerance * float(want[name].norm()) + 1e-8, name


def test_bits_per_byte_matches_the_models_logits(bench):
    model = tiny().eval()
    ids = torch.randint(0, 300, (3, 30), generator=torch.Generator().manual_seed(2))
    labels = ids.clone()
    labels[1, 20:] = -100  # padding
    held = bench.HeldOut([(ids, labels)], n_bytes=500, n_tokens=0)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, :-1]
        nll = torch.nn.functional.cross_entropy(logits.reshape(-1, 300), labels[:, 1:].reshape(-1), reduction="sum")
    assert bench.bits_per_byte(model, held) == pytest.approx(float(nll) / math.log(2) / 500, rel=1e-6)
