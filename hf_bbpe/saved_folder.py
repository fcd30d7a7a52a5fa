"""What a saved :class:`BBPETokenizer` folder holds beyond ``vocab.json`` + ``merges.txt``:

* ``tokenizer.json``, the fast twin: the engine's file (tokenizer_json_writer.py) plus the
  added tokens with their flags and a template that puts ``bos``/``eos`` around sequences;
* ``tokenizer_config.json`` rewritten so that transformers 4.57 and 5.x read it alike, with or
  without hf_bbpe: the class name ``PreTrainedTokenizerFast`` (which every version resolves),
  ``auto_map`` pointing ``trust_remote_code=True`` at BBPETokenizer, and the model input names
  (``input_ids``, ``attention_mask``: without them 4.57's fast tokenizer also returns
  ``token_type_ids``, which GPT-2's forward adds to the embeddings);
* the remote code: exactly the modules of :data:`REMOTE_CODE_MODULES`.

This module is also copied into model folders as remote code: it imports only flat sibling
modules, relatively, and third-party libraries that transformers already needs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .atomic_write import write_bytes_atomic, write_text_atomic
from .tokenizer_json_writer import tokenizer_json_dict

if TYPE_CHECKING:
    from .tokenization_bbpe import BBPETokenizer
    from .tokenizer import Tokenizer

REMOTE_CODE_MODULES = (
    # the transformers class and its helpers
    "tokenization_bbpe",
    "transformers_compat",
    "added_tokens",
    "encode_outputs",
    "saved_folder",
    "vocab_merges_files",
    "tokenizer_json_writer",
    "onig_regex",  # tokenizer.json holds the split pattern in Oniguruma's syntax: saving translates it
    # the engine
    "tokenizer",
    "token_ids",
    "token_offsets",
    "chunk_encoder",
    "chunk_counting",
    "batch_encoding",
    "trainer",
    "patterns",
    "special_tokens",
    "byte_unicode",
    "model_file",
    "progress",
    "atomic_write",
    "worker_pool",
    "merge_loop",
    "normalizers",
    "pre_tokenizers",
    "unicode_tables",
)
"""The modules (flat siblings, ``.py``) that a saved folder carries for ``trust_remote_code=True``:
tokenization_bbpe.py and every module it needs, directly or not. transformers 4.57 copies only
the modules that a local folder's tokenization_bbpe.py imports *directly*, so that file imports
each of these itself; tests check both lists against the real import closure."""

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
PORTABLE_TOKENIZER_CLASS = "PreTrainedTokenizerFast"
"""The class ``tokenizer_config.json`` names: resolvable by transformers 4.57 and 5.x alike."""
REMOTE_CODE_CLASS = "tokenization_bbpe.BBPETokenizer"

_ADDED_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")
# what transformers writes but a folder must not carry: machine paths, 5.x-only keys
_DROPPED_KEYS = ("backend", "is_local", "local_files_only", "tokenizer_file", "vocab_file", "merges_file")


def copy_remote_code(folder: str | os.PathLike) -> list[str]:
    """Copy the modules of :data:`REMOTE_CODE_MODULES` from beside this module into ``folder``."""
    source = Path(__file__).parent
    written = []
    for name in REMOTE_CODE_MODULES:
        target = Path(folder) / f"{name}.py"
        write_bytes_atomic(target, (source / f"{name}.py").read_bytes())
        written.append(str(target))
    return written


def fast_twin_json(tok: BBPETokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` content for ``tok``: added tokens and bos/eos included."""
    engine = tok.engine
    added = tok.added_tokens_decoder
    engine_specials = set(engine.special_tokens.values())
    normal_ids = set(engine.vocab) - engine_specials
    extra = [
        {"id": idx, "content": token.content, **{flag: getattr(token, flag) for flag in _ADDED_FLAGS}}
        for idx, token in added.items()
        if idx not in engine_specials and idx not in normal_ids
    ]
    data = tokenizer_json_dict(engine, added_tokens_extra=extra)
    for entry in data["added_tokens"]:
        token = added.get(entry["id"])
        if token is not None:
            entry.update({flag: bool(getattr(token, flag)) for flag in _ADDED_FLAGS})
    bos = tok.bos_token if tok.add_bos_token else None
    eos = tok.eos_token if tok.add_eos_token else None
    if bos or eos:
        data["post_processor"] = {
            "type": "Sequence",
            "processors": [data["post_processor"], _template_processing(tok, bos, eos)],
        }
    return data


def _template_processing(tok: BBPETokenizer, bos: str | None, eos: str | None) -> dict[str, Any]:
    def side(type_id: int, sequence: str) -> list[dict[str, Any]]:
        items = [{"SpecialToken": {"id": bos, "type_id": type_id}}] if bos else []
        items.append({"Sequence": {"id": sequence, "type_id": type_id}})
        if eos:
            items.append({"SpecialToken": {"id": eos, "type_id": type_id}})
        return items

    return {
        "type": "TemplateProcessing",
        "single": side(0, "A"),
        "pair": side(0, "A") + side(1, "B"),
        "special_tokens": {token: {"id": token, "ids": [tok.convert_tokens_to_ids(token)], "tokens": [token]}
                           for token in (bos, eos) if token},
    }


def write_portable_config(config_file: str | os.PathLike, tok: BBPETokenizer) -> None:
    """Rewrite the ``tokenizer_config.json`` that transformers wrote into the form both majors read."""
    path = Path(config_file)
    config = portable_config(json.loads(path.read_text(encoding="utf-8")), tok)
    write_text_atomic(path, json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def portable_config(config: Mapping[str, Any], tok: BBPETokenizer) -> dict[str, Any]:
    """``config`` as transformers 4.57 and 5.x, with or without hf_bbpe, read it the same way.

    5.x writes extra special tokens as a list under ``extra_special_tokens`` (4.57 wants a dict
    there; both read a list under ``additional_special_tokens``), names the class
    ``BBPETokenizer`` (unknown without this package), drops ``add_bos_token``/``add_eos_token``
    and adds a ``backend`` key that 4.57 does not know.
    """
    config = dict(config)
    config["tokenizer_class"] = PORTABLE_TOKENIZER_CLASS
    config["auto_map"] = {"AutoTokenizer": [REMOTE_CODE_CLASS, None]}
    for key in _DROPPED_KEYS:
        config.pop(key, None)
    extras = config.pop("extra_special_tokens", None)
    if isinstance(extras, list) and extras:
        config["additional_special_tokens"] = extras
    elif isinstance(extras, dict) and extras:
        config["extra_special_tokens"] = extras
    if not config.get("additional_special_tokens"):
        config.pop("additional_special_tokens", None)
    engine = tok.engine
    config["pattern"] = engine.plain_pattern
    config["bpe_mode"] = engine.mode
    if config["pattern"] is None:
        config["pre_tokenizer"] = engine.pre_tokenizer.to_json()
    if engine.normalizer is not None:
        config["normalizer"] = engine.normalizer.to_json()
    if adds_prefix_space(engine):
        # transformers 4.57's fast class resets a ByteLevel pre-tokenizer's add_prefix_space to
        # this key (False when absent)
        config["add_prefix_space"] = True
    config["add_bos_token"] = tok.add_bos_token
    config["add_eos_token"] = tok.add_eos_token
    config["clean_up_tokenization_spaces"] = bool(tok.clean_up_tokenization_spaces)
    config["model_input_names"] = list(tok.model_input_names)
    return config


def adds_prefix_space(engine: Tokenizer) -> bool:
    """Whether the engine's pre-tokenizer is one ByteLevel step that adds a prefix space."""
    pre = engine.pre_tokenizer
    return pre is not None and pre.to_json()["type"] == "ByteLevel" and bool(pre.add_prefix_space)


def bos_eos_from_tokenizer_json(path: str | os.PathLike | None) -> tuple[bool, bool]:
    """Whether the post-processor of a tokenizer.json adds a special token before / after ``$A``.

    transformers 5.x drops ``add_bos_token``/``add_eos_token`` from the config it passes when a
    tokenizer.json exists (that file is its source of truth); read them back from there.
    """
    if path is None or not os.path.isfile(path):
        return False, False
    with open(path, encoding="utf-8") as handle:
        processor = json.load(handle).get("post_processor") or {}
    processors = processor.get("processors", [processor]) if processor.get("type") == "Sequence" else [processor]
    for item in processors:
        if item.get("type") == "TemplateProcessing":
            single = item.get("single") or []
            return (bool(single) and "SpecialToken" in single[0], bool(single) and "SpecialToken" in single[-1])
    return False, False
