"""Checkpoint surgery: extend_checkpoint rewrites only the embedding / LM head tensors of a
safetensors checkpoint, equals in-memory surgery, is atomic, and stays within a small memory bound."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    AutoTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    GPT2TokenizerFast,
    LlamaConfig,
    LlamaForCausalLM,
    PhiConfig,
    PhiForCausalLM,
)

from hf_bbpe import surgery  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.transformers_compat]

GPT2_DATA = Path(__file__).resolve().parents[1] / "data" / "gpt2"
REPO = Path(__file__).resolve().parents[2]
V = 50257
TOKENS = ["<|im_start|>", "<|im_end|>", " photosynthesis"]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2tok")
    shutil.copy(GPT2_DATA / "encoder.json", folder / "vocab.json")
    shutil.copy(GPT2_DATA / "vocab.bpe", folder / "merges.txt")
    return folder


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir):
    return GPT2TokenizerFast.from_pretrained(str(tokenizer_dir))


def make_model(arch):
    torch.manual_seed(0)
    small = dict(hidden_size=32, intermediate_size=64, num_attention_heads=2, tie_word_embeddings=False)
    if arch == "gpt2":  # tied: the checkpoint holds transformer.wte.weight only
        return GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, n_positions=64, vocab_size=V))
    if arch == "llama":  # untied
        config = LlamaConfig(**small, num_hidden_layers=2, num_key_value_heads=2, vocab_size=V)
        return LlamaForCausalLM(config)
    if arch == "llama_bf16":  # half precision on disk: new rows are computed in float64, cast once
        config = LlamaConfig(**small, num_hidden_layers=1, num_key_value_heads=2, vocab_size=V)
        return LlamaForCausalLM(config).to(torch.bfloat16)
    if arch == "llama_padded":  # more rows than tokens: new ids reuse (and re-init) rows inside the matrix
        config = LlamaConfig(**small, num_hidden_layers=1, num_key_value_heads=2, vocab_size=V + 7)
        return LlamaForCausalLM(config)
    model = PhiForCausalLM(PhiConfig(**small, num_hidden_layers=1, vocab_size=V))  # untied, head with a bias
    with torch.no_grad():
        model.lm_head.bias.normal_(0, 0.5)
    return model


# gpt2: single file; llama and phi: sharded, embedding and head in different shards.
SHARDING = {"gpt2": None, "llama": "20KB", "phi": "1MB", "llama_padded": None, "llama_bf16": "1MB"}


def load_model(path):
    """The checkpoint in its own dtype (transformers 4.57 would upcast bfloat16 to float32)."""
    return AutoModelForCausalLM.from_pretrained(path, torch_dtype="auto")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, tokenizer):
    root = tmp_path_factory.mktemp("ckpts")
    for arch, shard in SHARDING.items():
        kwargs = {"max_shard_size": shard} if shard else {}
        make_model(arch).save_pretrained(root / arch, **kwargs)
        tokenizer.save_pretrained(root / arch)
    (root / "llama" / "README.md").write_text("model card\n")
    return root


def in_memory(ckpt, **kwargs):
    model = load_model(ckpt)
    tok = AutoTokenizer.from_pretrained(ckpt)
    new_ids = surgery.add_tokens_and_resize(model, tok, TOKENS, special=True, **kwargs)
    return model, tok, new_ids


def assert_same_model(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key
    assert a.config.vocab_size == b.config.vocab_size
    for role in ("pad", "bos", "eos"):
        assert getattr(a.config, f"{role}_token_id") == getattr(b.config, f"{role}_token_id")
        assert getattr(a.generation_config, f"{role}_token_id") == getattr(b.generation_config, f"{role}_token_id")


@pytest.mark.parametrize(
    "arch, init",
    [
        ("gpt2", "mean"),
        ("gpt2", "normal"),
        ("llama", "subtoken_mean"),
        ("llama", "normal"),
        ("phi", {"<|im_end|>": [5, 6]}),
        ("phi", "normal"),
        ("llama_padded", "subtoken_mean"),
        ("llama_bf16", "mean"),
        ("llama_bf16", "normal"),
        # input and output rows apart: tied (both in one tensor), untied, head bias, bfloat16
        ("gpt2", "subtoken_scaled"),
        ("llama", "subtoken_damped"),
        ("phi", "subtoken_scaled"),
        ("phi", "subtoken_damped"),
        ("llama_bf16", "subtoken_scaled"),
    ],
)
def test_extend_checkpoint_equals_in_memory_surgery(arch, init, checkpoints, tokenizer, tmp_path):
    ckpt, out = checkpoints / arch, tmp_path / "out"
    kwargs = dict(init=init, roles={"pad": "<|pad|>", "eos": "<|im_end|>"}, pad_to_multiple_of=8)
    result = surgery.extend_checkpoint(ckpt, out, tokenizer, TOKENS, special=True, **kwargs)
    expected_model, expected_tok, expected_ids = in_memory(ckpt, **kwargs)

    assert list(result) == list(expected_ids) == [V, V + 1, V + 2, V + 3]
    assert result.num_rows == expected_ids.num_rows == V + 7  # 50261 rounded up to a multiple of 8
    loaded = load_model(out)
    assert_same_model(loaded, expected_model)
    assert loaded.config.vocab_size == V + 7 and loaded.config.pad_token_id == V + 3
    loaded_emb, loaded_head = loaded.get_input_embeddings(), loaded.get_output_embeddings()
    assert (loaded_head.weight is loaded_emb.weight) == (arch == "gpt2")
    assert loaded_emb.weight.dtype == (torch.bfloat16 if arch == "llama_bf16" else torch.float32)
    # the original's old rows survive bit for bit
    original = load_model(ckpt)
    assert torch.equal(loaded_emb.weight[:V], original.get_input_embeddings().weight[:V])
    assert torch.equal(loaded_head.weight[:V], original.get_output_embeddings().weight[:V])

    saved_tok = AutoTokenizer.from_pretrained(out)
    text = "<|im_start|>user photosynthesis<|im_end|><|pad|>"
    assert saved_tok.encode(text) == expected_tok.encode(text) == result.tokenizer.encode(text)
    assert saved_tok.encode(text)[0] == V and saved_tok.pad_token == "<|pad|>"
    assert len(tokenizer) == V  # the caller's tokenizer is not modified


def test_untouched_shards_are_byte_identical_and_index_is_updated(checkpoints, tokenizer, tmp_path):
    ckpt, out = checkpoints / "llama", tmp_path / "out"
    index = json.loads((ckpt / "model.safetensors.index.json").read_text())
    grown = {index["weight_map"]["model.embed_tokens.weight"], index["weight_map"]["lm_head.weight"]}
    shards = set(index["weight_map"].values())
    assert len(shards - grown) >= 2, "test needs untouched shards"
    surgery.extend_checkpoint(ckpt, out, tokenizer, ["<a>"])

    for shard in shards - grown:
        assert filecmp.cmp(ckpt / shard, out / shard, shallow=False), shard
    for shard in grown:
        assert not filecmp.cmp(ckpt / shard, out / shard, shallow=False), shard
    new_index = json.loads((out / "model.safetensors.index.json").read_text())
    assert new_index["weight_map"] == index["weight_map"]
    sizes = {}
    for shard in shards:
        with safe_open(out / shard, "pt") as f:
            for name in f.keys():
                sizes[name] = f.get_slice(name).get_shape()
    assert sizes["model.embed_tokens.weight"] == sizes["lm_head.weight"] == [V + 1, 32]
    assert new_index["metadata"]["total_size"] == index["metadata"]["total_size"] + 2 * 32 * 4
    if "total_parameters" in index["metadata"]:
        assert new_index["metadata"]["total_parameters"] == index["metadata"]["total_parameters"] + 2 * 32
    assert (out / "README.md").read_text() == "model card\n"
    assert json.loads((out / "config.json").read_text())["vocab_size"] == V + 1

    linked = tmp_path / "linked"
    surgery.extend_checkpoint(ckpt, linked, tokenizer, ["<a>"], link=True)
    for shard in shards - grown:
        assert os.stat(linked / shard).st_ino == os.stat(ckpt / shard).st_ino
    for shard in grown:
        assert os.stat(linked / shard).st_ino != os.stat(ckpt / shard).st_ino


def test_checkpoint_saved_without_base_model_prefix(checkpoints, tokenizer, tmp_path):
    # The GPT-2 checkpoints on the Hub name tensors "wte.weight", not "transformer.wte.weight".
    ckpt = tmp_path / "bare"
    shutil.copytree(checkpoints / "gpt2", ckpt)
    with safe_open(ckpt / "model.safetensors", "pt") as f:
        tensors = {name.removeprefix("transformer."): f.get_tensor(name) for name in f.keys()}
    save_file(tensors, ckpt / "model.safetensors", metadata={"format": "pt"})
    surgery.extend_checkpoint(ckpt, tmp_path / "out", tokenizer, TOKENS, init="subtoken_mean")
    with safe_open(tmp_path / "out" / "model.safetensors", "pt") as f:
        assert "wte.weight" in f.keys() and f.get_slice("wte.weight").get_shape() == [V + 3, 32]
    expected, _, _ = in_memory(checkpoints / "gpt2", init="subtoken_mean")
    assert_same_model(AutoModelForCausalLM.from_pretrained(tmp_path / "out"), expected)


def test_tied_checkpoint_holding_both_aliases(checkpoints, tokenizer, tmp_path):
    # Older saves store the tied head too; every alias present is grown identically.
    ckpt = tmp_path / "both"
    shutil.copytree(checkpoints / "gpt2", ckpt)
    rewrite(ckpt / "model.safetensors", lambda t: {**t, "lm_head.weight": t["transformer.wte.weight"].clone()})
    surgery.extend_checkpoint(ckpt, tmp_path / "out", tokenizer, TOKENS, init="normal")
    with safe_open(tmp_path / "out" / "model.safetensors", "pt") as f:
        assert torch.equal(f.get_tensor("lm_head.weight"), f.get_tensor("transformer.wte.weight"))
        assert f.get_slice("lm_head.weight").get_shape() == [V + 3, 32]
    expected, _, _ = in_memory(checkpoints / "gpt2", init="normal")
    assert_same_model(AutoModelForCausalLM.from_pretrained(tmp_path / "out"), expected)


def assert_nothing_written(parent: Path, before: set[str]):
    assert set(os.listdir(parent)) == before, "output or temp folder left behind"


def test_refuses_to_overwrite_unless_asked(checkpoints, tokenizer, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        surgery.extend_checkpoint(checkpoints / "gpt2", out, tokenizer, ["<a>"])
    assert os.listdir(out) == ["keep.txt"]
    surgery.extend_checkpoint(checkpoints / "gpt2", out, tokenizer, ["<a>"], overwrite=True)
    assert not (out / "keep.txt").exists() and (out / "model.safetensors").is_file()
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_overwrite_swaps_the_folders_in_one_step(tmp_path):
    """On Linux the old output is exchanged with the new one atomically: no moment without ``out``."""
    from hf_bbpe.engine.files.atomic_write import _exchange as _exchange_paths

    new, out = tmp_path / "new", tmp_path / "out"
    new.mkdir()
    out.mkdir()
    (new / "a").write_text("new")
    (out / "a").write_text("old")
    if not _exchange_paths(new, out):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    assert (out / "a").read_text() == "new" and (new / "a").read_text() == "old"


def rewrite(path: Path, transform):
    with safe_open(path, "pt") as f:
        tensors = dict(transform({name: f.get_tensor(name) for name in f.keys()}))
    save_file(tensors, path, metadata={"format": "pt"})


def test_bad_checkpoints_give_clear_errors_and_write_nothing(checkpoints, tokenizer, tmp_path):
    def variant(name, transform=None, config_edit=None):
        ckpt = tmp_path / "src" / name
        shutil.copytree(checkpoints / "gpt2", ckpt)
        if transform:
            rewrite(ckpt / "model.safetensors", transform)
        if config_edit:
            config = json.loads((ckpt / "config.json").read_text())
            config.update(config_edit)
            (ckpt / "config.json").write_text(json.dumps(config))
        return ckpt

    renamed = variant("renamed", lambda t: {k.replace("wte", "word_embeddings"): v for k, v in t.items()})
    wrong_rows = variant("rows", config_edit={"vocab_size": V + 1})
    int_emb = variant("int", lambda t: {k: (v.to(torch.int8) if k.endswith("wte.weight") else v) for k, v in t.items()})
    truncated = variant("truncated")
    with open(truncated / "model.safetensors", "r+b") as f:  # cuts into the embedding, stored last
        f.truncate(os.path.getsize(truncated / "model.safetensors") - 100)
    both_dtypes = variant("dtypes", lambda t: {**t, "lm_head.weight": t["transformer.wte.weight"].half()})
    no_safetensors = tmp_path / "src" / "bin"
    no_safetensors.mkdir()
    shutil.copy(checkpoints / "gpt2" / "config.json", no_safetensors)
    torch.save({}, no_safetensors / "pytorch_model.bin")
    cases = [
        (renamed, ValueError, "checkpoint tensor names do not match the config (GPT2LMHeadModel): none of "
                              "['transformer.wte.weight', 'lm_head.weight']"),
        (wrong_rows, ValueError, f"tensor 'transformer.wte.weight' in model.safetensors has shape [{V}, 32], "
                                 f"but config.json implies [{V + 1}, 32]"),
        (int_emb, ValueError, "tensor 'transformer.wte.weight' in model.safetensors has dtype I8"),
        (no_safetensors, FileNotFoundError, "only safetensors checkpoints are supported"),
        (truncated, ValueError, "model.safetensors: truncated"),  # found while writing: temp folder removed
        (both_dtypes, ValueError, "tied tensors ['lm_head.weight', 'transformer.wte.weight'] have different dtypes"),
    ]  # fmt: skip
    out_parent = tmp_path / "outs"
    out_parent.mkdir()
    for ckpt, error, message in cases:
        with pytest.raises(error, match=re.escape(message)):
            surgery.extend_checkpoint(ckpt, out_parent / "out", tokenizer, ["<a>"])
        assert_nothing_written(out_parent, set())
    with pytest.raises(ValueError, match=re.escape("token '<a>': source id 99999 has no row")):
        surgery.extend_checkpoint(checkpoints / "gpt2", out_parent / "out", tokenizer, ["<a>"], init={"<a>": [99999]})
    assert_nothing_written(out_parent, set())
    assert len(tokenizer) == V


def test_existing_tokens_are_skipped_on_checkpoints_too(checkpoints, tokenizer, tmp_path):
    with pytest.warns(UserWarning, match=re.escape("'<|endoftext|>' is already in the vocabulary")):
        result = surgery.extend_checkpoint(checkpoints / "gpt2", tmp_path / "out", tokenizer, ["<|endoftext|>", "<a>"])
    assert list(result) == [V] and result.skipped == {"<|endoftext|>": V - 1}
    assert json.loads((tmp_path / "out" / "config.json").read_text())["vocab_size"] == V + 1


MEMORY_PROBE = textwrap.dedent(
    """
    import json, resource, sys, time
    import transformers.models.llama.modeling_llama  # imported before the baseline, like the tokenizer
    from transformers import AutoTokenizer
    from hf_bbpe import surgery
    ckpt, out = sys.argv[1], sys.argv[2]
    tok = AutoTokenizer.from_pretrained(ckpt)

    def status_kib(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

    # ru_maxrss never decreases, so an earlier transient peak (loading the tokenizer) could hide
    # the surgery's; on Linux, writing 5 to clear_refs resets that high-water mark (VmHWM).
    def maxrss():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base, peak = status_kib("VmRSS"), lambda: status_kib("VmHWM")
    except OSError:
        base, peak = maxrss(), maxrss
    surgery.extend_checkpoint(ckpt, out, tok, ["<a>", "<b>"], special=True, init="normal")
    print(json.dumps({"growth_kib": peak() - base}))
    """
)


def test_checkpoint_surgery_peak_memory_is_far_below_model_size(tokenizer, tmp_path):
    # ~200 MB single-file checkpoint (everything in the shard that holds the embedding), whose
    # embedding + head are 2 x 12.9 MB: loading the model would cost the full 200 MB. What the
    # surgery may use is a fixed ~50 MB (imports it triggers, a copy of the tokenizer, chunks).
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=64, intermediate_size=16384, num_hidden_layers=14, num_attention_heads=2,
                         num_key_value_heads=2, vocab_size=V, tie_word_embeddings=False)  # fmt: skip
    with torch.no_grad():
        model = LlamaForCausalLM(config)
    ckpt = tmp_path / "big"
    model.save_pretrained(ckpt, max_shard_size="10GB")
    del model
    tokenizer.save_pretrained(ckpt)
    model_bytes = (ckpt / "model.safetensors").stat().st_size
    assert model_bytes > 190e6

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(ckpt), str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    growth = json.loads(proc.stdout.strip().splitlines()[-1])["growth_kib"] * 1024
    message = f"peak RSS grew by {growth / 1e6:.1f} MB for a {model_bytes / 1e6:.0f} MB checkpoint"
    assert growth < 0.4 * model_bytes, message
    old_path, new_path = ckpt / "model.safetensors", tmp_path / "out" / "model.safetensors"
    with safe_open(new_path, "pt") as new, safe_open(old_path, "pt") as old:
        assert new.get_slice("lm_head.weight").get_shape() == [V + 2, 64]
        assert torch.equal(new.get_slice("model.embed_tokens.weight")[:V], old.get_tensor("model.embed_tokens.weight"))
