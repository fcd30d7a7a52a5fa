"""``hf-bbpe gguf``: the vocabulary GGUF and the recipe for converting a model, bad input as one
line. (llama.cpp's tokenizer and converter on what it writes: tests/conversion/test_gguf_vocab.py.)"""

from __future__ import annotations

import re

import gguf
import pytest

from tests.support.cli import TAYLOR, assert_one_line_error, run_cli


def test_gguf_writes_the_vocabulary_and_says_how_to_convert(mix_tok_dir, tmp_path):
    out = tmp_path / "tok.gguf"
    proc = run_cli("gguf", mix_tok_dir, "-o", out)
    text = proc.stdout.decode("utf-8")
    assert f"wrote {out}: 513 tokens, 256 merges" in text
    assert "pre-tokenizer: dbrx; special ids: none; add_bos false, add_eos false; chat template: no" in text
    assert "note: the tokenizer has no eos_token: llama.cpp then takes id 11" in text
    assert re.search(r"chkhsh [0-9a-f]{64}\n", text)
    assert "hf-bbpe gguf MODEL_DIR --llama-cpp path/to/llama.cpp" in text and "ollama create" in text
    assert "GPT-4's pattern" not in text  # no token spans the cut llama.cpp's split makes (test_gguf_vocab.py)
    reader = gguf.GGUFReader(out)
    assert len(reader.fields["tokenizer.ggml.tokens"].contents()) == 513
    assert reader.fields["tokenizer.ggml.pre"].contents() == "dbrx"


def test_gguf_refuses_a_pattern_llama_cpp_does_not_know(tmp_path):
    folder = tmp_path / "words"
    run_cli("train", TAYLOR, "--vocab-size", 300, "--pattern", r"\w+|[^\w\s]+|\s+", "--out", folder, "--quiet")
    proc = run_cli("gguf", folder, "-o", tmp_path / "x.gguf", check=False)
    assert_one_line_error(proc, "llama.cpp has no pre-tokenizer for the split pattern", "it knows these patterns")
    assert not (tmp_path / "x.gguf").exists()


def test_gguf_refuses_superbpe_stage1_in_one_line(tmp_path):
    """Issue 36: a tokenizer trained with --pattern superbpe_stage1 gave a bare KeyError."""
    folder = tmp_path / "stage1"
    run_cli("train", TAYLOR, "--vocab-size", 300, "--pattern", "superbpe_stage1", "--out", folder, "--quiet")
    proc = run_cli("gguf", folder, "-o", tmp_path / "x.gguf", check=False)
    assert_one_line_error(proc, "llama.cpp has no pre-tokenizer for the superbpe_stage1 pattern",
                          "'superbpe' pre-tokenizer")
    assert not (tmp_path / "x.gguf").exists()


@pytest.mark.parametrize(("args", "needle"), [
    (["no-such-folder", "-o", "x.gguf"], "not a folder"),
    (["{tok}"], "give -o FILE for the vocabulary GGUF, or --llama-cpp DIR"),
    (["{tok}", "-o", "x.gguf", "--converter-args", "--outtype", "f16"], "needs --llama-cpp DIR"),
    (["{tok}", "--llama-cpp", "{tmp}"], "convert_hf_to_gguf.py: no such file"),
])
def test_gguf_bad_arguments_are_one_line(mix_tok_dir, tmp_path, args, needle):
    args = [a.format(tok=mix_tok_dir, tmp=tmp_path) for a in args]
    assert_one_line_error(run_cli("gguf", *args, check=False, cwd=tmp_path), needle)


@pytest.mark.slow
def test_gguf_refuses_our_tokenizer_model_in_a_model_folder(mix_tok_dir, llama_cpp, tmp_path):
    """llama.cpp's converter reads a folder's tokenizer.model as sentencepiece and crashes on ours:
    said in one line before it runs."""
    proc = run_cli("gguf", mix_tok_dir, "--llama-cpp", llama_cpp.source, check=False)
    assert_one_line_error(proc, "tokenizer.model", "sentencepiece", "move it out of the model folder")
