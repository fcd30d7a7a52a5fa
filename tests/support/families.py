"""The real model families' tokenizer files, as their owners' PyPI packages ship them (test extra),
tokenizer.json files made by ``tokenizers``' own BpeTrainer, and the multilingual text and code
documents that parity tests compare whole id sequences on."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import llama_models
import mistral_common

TEXT_DIR = Path(__file__).resolve().parents[1] / "data" / "text"

LLAMA3_MODEL = Path(llama_models.__file__).parent / "llama3" / "tokenizer.model"
"""Meta's Llama 3 rank file (tiktoken format under the name tokenizer.model), llama-models 0.3.0."""
LLAMA4_MODEL = Path(llama_models.__file__).parent / "llama4" / "tokenizer.model"
TEKKEN_FILES = {
    name: Path(mistral_common.__file__).parent / "data" / f"{name}.json" for name in ("tekken_240718", "tekken_240911")
}
"""Mistral's Tekken files (tiktoken ranks inside JSON), mistral-common 1.13.1."""
WHISPER_ASSETS = Path(importlib.util.find_spec("whisper").origin).parent / "assets"
"""OpenAI's Whisper rank files (multilingual.tiktoken, gpt2.tiktoken), openai-whisper 20250625; found
without importing whisper, which imports torch."""


def mix_documents() -> list[str]:
    """tests/data/text/mix-sample.txt split into its blank-line-separated documents (prose in
    nine languages and Python code), plus text that reaches Llama 3's tokens no merge builds."""
    docs = [doc for doc in (TEXT_DIR / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n") if doc]
    docs += [
        "Tôi làm việc ở Hà Nội; hợp đồng này cần nhiều nghiệp vụ. .:.: x.:.:y",
        "Việc này không phải việc của tôi, nhưng chúng ta hợp tác.\n\n  \t",
    ]
    return docs


def bpe_trainer_file(path: Path, alphabet: list[str], docs: list[str], vocab_size: int = 1200) -> Any:
    """A byte-level tokenizer.json made by ``tokenizers``' own BpeTrainer on ``docs``, with the
    ``initial_alphabet`` given (BpeTrainer only adds the bytes it sees, beside that alphabet)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(docs, trainer=trainer)
    tok.save(str(path))
    return Tokenizer.from_file(str(path))


def tiktoken_pattern(encoding: str) -> str:
    """tiktoken's own split pattern of an OpenAI encoding ("r50k_base", "cl100k_base", "o200k_base"),
    read from tiktoken_ext.openai_public without its rank file (which it would download)."""
    from unittest import mock

    from tiktoken_ext import openai_public

    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {}):
        return getattr(openai_public, encoding)()["pat_str"]
