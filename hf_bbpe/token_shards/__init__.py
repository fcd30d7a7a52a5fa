"""Token shards for pretraining: a corpus encoded once into flat arrays a training loop memory-maps.

* :func:`write_token_shards` encodes a stream of documents into ``OUT/shard-NNNNN.tokens.npy``
  (uint16 when every id fits, else uint32; each document followed by the EOS id) and
  ``OUT/shard-NNNNN.offsets.npy`` (int64, one more than the documents: document ``i`` with its EOS
  is ``tokens[offsets[i]:offsets[i + 1]]``), recorded in ``OUT/manifest.json``. It resumes an
  interrupted run, and the folder is byte-identical however the encoding ran (one process, all
  cores, a Ray cluster).
* :func:`open_token_shards` memory-maps them back.
* ``format=`` writes the same tokens for a pretraining loader instead: ``nanogpt``
  (``train.bin``/``val.bin``), ``llmc`` (llm.c / modded-nanogpt), ``megatron`` (Megatron-Core's
  ``.bin``/``.idx``), ``olmo`` (OLMo-core's memmaps); one module each, listed in ``formats.py``.

``hf-bbpe encode-corpus`` is the command line for it. Nothing here imports Ray; the Ray encoder
comes from ``hf_bbpe.distributed``.
"""

from __future__ import annotations

from .formats import FORMATS
from .layout import MANIFEST, TokenShard, open_token_shards, read_manifest, token_dtype
from .writer import local_encoder, tokenizer_sha256, write_token_shards

__all__ = [
    "FORMATS",
    "MANIFEST",
    "TokenShard",
    "local_encoder",
    "open_token_shards",
    "read_manifest",
    "token_dtype",
    "tokenizer_sha256",
    "write_token_shards",
]
