"""`hf-bbpe extend` (new merges on new text) and `hf-bbpe extend-model` (tokens added to a
safetensors checkpoint), driven as real programs."""

from __future__ import annotations

import json

import pytest

from hf_bbpe import Tokenizer
from hf_bbpe.cli.text_input import iter_documents
from tests.support.cli import TAYLOR, assert_one_line_error, run_cli


def test_extend_equals_the_library(mix_tok_dir, tmp_path):
    """New merges equal Tokenizer.extend on the same documents; old tokens and specials keep their ids;
    a new special token goes above everything."""
    base = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    out = tmp_path / "ext"
    run_cli("extend", mix_tok_dir, TAYLOR, "--new-merges", 40, "--special", "<|pad|>", "--out", out)
    got = Tokenizer.from_file(out / "tokenizer.model")
    ref = base.extend(iter_documents([str(TAYLOR)], "paragraph"), 40, progress=False)
    assert got.merges == ref.merges
    assert list(got.merges.items())[: len(base.merges)] == list(base.merges.items())
    assert len(got.merges) == len(base.merges) + 40
    assert got.special_tokens == {"<|endoftext|>": 512, "<|pad|>": max(ref.vocab) + 1}
    text = TAYLOR.read_text(encoding="utf-8")[:20000]
    assert len(got.encode_ordinary(text)) < len(base.encode_ordinary(text))
    assert got.decode(got.encode_ordinary(text)) == text


def test_extend_bad_sizes(mix_tok_dir, tmp_path):
    assert_one_line_error(run_cli("extend", mix_tok_dir, TAYLOR, "--vocab-size", 300, "--out", tmp_path / "o",
                                  check=False), "--vocab-size 300", "512 normal tokens")
    proc = run_cli("extend", mix_tok_dir, TAYLOR, "--out", tmp_path / "o", check=False)
    assert proc.returncode == 2 and b"--new-merges" in proc.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.torch
def test_extend_model_grows_the_checkpoint(mix_tok_dir, tmp_path):
    """Tokens added to a tiny GPT-2 checkpoint: config, tokenizer and tied embedding follow, old rows
    are bit-identical."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file
    from transformers import GPT2Config, GPT2LMHeadModel

    from hf_bbpe.tokenization_bbpe import BBPETokenizer

    ckpt = tmp_path / "ckpt"
    tok = BBPETokenizer.from_pretrained(str(mix_tok_dir))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=16, n_layer=1, n_head=2, n_positions=32,
                                       bos_token_id=512, eos_token_id=512))
    model.save_pretrained(str(ckpt))
    tok.save_pretrained(str(ckpt))
    old = load_file(str(ckpt / "model.safetensors"))["transformer.wte.weight"]

    out = tmp_path / "out"
    run_cli("extend-model", ckpt, "--out", out, "--add", "<|im_start|>", "--add", "<|im_end|>", "--special",
            "--pad-token", "<|pad|>")
    new = load_file(str(out / "model.safetensors"))["transformer.wte.weight"]
    assert new.shape == (len(tok) + 3, 16)
    assert torch.equal(new[: len(tok)], old)
    config = json.loads((out / "config.json").read_text())
    assert config["vocab_size"] == len(tok) + 3 and config["pad_token_id"] == len(tok) + 2
    extended = BBPETokenizer.from_pretrained(str(out))
    assert extended.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>", "<|pad|>"]) == [513, 514, 515]
    assert extended.pad_token == "<|pad|>"

    assert_one_line_error(run_cli("extend-model", ckpt, "--out", out, "--add", "x", check=False), "exists")
    assert_one_line_error(run_cli("extend-model", tmp_path, "--out", tmp_path / "o2", "--add", "x", check=False),
                          "not a checkpoint folder")


def test_extend_model_init_choices_are_the_library_s():
    """The CLI writes the choices out (importing surgery imports torch; --help must not need it)."""
    pytest.importorskip("torch")
    from hf_bbpe.cli.commands.extend_model import INITS
    from hf_bbpe.surgery import TOKEN_INIT_METHODS

    assert INITS == TOKEN_INIT_METHODS
