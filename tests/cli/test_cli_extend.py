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

    from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

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


def _roles_in_config(folder):
    data = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    return data.get("bos_token"), data.get("eos_token"), data["add_bos_token"]


@pytest.mark.slow
@pytest.mark.transformers_compat
def test_extending_llama3_keeps_its_bos(tmp_path):
    """`hf-bbpe extend` on Meta's Llama 3 file, and again on the folder it wrote: the folders add
    <|begin_of_text|> as llama_models' bos=True does ("Hi" -> [128000, 13347]) and keep Meta's eos."""
    from llama_models.llama3.tokenizer import Tokenizer as Llama3Reference
    from transformers import AutoTokenizer

    from tests.support.families import LLAMA3_MODEL

    code = tmp_path / "code.py"
    code.write_text("def parse_config(path):\n    return load_config_file(path)\n" * 50, encoding="utf-8")
    first, second = tmp_path / "ext", tmp_path / "ext2"
    run_cli("extend", LLAMA3_MODEL, code, "--new-merges", 3, "--out", first, "--no-progress", "--quiet")
    run_cli("extend", first, code, "--new-merges", 2, "--out", second, "--no-progress", "--quiet")
    for folder in (first, second):
        assert _roles_in_config(folder) == ("<|begin_of_text|>", "<|end_of_text|>", True)
        assert Tokenizer.from_file(folder / "tokenizer.model").roles.add_bos_token
    assert AutoTokenizer.from_pretrained(str(second))("Hi")["input_ids"] == \
        Llama3Reference(LLAMA3_MODEL).encode("Hi", bos=True, eos=False) == [128000, 13347]


def test_extend_add_bos_flag(mix_tok_dir, tmp_path):
    """--add-bos with --bos-token turns the BOS on for a trained tokenizer, extending that folder keeps
    it, --no-add-bos turns it off; --add-bos without a BOS token is refused before training."""
    from tokenizers import Tokenizer as HFTokenizer

    on, kept, off = tmp_path / "on", tmp_path / "kept", tmp_path / "off"
    run_cli("extend", mix_tok_dir, TAYLOR, "--new-merges", 5, "--bos-token", "<|endoftext|>", "--add-bos", "--out", on)
    run_cli("extend", on, TAYLOR, "--new-merges", 5, "--out", kept)
    run_cli("extend", kept, TAYLOR, "--new-merges", 5, "--no-add-bos", "--out", off)
    for folder, add_bos in ((on, True), (kept, True), (off, False)):
        assert _roles_in_config(folder) == ("<|endoftext|>", None, add_bos)
        ids = HFTokenizer.from_file(str(folder / "tokenizer.json")).encode("Hi").ids
        assert ids[:1] == [512] if add_bos else 512 not in ids
    assert_one_line_error(run_cli("extend", mix_tok_dir, TAYLOR, "--new-merges", 5, "--add-bos", "--out",
                                  tmp_path / "x", check=False), "--add-bos", "--bos-token")
    assert not (tmp_path / "x").exists()
