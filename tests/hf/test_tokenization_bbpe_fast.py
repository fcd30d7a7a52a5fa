"""``BBPETokenizerFast``: the fast class that the ``auto_map`` of a folder saved with
``remote_code=True`` names, so that ``trust_remote_code=True`` (vLLM, SGLang) gives a fast
tokenizer that xgrammar accepts. (A default folder has no code: every path gives transformers'
fast class from tokenizer.json, the "plain" path below.)

* xgrammar's ``TokenizerInfo.from_huggingface`` (the real package) takes the folder's remote fast
  class and its plain fast twin: vocabulary size, decoded vocabulary and stop token are ours, and
  its built-in JSON grammar accepts our ids of JSON documents (before, ``trust_remote_code=True``
  gave the slow class, which xgrammar refuses);
* the fast class saved again (as a fine-tuning run saves the tokenizer beside its checkpoint)
  gives a folder that loads on every path with the same ids.
Runs on 5.x and 4.57, where hf_bbpe cannot be imported.
"""

from __future__ import annotations

import json

import pytest
from tests.support.hf import EOT, load_elsewhere, mix_docs, run_python, trained_engine

from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer, BBPETokenizerFast

pytestmark = pytest.mark.transformers_compat

JSON_DOCS = [
    {"name": "Zoë Ørsted", "tags": ["naïve", "日本語", "ok"], "n": 12.5, "nested": {"a": [1, 2, {"b": None}]}},
    {"query": "SELECT * FROM t WHERE x > 3", "ok": True, "emoji": "🙂", "path": "C:\\temp\\x"},
    [{"id": i, "text": f"item {i} — Привет"} for i in range(3)],
]

XGRAMMAR_CHECK = """
import json, sys
import xgrammar as xgr
from transformers import AutoTokenizer
folder, docs = sys.argv[1], json.loads(sys.argv[2])
out = {}
for name, options in (("remote", {"trust_remote_code": True}), ("plain", {})):
    tok = AutoTokenizer.from_pretrained(folder, **options)
    info = xgr.TokenizerInfo.from_huggingface(tok)
    compiled = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
    accepted = []
    for doc in docs:
        matcher = xgr.GrammarMatcher(compiled)
        ids = tok(json.dumps(doc, ensure_ascii=False))["input_ids"]
        accepted.append([all(matcher.accept_token(i) for i in ids), matcher.accept_token(tok.eos_token_id),
                         matcher.is_terminated()])
    broken = xgr.GrammarMatcher(compiled)
    rejected = not all(broken.accept_token(i) for i in tok('{"a": tru e}')["input_ids"])
    out[name] = {"class": type(tok).__name__, "len": len(tok), "vocab_type": info.vocab_type.name,
                 "vocab_size": info.vocab_size, "stop": info.stop_token_ids,
                 "decoded": [token.hex() for token in info.decoded_vocab], "accepted": accepted,
                 "rejected": rejected}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def hf() -> BBPETokenizer:
    tok = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, pad_token="<|pad|>")
    tok.add_tokens(["<x>"])
    return tok


@pytest.fixture(scope="module")
def folder(hf, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved")
    hf.save_pretrained(path, remote_code=True)
    return path


def test_xgrammar_takes_the_folders_fast_class(hf, folder, tmp_path):
    out = run_python(f"import sys\nsys.argv = ['-', {str(folder)!r}, {json.dumps(JSON_DOCS)!r}]\n" + XGRAMMAR_CHECK,
                     tmp_path, block_hf_bbpe=True)
    loaded = json.loads(out.splitlines()[-1])
    added = {idx: token.content.encode() for idx, token in hf.added_tokens_decoder.items()}
    expected = [hf.engine.vocab.get(idx, added.get(idx)).hex() for idx in range(len(hf))]
    assert loaded["remote"]["class"] == "BBPETokenizerFast"
    for name, info in loaded.items():
        assert info["len"] == info["vocab_size"] == len(hf) == 1033, name  # 1024..1029 hold reserved tokens
        assert info["vocab_type"] == "BYTE_LEVEL" and info["stop"] == [hf.eos_token_id], name
        assert info["decoded"] == expected, name
        assert info["accepted"] == [[True, True, True]] * len(JSON_DOCS), name
        assert info["rejected"], name


def test_the_fast_class_in_process_gives_the_same_ids(hf, folder):
    fast = BBPETokenizerFast.from_pretrained(folder)
    docs = mix_docs()[:40] + [f"a{EOT}b <x> c"]
    assert [fast(doc)["input_ids"] for doc in docs] == [hf(doc)["input_ids"] for doc in docs]
    assert len(fast) == len(fast.get_vocab()) == len(hf)


def test_the_fast_class_saves_a_folder_that_loads_everywhere(hf, folder, tmp_path):
    """Loaded with trust_remote_code where hf_bbpe cannot be imported, given one more token and
    saved again: the new folder has the same files, and every load path (BBPETokenizer, the
    plain twin, both remote classes) gives the same ids, the new token included."""
    again = tmp_path / "again"
    run_python(
        f"""
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained({str(folder)!r}, trust_remote_code=True)
        assert type(tok).__name__ == "BBPETokenizerFast", type(tok)
        tok.add_tokens(["<y>"])
        tok.save_pretrained({str(again)!r})
        """,
        tmp_path, block_hf_bbpe=True)
    names = {path.name for path in folder.iterdir()}
    assert {path.name for path in again.iterdir()} - {"special_tokens_map.json"} == names - {"special_tokens_map.json"}
    for name in ("vocab.json", "merges.txt", "tokenization_bbpe.py"):
        assert (again / name).read_bytes() == (folder / name).read_bytes(), name
    config = json.loads((again / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert config["auto_map"]["AutoTokenizer"] == ["tokenization_bbpe.BBPETokenizer",
                                                   "tokenization_bbpe.BBPETokenizerFast"]
    assert config["pattern"] == hf.engine.plain_pattern and config["bpe_mode"] == hf.engine.mode

    docs = mix_docs()[:40] + [f"a{EOT}b <x> c<y>d"]
    grown = BBPETokenizer.from_pretrained(folder)
    grown.add_tokens(["<y>"])
    expected = [grown(doc)["input_ids"] for doc in docs]
    assert expected[-1][-2:] == [1033, grown.convert_tokens_to_ids("d")]
    assert [BBPETokenizer.from_pretrained(again)(doc)["input_ids"] for doc in docs] == expected
    text_file = tmp_path / "docs.json"
    text_file.write_text(json.dumps(docs), encoding="utf-8")
    loaded = load_elsewhere(str(again), text_file, tmp_path)
    for path in ("plain", "remote", "remote_slow"):
        assert loaded[path]["ids"] == expected, path
        assert loaded[path]["len"] == loaded[path]["entries"] == 1034, path
