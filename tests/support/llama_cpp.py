"""llama.cpp for the GGUF tests: its source and its tokenizer, built from the llama-cpp-python sdist
by scripts/build_llama_cpp.sh (once per machine: the script skips a finished build), llama.cpp's
ids for many documents in one call and what it reads of a vocabulary's special tokens
(tests/support/llama_tokenize_docs.cpp), its converter's hash table, and a tiny model to convert."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONVERTER_HASHES = {
    "gpt-2": "3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454",  # openai-community/gpt2
    "dbrx": "a8594e3edff7c29c003940395316294b2c623e09894deebbc65f33f1515df79e",  # databricks/dbrx-base (cl100k)
    "gpt-4o": "ccc2ef013c104be7bae2965776d611e1d7a8a2a9c547dd93a682c9a9fc80352e",  # Xenova/gpt-4o (o200k)
    "llama-bpe": "0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5",  # meta-llama/Meta-Llama-3-8B
}
"""Hashes from llama.cpp's own table (get_vocab_base_pre in conversion/base.py of the llama.cpp that
llama-cpp-python 0.3.36 vendors), each with the name it gives and the model it was computed on."""


def comparison_docs() -> list[str]:
    """The documents llama.cpp's ids are compared on: the multilingual + code sample, code, contractions
    and digits, and llama.cpp's own test text. (Imported here, not at the top: conftest.py imports
    this module in every venv.)"""
    from conversion.gguf_vocab import CHKTXT
    from tests.support.families import mix_documents

    return mix_documents() + ["def f(x):\n    return x\n", "x = 1  \n", "I'M here, 'LL go. 1234567 ١٢٣", CHKTXT]


@dataclass(frozen=True)
class LlamaCpp:
    dir: Path
    tokenize_program: Path
    """tests/support/llama_tokenize_docs.cpp built against llama.cpp (one per version of that file)."""

    @property
    def source(self) -> Path:
        """llama.cpp's source folder (convert_hf_to_gguf.py, gguf-py)."""
        return self.dir / "llama.cpp"


def build_llama_cpp() -> LlamaCpp:
    """Run scripts/build_llama_cpp.sh (a no-op once built); a failed build fails the test."""
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "build_llama_cpp.sh")], capture_output=True, text=True,
                          env=env, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/build_llama_cpp.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    folder, program = proc.stdout.strip().splitlines()[-2:]
    return LlamaCpp(Path(folder), Path(program))


def llama_cpp_ids(llama: LlamaCpp, gguf_path: Path, docs: list[str], scratch: Path) -> list[list[int]]:
    """llama.cpp's ids for each document (llama_tokenize with the vocabulary's add_bos/add_eos, special
    tokens not parsed: what ``llama-tokenize -m GGUF -p DOC --ids`` prints)."""
    docs_file = scratch / "docs.bin"
    with open(docs_file, "wb") as handle:
        for doc in docs:
            data = doc.encode("utf-8")
            handle.write(struct.pack("<I", len(data)) + data)
    proc = subprocess.run([str(llama.tokenize_program), str(gguf_path), str(docs_file)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")[:-1]
    assert len(lines) == len(docs)
    return [[int(x) for x in line.split()] for line in lines]


def tokenizer_fields(reader) -> dict:
    """Every ``tokenizer.*`` field of a GGUF (a ``gguf.GGUFReader``), by key."""
    return {key: value.contents() for key, value in reader.fields.items() if key.startswith("tokenizer.")}


def llama_cpp_special(llama: LlamaCpp, gguf_path: Path) -> dict[str, int]:
    """What llama.cpp reads of the vocabulary's special tokens (``llama_vocab_bos``/``eos``/``eot``/
    ``sep``/``pad``/``mask``, -1 for none; ``add_bos``/``add_eos``/``add_sep`` as 0/1; ``n_tokens``)."""
    proc = subprocess.run([str(llama.tokenize_program), str(gguf_path), "--special"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return {name: int(value) for name, value in (line.split() for line in proc.stdout.splitlines())}


def converter_hash_table(llama: LlamaCpp) -> dict[str, str]:
    """llama.cpp's converter's own table, hash -> pre-tokenizer name, read from its source
    (``if chkhsh == "...": res = "..."`` in ``get_vocab_base_pre``)."""
    source = (llama.source / "conversion" / "base.py").read_text(encoding="utf-8")
    table = dict(re.findall(r'if chkhsh == "([0-9a-f]{64})":\s*(?:#[^\n]*\s*)*res = "([^"]+)"', source))
    assert len(table) > 50, "llama.cpp's converter table not found"
    return table


def tiny_llama(tokenizer_folder: Path, model_dir: Path) -> Path:
    """A one-layer Llama with the saved tokenizer's files beside it (its tokenizer.model left out:
    llama.cpp's converter would read it as sentencepiece), as a model folder to convert; the config's
    vocab_size and bos/eos/pad ids are the tokenizer's."""
    import shutil

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from hf_bbpe import BBPETokenizer

    tok = BBPETokenizer.from_pretrained(str(tokenizer_folder))
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(str(model_dir))
    for path in tokenizer_folder.iterdir():
        if path.is_file() and path.name not in ("tokenizer.model", "config.json"):
            shutil.copy(path, model_dir / path.name)
    return model_dir
