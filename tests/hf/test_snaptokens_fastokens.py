"""Saved folders in snaptokens and fastokens (test extra, pinned), the Rust encoders that read a
folder's tokenizer.json (fastokens is vLLM's and SGLang's ``--tokenizer-backend fastokens``): our
ids, whole sequence per document of mix-sample.txt and on texts ending in white space after a line
break (where GPT-4's pattern and Llama 3's cut apart), special tokens added as the folder says.

snaptokens knows a split pattern only by its exact string (a table of the well-known ones: GPT-2's,
Llama 3's, which transformers' TikTokenConverter also writes for cl100k, Qwen2's, o200k's, Tekken's)
and refuses any other. So GPT-4's pattern is saved as Llama 3's wherever that gives the same ids
(``tokenizer_json_writer.split_pattern_spelling``: no token spans the one cut between them; real
cl100k has none), and a tokenizer with such a token, or with SuperBPE's stage-1 pattern, which
snaptokens' table lacks, is refused by snaptokens, never given other ids. fastokens compiles any
spelling.
"""

from __future__ import annotations

import json
from pathlib import Path

import fastokens
import pytest
import snaptokens
import tokenizers
from tests.conversion.test_pattern_spellings import OLLAMA_PRE_TOKENIZERS, ollama_digest
from tests.hf.test_tokenizers_js import _llama3, _tiktoken_family
from tests.support.families import mix_documents
from tests.support.hf import EOT

import conversion
from hf_bbpe import RegexTokenizer
from hf_bbpe.engine.chunking.onig_regex import translate_pattern_for_onig
from hf_bbpe.engine.chunking.patterns import GPT4_SPLIT_PATTERN, LLAMA3_SPLIT_PATTERN
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
from hf_bbpe.hf.tokenizer_json_writer import token_past_a_line_break

TAILS = ["def f():\n    ", "x\n  ", "a\n \n  \t", "x  \n", "trailing newlines \n\n", "   ", "", "if x:\n\treturn\n\t",
         "I'M YOU'RE he'll 'S 'sss 12345 ١٢٣٤", "CamelCaseHTTPServer éÉǅ ß\u00a0x\u3000y 👍🏽", "\r\n \u3000"]
DOCS = mix_documents() + TAILS
CLIENTS = {"snaptokens": snaptokens.Tokenizer, "fastokens": fastokens.Tokenizer, "tokenizers": tokenizers.Tokenizer}
UNSUPPORTED = "unsupported pre-tokenizer configuration"


def client_ids(client: str, folder: Path, texts: list[str]) -> list[list[int]]:
    """Each text's ids from ``client`` reading the folder's tokenizer.json, special tokens added."""
    tok = CLIENTS[client].from_file(str(folder / "tokenizer.json"))
    return [tok.encode(text, add_special_tokens=True).ids for text in texts]


def differing(expected: list[list[int]], got: list[list[int]]) -> list[int]:
    assert len(got) == len(expected)
    return [i for i, (a, b) in enumerate(zip(expected, got)) if a != b]


def saved_regex(folder: Path) -> str:
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    return next(step["pattern"]["Regex"] for step in data["pre_tokenizer"]["pretokenizers"] if step["type"] == "Split")


def trained_folder(pattern: str, folder: Path, docs: list[str]) -> BBPETokenizer:
    tok = RegexTokenizer(pattern)
    tok.train(docs, 1024, progress=False)
    tok.register_special_tokens({EOT: 1024})
    BBPETokenizer.from_engine(tok, eos_token=EOT).save_pretrained(folder)
    return BBPETokenizer.from_pretrained(folder)


@pytest.mark.parametrize("client", ["snaptokens", "fastokens"])
@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k", "llama3", "qwen2", "tekken", "superbpe_stage1"])
def test_trained_folder(pattern, client, tmp_path):
    """A tokenizer trained with each built-in pattern, saved, then read by the client: our ids on
    every document and on text holding the special token; snaptokens refuses SuperBPE's stage-1
    pattern, which its table lacks."""
    docs = mix_documents()
    ours = trained_folder(pattern, tmp_path, docs[1::2])
    texts = DOCS + [f"x{EOT}y {EOT}\n{docs[0][:200]}{EOT}"]
    if client == "snaptokens" and pattern == "superbpe_stage1":
        with pytest.raises(Exception, match=UNSUPPORTED):
            client_ids(client, tmp_path, texts)
        return
    expected = [ours(text)["input_ids"] for text in texts]
    assert expected[-1].count(1024) == 3
    assert differing(expected, client_ids(client, tmp_path, texts)) == []


def test_gpt4_folder_carries_llama3s_spelling_where_the_ids_are_the_same(tmp_path):
    """A GPT-4-pattern tokenizer without a token across the cut is saved with Llama 3's string,
    which Ollama's converter names ``llama-bpe`` and snaptokens reads (GPT-4's own spelling is
    refused: the defect this fixes); our own loader keeps GPT-4's pattern (tokenizer_config.json)."""
    ours = trained_folder("gpt4", tmp_path, mix_documents()[1::2])
    assert token_past_a_line_break(ours.engine.vocab) is None
    assert saved_regex(tmp_path) == LLAMA3_SPLIT_PATTERN == translate_pattern_for_onig(LLAMA3_SPLIT_PATTERN)
    assert ours.engine.pattern == GPT4_SPLIT_PATTERN
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert OLLAMA_PRE_TOKENIZERS.get(ollama_digest(data)) == "llama-bpe"
    data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = translate_pattern_for_onig(GPT4_SPLIT_PATTERN)
    with pytest.raises(Exception, match=UNSUPPORTED):
        snaptokens.Tokenizer.from_json_str(json.dumps(data))


@pytest.mark.parametrize("client", ["snaptokens", "fastokens", "tokenizers"])
def test_gpt4_folder_with_a_token_across_the_cut(client, tmp_path):
    """A GPT-4-pattern tokenizer that learned ``"\\n    "``-like tokens (documents ending in an
    indent) keeps GPT-4's own spelling, where Llama 3's would give other ids: fastokens and
    ``tokenizers`` give our ids on texts ending that way; snaptokens refuses the folder."""
    docs = [doc + "\n    " for doc in mix_documents()[1::2]]
    ours = trained_folder("gpt4", tmp_path, docs)
    assert token_past_a_line_break(ours.engine.vocab) is not None
    assert saved_regex(tmp_path) == translate_pattern_for_onig(GPT4_SPLIT_PATTERN)
    texts = DOCS + docs[:50]
    if client == "snaptokens":
        with pytest.raises(Exception, match=UNSUPPORTED):
            client_ids(client, tmp_path, texts)
        return
    expected = [ours(text)["input_ids"] for text in texts]
    assert differing(expected, client_ids(client, tmp_path, texts)) == []
    # the spelling matters here: Llama 3's string in the same file gives other ids
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = LLAMA3_SPLIT_PATTERN
    llama3 = tokenizers.Tokenizer.from_str(json.dumps(data))
    assert differing(expected, [llama3.encode(text).ids for text in texts]) != []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "llama3"])
def test_converted_folder(name, tmp_path):
    """Real cl100k_base and o200k_base (tiktoken's ids) and Llama 3 (llama_models' ids, with its BOS
    and its ``ignore_merges``), converted and saved, then read by each client."""
    tok, reference = _llama3() if name == "llama3" else _tiktoken_family(name)
    BBPETokenizer.from_engine(tok).save_pretrained(tmp_path)
    special = "<|endoftext|>" if name != "llama3" else "<|end_of_text|>"
    texts = DOCS + [f"x{special}y {special}\n"]
    expected = [reference(text) for text in texts]
    for client in ("snaptokens", "fastokens"):
        assert differing(expected, client_ids(client, tmp_path, texts)) == [], client


def test_gpt4_ranks_folder_with_a_white_space_token_that_merging_does_not_give(tmp_path):
    """In ``"ranks"`` mode a chunk that is a token is that token: with the token ``"\\n\\n\\n"`` and no
    ``"\\n\\n"``, Llama 3's split makes ``"\\n\\n\\n"`` a chunk (one token) where GPT-4's chunk
    ``"\\n\\n\\n "`` merges nothing (four bytes), so the folder keeps GPT-4's spelling; fastokens and
    ``tokenizers`` give tiktoken's ids."""
    import base64

    import tiktoken

    ranks = {bytes([b]): b for b in range(256)} | {b"\n\n\n": 256}
    path = tmp_path / "tiny.tiktoken"
    path.write_text("".join(f"{base64.b64encode(data).decode()} {rank}\n" for data, rank in ranks.items()))
    tok = conversion.load(path, pattern="gpt4")
    assert tok.mode == "ranks" and token_past_a_line_break(tok.vocab) is None
    BBPETokenizer.from_engine(tok).save_pretrained(tmp_path / "folder")
    assert saved_regex(tmp_path / "folder") == translate_pattern_for_onig(GPT4_SPLIT_PATTERN)
    reference = tiktoken.Encoding("tiny", pat_str=GPT4_SPLIT_PATTERN, mergeable_ranks=ranks, special_tokens={})
    texts = ["x\n\n\n ", "x\n\n\ny", "a\n\n\n\n  "] + TAILS
    expected = [reference.encode(text) for text in texts]
    assert expected[0] == [ord("x"), 10, 10, 10, 32]
    for client in ("fastokens", "tokenizers"):
        assert differing(expected, client_ids(client, tmp_path / "folder", texts)) == [], client
