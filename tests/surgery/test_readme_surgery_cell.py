"""The surgery cell of docs/extension.md (the doc-example runner skips it: it needs a model), run twice on the same model and tokenizer objects as a notebook
re-runs a cell: the second run returns the same ids, ``train_only_new_tokens`` takes them, the
rows trained after the first run are left as they were, and training goes on. On a tiny GPT-2
built from a config, with GPT-2's real tokenizer files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast  # noqa: E402

pytestmark = [pytest.mark.torch]

ROOT = Path(__file__).resolve().parents[2]


def readme_cell() -> tuple[str, str]:
    """The cell's lines before its ``...`` (add tokens, freeze the rest) and the line after it
    (``handle.remove()``): the test trains where the page writes ``...``."""
    text = (ROOT / "docs" / "extension.md").read_text(encoding="utf-8")
    code = re.search(r"## Grow a model for new tokens.*?```python\n(.*?)```", text, re.S).group(1)
    before, after = code.split("\n...", 1)
    (remove,) = [line for line in after.splitlines() if line.startswith("handle.remove()")]
    assert "train_only_new_tokens(model, new_ids)" in before
    return before, remove


def train_steps(model, ids: list[int], steps: int = 3) -> None:
    batch = torch.tensor([[ids[0], 11, 22, ids[-1], 33, ids[0], 44, ids[-1]]])
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.1)
    for _ in range(steps):
        model(batch, labels=batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def test_the_readme_cell_runs_twice(tmp_path):
    folder = tmp_path / "gpt2"
    folder.mkdir()
    shutil.copy(ROOT / "tests" / "data" / "gpt2" / "encoder.json", folder / "vocab.json")
    shutil.copy(ROOT / "tests" / "data" / "gpt2" / "vocab.bpe", folder / "merges.txt")
    torch.manual_seed(0)
    scope = {"model": GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=1, n_head=2, n_positions=32, vocab_size=50257)),
             "tokenizer": GPT2TokenizerFast.from_pretrained(str(folder))}
    cell, remove = readme_cell()
    model = scope["model"]

    exec(cell, scope)  # noqa: S102 - the page's own code
    first = list(scope["new_ids"])
    assert first == [50257, 50258]
    train_steps(model, first)
    exec(remove, scope)  # noqa: S102
    trained = {name: tensor.clone() for name, tensor in model.state_dict().items()}

    exec(cell, scope)  # noqa: S102 - the re-run
    assert list(scope["new_ids"]) == first and scope["new_ids"].skipped == {}
    assert all(torch.equal(model.state_dict()[name], tensor) for name, tensor in trained.items())
    train_steps(model, first)
    exec(remove, scope)  # noqa: S102
    weight = model.get_input_embeddings().weight.detach()
    assert not torch.equal(weight[first], trained["transformer.wte.weight"][first])  # the new rows trained on
    assert torch.equal(weight[:50257], trained["transformer.wte.weight"][:50257])  # and nothing else
    assert scope["tokenizer"].eos_token == "<|im_end|>" and len(scope["tokenizer"]) == 50259
