"""llama.cpp for the GGUF tests: its source and its tokenizer, built from the llama-cpp-python sdist
by scripts/build_llama_cpp.sh (once per machine: the script skips a finished build), and llama.cpp's
ids for many documents in one call (tests/support/llama_tokenize_docs.cpp)."""

from __future__ import annotations

import os
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


@dataclass(frozen=True)
class LlamaCpp:
    dir: Path

    @property
    def source(self) -> Path:
        """llama.cpp's source folder (convert_hf_to_gguf.py, gguf-py)."""
        return self.dir / "llama.cpp"

    @property
    def tokenize_program(self) -> Path:
        return self.dir / "llama_tokenize_docs"


def build_llama_cpp() -> LlamaCpp:
    """Run scripts/build_llama_cpp.sh (a no-op once built); a failed build fails the test."""
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "build_llama_cpp.sh")], capture_output=True, text=True,
                          env=env, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/build_llama_cpp.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return LlamaCpp(Path(proc.stdout.strip().splitlines()[-1]))


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
