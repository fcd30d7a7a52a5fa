"""hf_bbpe: byte-level BPE (GPT-2 / GPT-4 / minbpe) as a first-class Hugging Face tokenizer.

Folders (imports go downward only; ARCHITECTURE.md has one row per folder):

* ``engine/``: ``Tokenizer``, ``BasicTokenizer``, ``RegexTokenizer`` and their layers
  (``chunking/``, ``encoding/``, ``training/``, ``files/``), with no transformers in them;
* ``hf/``: ``BBPETokenizer`` and the rest of the transformers integration;
* subpackages built on them: ``token_shards/``, ``distributed/`` (Ray), ``surgery/`` (torch),
  ``analysis/`` and ``cli/`` (the ``hf-bbpe`` command, on top of everything);
* ``conversion/`` (other formats) is a top-level package on the engine; it never imports ``cli``.

This module registers the one upward link, counting a Ray Dataset (the engine calls
``distributed.count_chunks`` through a hook), and loads Ray only when one is counted.

``import hf_bbpe`` loads the engine, whose only third-party import is ``regex``; tqdm (progress
bars) and multiprocessing (parallel counting and ``encode_batch``) load when first used.
``BBPETokenizer`` (transformers) and ``surgery`` (torch) load on first use too, and importing
hf_bbpe registers ``BBPETokenizer`` with ``AutoTokenizer`` as soon as transformers'
auto-tokenizer module is loaded (see auto_registration.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .engine.chunking.byte_unicode import bytes_to_unicode, unicode_to_bytes
from .engine.chunking.patterns import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, O200K_SPLIT_PATTERN, SPLIT_PATTERNS, resolve_pattern
from .engine.encoding.encoder import MissingByteError
from .engine.encoding.special_tokens import DisallowedSpecialToken, TokenRoles
from .engine.tokenizer import BasicTokenizer, RegexTokenizer, Tokenizer
from .engine.training.api import register_dataset_counter
from .engine.training.counting_reference import paragraphs
from .engine.training.parity import ParityConfig
from .engine.training.superwords import SuperwordConfig
from .hf.auto_registration import register_when_auto_tokenizer_loads

if TYPE_CHECKING:
    from . import surgery
    from .hf.tokenization_bbpe import BBPETokenizer

__version__ = "0.1.0"

__all__ = [
    "BBPETokenizer",
    "BasicTokenizer",
    "RegexTokenizer",
    "Tokenizer",
    "paragraphs",
    "ParityConfig",
    "SuperwordConfig",
    "DisallowedSpecialToken",
    "MissingByteError",
    "TokenRoles",
    "GPT2_SPLIT_PATTERN",
    "GPT4_SPLIT_PATTERN",
    "O200K_SPLIT_PATTERN",
    "SPLIT_PATTERNS",
    "resolve_pattern",
    "bytes_to_unicode",
    "unicode_to_bytes",
    "surgery",
]

_LAZY = {"BBPETokenizer": ".hf.tokenization_bbpe", "surgery": ".surgery"}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'hf_bbpe' has no attribute {name!r}")
    module = importlib.import_module(module_name, __name__)
    value = module if name == "surgery" else getattr(module, name)
    globals()[name] = value
    return value


def _count_ray_dataset(dataset: Any, tok: Tokenizer, text_column: str) -> Any:
    from .distributed import count_chunks

    return count_chunks(dataset, tok, text_column=text_column)


register_dataset_counter(_count_ray_dataset)
register_when_auto_tokenizer_loads()
