"""``--remote-code``: a CLI folder carries code only when asked, and then loads without hf_bbpe."""

from __future__ import annotations

import json

from tests.support.cli import GPT2_DIR, MIX, assert_one_line_error, run_cli, train_cli
from tests.support.hf import mix_docs, run_python

from hf_bbpe import Tokenizer


def test_train_writes_code_only_with_remote_code(tmp_path):
    plain, remote = tmp_path / "plain", tmp_path / "remote"
    train_cli(plain, MIX, 300)
    train_cli(remote, MIX, 300, "--remote-code")
    assert not list(plain.glob("*.py"))
    assert "auto_map" not in json.loads((plain / "tokenizer_config.json").read_text())
    assert (remote / "tokenization_bbpe.py").is_file()
    docs = mix_docs()[:20]
    out = run_python(
        f"""
        import json
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained({str(remote)!r}, trust_remote_code=True)
        print(json.dumps([type(tok).__name__, [tok(d, add_special_tokens=False)["input_ids"] for d in {docs!r}]]))
        """,
        tmp_path, block_hf_bbpe=True)
    name, ids = json.loads(out.splitlines()[-1])
    engine = Tokenizer.from_file(remote / "tokenizer.model")
    assert name == "BBPETokenizerFast" and ids == [engine.encode(d, allowed_special="all") for d in docs]


def test_remote_code_needs_a_folder_output(tmp_path):
    proc = run_cli("convert", GPT2_DIR, "--from", "gpt2", "--to", "tiktoken", "-o", tmp_path / "out.tiktoken",
                   "--remote-code", check=False)
    assert_one_line_error(proc, "--remote-code", "--to hf")
