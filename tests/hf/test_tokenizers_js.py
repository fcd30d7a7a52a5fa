"""A saved folder in JavaScript: Hugging Face's tokenizers.js (``@huggingface/tokenizers`` 0.2.0 from
npm, the tokenizer of transformers.js 4) under Node, loading the folder's tokenizer.json and
tokenizer_config.json from disk, gives our ids, whole sequence per document of mix-sample.txt
(prose in nine languages and Python code), with the default options (special tokens added as the
folder says). tokenizers.js compiles the saved Split regex with JavaScript's ``RegExp`` after
rewriting Oniguruma's syntax, so this holds each pattern's saved spelling to what it means in
``regex``/Oniguruma: GPT-2's, GPT-4's (cl100k), o200k's, Llama 3's, Qwen2's and Tekken's, for
tokenizers trained with them and for the real cl100k_base, o200k_base (tiktoken's ids) and Llama 3
(llama_models' ids, its BOS and ``ignore_merges``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.support.families import LLAMA3_MODEL, mix_documents
from tests.support.hf import EOT
from tests.support.javascript import tokenizers_js_ids

import conversion
from hf_bbpe import RegexTokenizer
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

DATA = Path(__file__).resolve().parents[1] / "data"
EDGES = ["def f():\n    ", "x  \n", "a\n \n  \t", "I'M YOU'RE he'll 'S 'sss 12345 ١٢٣٤",
         "CamelCaseHTTPServer éÉǅ ß\u00a0x\u3000y 👍🏽", "trailing newlines \n\n", "   ", ""]
DOCS = mix_documents() + EDGES


def differing(expected: list[list[int]], got: list[list[int]]) -> list[int]:
    assert len(got) == len(expected)
    return [i for i, (a, b) in enumerate(zip(expected, got)) if a != b]


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k", "llama3", "qwen2", "tekken"])
def test_trained_folder_in_tokenizers_js(pattern, tokenizers_js, tmp_path):
    """A tokenizer trained with each built-in pattern, saved, then read by tokenizers.js: our ids
    on every document, and on text holding the special token."""
    docs = mix_documents()
    tok = RegexTokenizer(pattern)
    tok.train(docs[1::2], 1024, progress=False)
    tok.register_special_tokens({EOT: 1024})
    BBPETokenizer.from_engine(tok, eos_token=EOT).save_pretrained(tmp_path)
    ours = BBPETokenizer.from_pretrained(tmp_path)
    texts = DOCS + [f"x{EOT}y {EOT}\n{docs[0][:200]}{EOT}"]
    expected = [ours(text)["input_ids"] for text in texts]
    assert expected[-1].count(1024) == 3
    assert differing(expected, tokenizers_js_ids(tokenizers_js, tmp_path, texts)) == []


def _tiktoken_family(name: str):
    """(engine tokenizer, tiktoken's encode with every special token allowed)."""
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    if name == "cl100k_base":
        import tiktoken_ext

        path = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    else:
        path = DATA / "tiktoken" / "o200k_base.tiktoken"
    tok = conversion.load_preset(name, path)
    reference = tiktoken.Encoding(name, pat_str=tok.pattern, mergeable_ranks=load_tiktoken_bpe(str(path)),
                                  special_tokens=dict(tok.special_tokens))
    return tok, lambda text: reference.encode(text, allowed_special="all")


def _llama3():
    """(engine tokenizer, llama_models' encode with its BOS, as the folder adds it)."""
    from llama_models.llama3.tokenizer import Tokenizer as Llama3Reference

    reference = Llama3Reference(LLAMA3_MODEL)
    return conversion.load(LLAMA3_MODEL), lambda text: reference.encode(text, bos=True, eos=False, allowed_special="all")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "llama3"])
def test_converted_folder_in_tokenizers_js(name, tokenizers_js, tmp_path):
    """Real cl100k_base and o200k_base (tiktoken's ids) and Llama 3 (llama_models' ids, with its BOS
    and its ``ignore_merges``), converted and saved, then read by tokenizers.js."""
    tok, reference = _llama3() if name == "llama3" else _tiktoken_family(name)
    BBPETokenizer.from_engine(tok).save_pretrained(tmp_path)
    special = "<|endoftext|>" if name != "llama3" else "<|end_of_text|>"
    texts = DOCS + [f"x{special}y {special}\n"]
    expected = [reference(text) for text in texts]
    assert differing(expected, tokenizers_js_ids(tokenizers_js, tmp_path, texts)) == []
