"""A saved ``BBPETokenizer`` folder as the tokenizer of datatrove's ``DocumentTokenizer``, HF's
pretraining-data tool: datatrove loads the folder's ``tokenizer.json`` with the ``tokenizers``
library, and the ids it writes (one EOS after each document) equal the engine's, and the tokens
of ``hf-bbpe encode-corpus`` on the same documents. Everything runs on local files (no Hub).

datatrove is the ``datatrove`` extra (it needs huggingface_hub>=1.6, which transformers 4.57's
venv cannot take), installed beside ``test`` in .venv; it is imported inside the test, so that
the 4.57 venv (which runs only ``transformers_compat`` tests) collects this module without it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from hf_bbpe import BBPETokenizer
from hf_bbpe.token_shards import write_token_shards
from tests.support.hf import EOT, mix_docs, trained_engine
from tests.support.shards import shard_documents


def test_document_tokenizer_writes_the_engines_ids(tmp_path):
    pytest.importorskip("datatrove", reason="pip install 'hf_bbpe[datatrove]'")
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer

    docs = mix_docs()
    assert not any(EOT in doc for doc in docs)
    tok = trained_engine(1024)
    folder = tmp_path / "tok"
    BBPETokenizer.from_engine(tok, eos_token=EOT).save_pretrained(folder)
    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "docs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": str(i), "text": doc}) + "\n" for i, doc in enumerate(docs))
    pipeline = [
        JsonlReader(str(tmp_path / "data")),
        DocumentTokenizer(str(tmp_path / "tokens"), tokenizer_name_or_path=str(folder / "tokenizer.json"),
                          eos_token=EOT, shuffle_documents=False, save_filename="mix"),
    ]
    LocalPipelineExecutor(pipeline, tasks=1, workers=1, logging_dir=str(tmp_path / "logs")).run()
    (ds_file,) = (tmp_path / "tokens").glob("*.ds")
    tokens = np.fromfile(ds_file, dtype=np.uint16)
    ends = np.fromfile(f"{ds_file}.index", dtype=np.uint64).astype(np.int64)
    written = [tokens[a:b].tolist() for a, b in zip(np.concatenate(([0], ends[:-1])), ends)]
    eos = tok.special_tokens[EOT]
    assert written == [tok.encode_ordinary(doc) + [eos] for doc in docs]
    write_token_shards(docs, tok, tmp_path / "shards", eos_id=eos, progress=False)
    assert shard_documents(tmp_path / "shards") == written
