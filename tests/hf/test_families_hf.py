"""The real families through transformers: BBPETokenizer wrapping Llama 3 (678 tokens no merge
builds), Llama 4, Tekken and Whisper, saved and loaded back, and the AutoTokenizer fast twin of the saved
folder (tokenizer.json run by ``tokenizers``, no hf_bbpe), each equal, whole id sequence per
document of mix-sample.txt, to the owner's encoder (llama_models, mistral_common, whisper) with the
owner's BOS rule (Llama 3, Llama 4 and Tekken add their BOS token, as ``bos=True``; Whisper adds
none): 0 documents differing. An extended Llama 3 keeps every old id and the BOS through the same
paths. The Llama 3 tests also run on transformers 4.57."""

from __future__ import annotations

import json

import pytest
from llama_models.llama3.tokenizer import Tokenizer as Llama3Reference
from llama_models.llama4.tokenizer import Tokenizer as Llama4Reference
from mistral_common.tokens.tokenizers.tekken import Tekkenizer
from tests.support.families import LLAMA3_MODEL, LLAMA4_MODEL, TEKKEN_FILES, WHISPER_ASSETS, mix_documents
from transformers import AutoTokenizer
from transformers.dynamic_module_utils import get_class_from_dynamic_module

import conversion
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

DOCS = mix_documents()


def differing(ours, reference, docs=DOCS) -> list[int]:
    return [i for i, doc in enumerate(docs) if ours(doc) != reference(doc)]


def family(name: str):
    """(engine tokenizer, the owner's encode with its BOS: ``bos=True``, no EOS)."""
    if name == "llama3":
        reference = Llama3Reference(LLAMA3_MODEL)
        return conversion.load(LLAMA3_MODEL), lambda d: reference.encode(d, bos=True, eos=False)
    if name == "llama4":
        reference = Llama4Reference(LLAMA4_MODEL)
        return conversion.load(LLAMA4_MODEL), lambda d: reference.encode(d, bos=True, eos=False)
    tekken = Tekkenizer.from_file(TEKKEN_FILES[name])
    return conversion.load(TEKKEN_FILES[name]), lambda d: tekken.encode(d, bos=True, eos=False)


@pytest.mark.parametrize("name", [pytest.param("llama3", marks=pytest.mark.transformers_compat), "llama4",
                                  "tekken_240718"])
def test_bbpe_tokenizer_and_fast_twin_equal_the_owner(name, tmp_path):
    tok, reference = family(name)
    hf = BBPETokenizer.from_engine(tok)
    assert hf.engine.mode == "ranks" and hf.add_bos_token and hf("Hi")["input_ids"] == reference("Hi")
    assert differing(lambda d: hf(d)["input_ids"], reference) == []
    hf.save_pretrained(tmp_path, remote_code=True)  # the remote-code class is checked below too
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["bpe_mode"] == "ranks"
    back = BBPETokenizer.from_pretrained(tmp_path)
    assert back.engine.mode == "ranks" and back.engine.vocab == tok.vocab
    assert back.engine.unmerged_tokens == tok.unmerged_tokens
    assert differing(lambda d: back(d)["input_ids"], reference) == []
    fast = AutoTokenizer.from_pretrained(tmp_path)
    assert not isinstance(fast, BBPETokenizer) and fast.bos_token == tok.roles.bos_token
    assert differing(lambda d: fast(d)["input_ids"], reference) == []
    assert fast("Hi", add_special_tokens=False)["input_ids"] == reference("Hi")[1:]
    # the slow files (vocab.json/merges.txt) carry the mode through tokenizer_config.json's bpe_mode
    # (the folder's remote-code slow class, by its auto_map name: transformers 5.x's AutoTokenizer takes the fast one)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    slow = get_class_from_dynamic_module(config["auto_map"]["AutoTokenizer"][0], tmp_path).from_pretrained(tmp_path)
    assert type(slow).__name__ == "BBPETokenizer" and slow.engine.mode == "ranks"
    assert differing(lambda d: slow(d)["input_ids"], reference) == []
    assert conversion.load(tmp_path).vocab == tok.vocab  # the folder, through its tokenizer.json


@pytest.mark.transformers_compat
def test_extended_llama3_in_transformers_keeps_every_old_id(tmp_path):
    tok, reference = family("llama3")
    code = [doc for doc in DOCS if "def " in doc]
    extended = tok.extend(code[: len(code) // 2], 25, progress=False)
    new_bytes = [extended.vocab[i] for i in set(extended.vocab) - set(tok.vocab)]
    untouched = [doc for doc in DOCS if not any(data in doc.encode("utf-8") for data in new_bytes)]
    hf = BBPETokenizer.from_engine(extended)
    hf.save_pretrained(tmp_path)
    fast = AutoTokenizer.from_pretrained(tmp_path)
    back = BBPETokenizer.from_pretrained(tmp_path)
    assert len(untouched) > 300
    assert extended.roles == tok.roles and extended.roles.add_bos_token
    for encode in (lambda d: hf(d)["input_ids"], lambda d: fast(d)["input_ids"], lambda d: back(d)["input_ids"]):
        assert differing(encode, reference, untouched) == []
        assert differing(encode, lambda d: [128000] + extended.encode_ordinary(d)) == []


def test_whisper_bbpe_tokenizer_and_fast_twin_equal_whisper(tmp_path):
    """Whisper (multilingual, 1608 special tokens) in transformers: BBPETokenizer, the saved folder
    loaded back, and its AutoTokenizer fast twin give whisper's own ids, on plain documents and on
    documents spelling special tokens (matched, as whisper's encode with allowed_special="all")."""
    from whisper.tokenizer import get_encoding

    reference = get_encoding("multilingual")
    tok = conversion.load_preset("whisper", WHISPER_ASSETS / "multilingual.tiktoken")
    docs = DOCS[:400]
    spelled = [f"<|startoftranscript|><|en|><|transcribe|><|0.00|>{doc[:200]}<|2.40|>{doc[200:]}<|endoftext|>"
               for doc in docs[:150]]
    hf = BBPETokenizer.from_engine(tok)
    hf.save_pretrained(tmp_path)
    back = BBPETokenizer.from_pretrained(tmp_path)
    fast = AutoTokenizer.from_pretrained(tmp_path)
    assert not isinstance(fast, BBPETokenizer) and back.engine.special_tokens == reference._special_tokens
    for encoder in (hf, back, fast):
        assert differing(lambda d: encoder(d)["input_ids"], reference.encode_ordinary, docs) == []
        assert differing(lambda d: encoder(d)["input_ids"], lambda d: reference.encode(d, allowed_special="all"),
                         spelled) == []
        assert encoder.convert_tokens_to_ids("<|notimestamps|>") == reference._special_tokens["<|notimestamps|>"]
