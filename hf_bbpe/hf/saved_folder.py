"""What a saved :class:`BBPETokenizer` folder holds beyond ``vocab.json`` + ``merges.txt``:

* ``tokenizer.json``, the fast twin: the engine's file (tokenizer_json_writer.py) plus the
  added tokens with their flags and a template that puts ``bos``/``eos`` around sequences;
* ``tokenizer_config.json`` rewritten so that transformers 4.57 and 5.x read it alike, with or
  without hf_bbpe: the class name ``PreTrainedTokenizerFast`` (which every version resolves),
  with ``remote_code=True`` an ``auto_map`` pointing ``trust_remote_code=True`` at
  BBPETokenizerFast (BBPETokenizer with ``use_fast=False``), the chat template inline, and the model input names (``input_ids``,
  ``attention_mask``: without them 4.57's fast tokenizer also returns ``token_type_ids``, which
  GPT-2's forward adds to the embeddings);
* ``generation_config.json`` with the stop tokens (a chat preset's end of turn) as eos ids;
* with ``remote_code=True`` only, the code: the flattened import closure of tokenization_bbpe.py
  (remote_code.py).

A save owns the files of :func:`saved_files` (a tokenizer's files and the remote code): saving
into a folder replaces the folder whole (atomic_write.replaced_folder), keeping every other file
(weights, ``config.json``, a README, ``generation_config.json``, which the save updates) and
dropping the owned files it does not write again. :func:`check_folder_agrees` refuses a folder
whose tokenizer files come from different tokenizers.

This module is part of the remote code: it imports hf_bbpe modules relatively, and third-party
libraries that transformers already needs.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.chunking.byte_unicode import token_to_unicode
from ..engine.encoding.special_tokens import TokenRoles
from ..engine.files.atomic_write import recover_folder, write_bytes_atomic, write_text_atomic
from ..engine.files.minbpe_model import HEADERS as MODEL_FILE_HEADERS
from ..engine.files.minbpe_model import read_model_file
from .remote_code import ENTRY_MODULE, remote_code_names, write_remote_code
from .tokenizer_json_writer import template_bos_eos, tokenizer_json_dict

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase as BBPETokenizer  # tokenization_bbpe.py imports this module

    from ..engine.tokenizer import Tokenizer

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
GENERATION_CONFIG = "generation_config.json"
PORTABLE_TOKENIZER_CLASS = "PreTrainedTokenizerFast"
"""The class ``tokenizer_config.json`` names: resolvable by transformers 4.57 and 5.x alike."""
REMOTE_CODE_CLASS = "tokenization_bbpe.BBPETokenizer"
REMOTE_CODE_FAST_CLASS = "tokenization_bbpe.BBPETokenizerFast"
"""What ``auto_map`` names: ``AutoTokenizer.from_pretrained(folder, trust_remote_code=True)``
takes the fast one unless ``use_fast=False`` (4.57; 5.x always takes the fast one)."""

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json",
                   "added_tokens.json", "chat_template.jinja", "chat_template.json", "additional_chat_templates",
                   "tokenizer.model", "tokenizer.vocab")
"""The tokenizer files a folder holds (names after the prefix): transformers' (both majors), ours,
and the minbpe-style pair ``hf-bbpe train`` adds."""


class MixedFolderError(ValueError):
    """A folder whose tokenizer files come from different tokenizers; the message names them."""


def saved_files(prefix: str = "") -> frozenset[str]:
    """The names a save of a tokenizer owns in its folder (``prefix``: ``save_pretrained``'s
    ``filename_prefix`` with its dash): :data:`TOKENIZER_FILES` and the remote code's files (a
    save without remote code removes those of an earlier one). Every other file is kept."""
    return frozenset(prefix + name for name in TOKENIZER_FILES) | remote_code_names(remote_code_entry())


_ADDED_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")
# what transformers writes but a folder must not carry: machine paths, 5.x-only keys
_DROPPED_KEYS = ("backend", "is_local", "local_files_only", "tokenizer_file", "vocab_file", "merges_file")


def remote_code_entry() -> Path:
    """tokenization_bbpe.py, beside this module (in hf_bbpe/hf/, or in a flat remote-code folder)."""
    return Path(__file__).with_name(f"{ENTRY_MODULE}.py")


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
    # BBPETokenizer's own roles: their tokens may be added tokens the engine does not hold
    roles = TokenRoles(bos_token=None if tok.bos_token is None else str(tok.bos_token),
                       eos_token=None if tok.eos_token is None else str(tok.eos_token),
                       add_bos_token=tok.add_bos_token, add_eos_token=tok.add_eos_token)
    data = tokenizer_json_dict(engine, added_tokens_extra=extra, roles=roles)
    for entry in data["added_tokens"]:
        token = added.get(entry["id"])
        if token is not None:
            entry.update({flag: bool(getattr(token, flag)) for flag in _ADDED_FLAGS})
    return data


def write_portable_config(config_file: str | os.PathLike, tok: Any, add_bos_eos: tuple[bool, bool],
                          remote_code: bool = False) -> None:
    """Rewrite the ``tokenizer_config.json`` that transformers wrote into the form both majors read."""
    path = Path(config_file)
    config = portable_config(json.loads(path.read_text(encoding="utf-8")), tok, add_bos_eos, remote_code)
    write_text_atomic(path, json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def portable_config(config: Mapping[str, Any], tok: Any, add_bos_eos: tuple[bool, bool],
                    remote_code: bool = False) -> dict[str, Any]:
    """``config`` as transformers 4.57 and 5.x, with or without hf_bbpe, read it the same way.

    5.x writes extra special tokens as a list under ``extra_special_tokens`` (4.57 wants a dict
    there; both read a list under ``additional_special_tokens``), names the class
    ``BBPETokenizer`` (unknown without this package), drops ``add_bos_token``/``add_eos_token``
    and adds a ``backend`` key that 4.57 does not know. Both write the chat template only to
    ``chat_template.jinja``; it goes inline too, where TGI, transformers.js and Ollama's
    converter read it. ``tok`` is a BBPETokenizer (its engine's split and mode are written) or
    the BBPETokenizerFast loaded from such a folder (whose config already holds them);
    ``add_bos_eos`` says whether sequences get ``bos_token`` / ``eos_token``; ``auto_map`` is
    written only with ``remote_code``.
    """
    config = dict(config)
    config["tokenizer_class"] = PORTABLE_TOKENIZER_CLASS
    config.pop("auto_map", None)
    if remote_code:
        config["auto_map"] = {"AutoTokenizer": [REMOTE_CODE_CLASS, REMOTE_CODE_FAST_CLASS]}
    for key in _DROPPED_KEYS:
        config.pop(key, None)
    extras = config.pop("extra_special_tokens", None)
    if isinstance(extras, list) and extras:
        config["additional_special_tokens"] = extras
    elif isinstance(extras, dict) and extras:
        config["extra_special_tokens"] = extras
    if not config.get("additional_special_tokens"):
        config.pop("additional_special_tokens", None)
    engine = getattr(tok, "engine", None)
    if engine is not None:
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
    if not config.get("added_tokens_decoder"):  # 5.x's fast class keeps them in tokenizer.json only
        config["added_tokens_decoder"] = {str(idx): token.__getstate__()
                                          for idx, token in sorted(tok.added_tokens_decoder.items())}
    config["add_bos_token"], config["add_eos_token"] = add_bos_eos
    stop = stop_tokens_of(tok)
    if stop:
        config["stop_tokens"] = stop
    config["clean_up_tokenization_spaces"] = bool(tok.clean_up_tokenization_spaces)
    config["model_input_names"] = list(tok.model_input_names)
    template = tok.chat_template
    if isinstance(template, str):
        config["chat_template"] = template
    elif isinstance(template, Mapping) and template:  # named templates: transformers' inline list form
        config["chat_template"] = [{"name": name, "template": text} for name, text in template.items()]
    else:
        config.pop("chat_template", None)
    return config


def finish_saved_folder(folder: str | os.PathLike, tok: Any, prefix: str, add_bos_eos: tuple[bool, bool],
                        remote_code: bool = False) -> None:
    """After transformers' ``save_pretrained`` of either class: the portable config, the stop
    tokens in ``generation_config.json`` and, with ``remote_code``, the code (remote_code.py)."""
    write_portable_config(Path(folder) / (prefix + TOKENIZER_CONFIG), tok, add_bos_eos, remote_code)
    write_generation_config(folder, tok)
    if remote_code:
        write_remote_code(folder, remote_code_entry())


def stop_tokens_of(tok: Any) -> list[str]:
    """The tokens that end a turn (a chat preset's ``<|im_end|>``): BBPETokenizer's
    ``stop_tokens``, or the ``stop_tokens`` of the config a BBPETokenizerFast was loaded from."""
    stop = getattr(tok, "stop_tokens", None) or tok.init_kwargs.get("stop_tokens") or []
    return [str(token) for token in stop]


def write_generation_config(folder: str | os.PathLike, tok: Any) -> None:
    """Write the stop tokens' ids, then ``eos_token``'s, as ``eos_token_id`` of ``generation_config.json``
    (where transformers' ``generate`` and vLLM take the ids that end generation), with bos and pad.
    A file already there (a model's) keeps its settings and its eos ids, after these."""
    stop = stop_tokens_of(tok)
    if not stop:
        return
    path = Path(folder) / GENERATION_CONFIG
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    ids = [tok.convert_tokens_to_ids(token) for token in stop]
    if tok.eos_token_id is not None:
        ids.append(tok.eos_token_id)
    known = config.get("eos_token_id")
    ids += known if isinstance(known, list) else [known] if known is not None else []
    config["eos_token_id"] = list(dict.fromkeys(ids))
    for key in ("bos_token_id", "pad_token_id"):
        if config.get(key) is None and getattr(tok, key) is not None:
            config[key] = getattr(tok, key)
    write_text_atomic(path, json.dumps(config, indent=2, sort_keys=True) + "\n")


def copy_slow_files(folder: str | os.PathLike, prefix: str, sources: Mapping[str, Any]) -> list[str]:
    """Copy ``vocab.json`` and ``merges.txt`` (``sources``: ``vocab_file``/``merges_file`` -> the
    path a fast tokenizer was loaded with) into ``folder``: BBPETokenizer reads them, the fast
    class only carries them along. A source that is missing is skipped."""
    written = []
    for key, name in (("vocab_file", "vocab.json"), ("merges_file", "merges.txt")):
        source = sources.get(key)
        target = Path(folder) / (prefix + name)
        if source and os.path.isfile(source) and Path(source).resolve() != target.resolve():
            write_bytes_atomic(target, Path(source).read_bytes())
            written.append(str(target))
    return written


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
        bos, eos = template_bos_eos(json.load(handle).get("post_processor"))
    return bos is not None, eos is not None


# ---------------------------------------------------------------- do a folder's files agree?

_agreement_cache: dict[tuple, str | None] = {}


def recover_and_check(path: str | os.PathLike) -> None:
    """What our loaders do before reading a local folder: finish or roll back a save that was
    killed while switching folders (atomic_write.recover_folder), then :func:`check_folder_agrees`."""
    path = Path(path)
    if path.is_dir() or (not path.exists() and path.parent.is_dir()):
        recover_folder(path)
    if path.is_dir():
        check_folder_agrees(path)


def check_folder_agrees(folder: str | os.PathLike) -> None:
    """Raise :class:`MixedFolderError` (one line naming the files) if the merges of the folder's
    ``tokenizer.json``, ``vocab.json`` + ``merges.txt`` and ``tokenizer.model`` (minbpe/hf_bbpe
    form), or the vocabulary sizes of the first two, disagree: files of two tokenizers, which
    loaders would read differently. Files that are absent, or of other kinds, are not compared.
    The answer is cached by the files' sizes and modification times."""
    problem = folder_disagreement(folder)
    if problem:
        raise MixedFolderError(problem)


def folder_disagreement(folder: str | os.PathLike) -> str | None:
    """:func:`check_folder_agrees`'s message, or None when the files agree."""
    folder = Path(folder)
    names = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer.model")
    stats = []
    for name in names:
        try:
            st = os.stat(folder / name)
        except OSError:
            continue
        stats.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    present = {name for name, *_ in stats}
    if "tokenizer.model" in present and not _is_model_file(folder / "tokenizer.model"):
        present.discard("tokenizer.model")  # Meta's or sentencepiece's: not compared
    kinds = ("tokenizer.json" in present) + ({"vocab.json", "merges.txt"} <= present) + ("tokenizer.model" in present)
    if kinds < 2:
        return None  # nothing to compare
    key = (str(folder.absolute()), tuple(stats))
    if key not in _agreement_cache:
        _agreement_cache[key] = _disagreement(folder, present)
    return _agreement_cache[key]


def _disagreement(folder: Path, present: set[str]) -> str | None:
    # each source: (its normal vocabulary's size or None, its merges as merges.txt lines "a b")
    sources: dict[str, tuple[int | None, list[str]]] = {}
    added: set = set()  # tokenizer.json's added tokens: not counted in either vocabulary
    vocab: dict | None = None
    if "tokenizer.json" in present:
        try:
            data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
            model = data.get("model") or {}
        except (OSError, ValueError, AttributeError):
            data, model = {}, {}
        if model.get("type") == "BPE" and isinstance(model.get("merges"), list) and isinstance(model.get("vocab"), dict):
            added = {entry.get("content") for entry in data.get("added_tokens") or () if isinstance(entry, dict)}
            merges = [m if isinstance(m, str) else " ".join(map(str, m)) for m in model["merges"]]
            if all(_merge_of(merge, model["vocab"]) for merge in merges):  # else left to its reader
                vocab = model["vocab"]
                sources["tokenizer.json"] = (len(vocab.keys() - added), merges)
    if {"vocab.json", "merges.txt"} <= present:
        try:
            with open(folder / "vocab.json", encoding="utf-8") as handle:
                pair_vocab = json.load(handle)
            with open(folder / "merges.txt", encoding="utf-8") as handle:
                lines = handle.read().splitlines()
            if lines and lines[0].startswith("#version"):
                del lines[0]
            lines = [line for line in lines if line]
            if isinstance(pair_vocab, dict) and all(_merge_of(line, pair_vocab) for line in lines):
                # (a malformed pair is left to its reader, whose error names the line)
                sources["vocab.json + merges.txt"] = (len(pair_vocab.keys() - added), lines)
                vocab = pair_vocab if vocab is None else vocab
        except (OSError, ValueError, AttributeError):
            pass
    extra_merges = model.get("ignore_merges") is True if "tokenizer.json" in sources else False
    if extra_merges:
        # ranks mode: tokenizer.json also lists merges that rebuild tokens no single merge makes
        # (conversion.merge_list_export); the other files' merges must stand in it, in order
        size, merges = sources.pop("tokenizer.json")
        others = [m for _, ms in sources.values() for m in ms]
        if not others and "tokenizer.model" in present:
            others = _model_file_merges(folder / "tokenizer.model") or []
        if others:
            wanted = set(others)
            merges = [m for m in merges if m in wanted]
        sources["tokenizer.json"] = (size, merges)
    if "tokenizer.model" in present and sources:
        reference = next(iter(sources.values()))[1]
        same = _model_file_has_merges(folder / "tokenizer.model", reference, vocab)
        if same:
            sources["tokenizer.model"] = (None, reference)
        elif same is not None:  # differs: read it whole, for the message
            merges = _model_file_merges(folder / "tokenizer.model")
            if merges is not None:
                sources["tokenizer.model"] = (None, merges)
    if len(sources) < 2:
        return None
    digests = {name: (len(merges), hashlib.sha256("\n".join(merges).encode()).hexdigest())
               for name, (_, merges) in sources.items()}
    if len(set(digests.values())) > 1:
        groups: dict[tuple[int, str], list[str]] = {}
        for name, digest in digests.items():
            groups.setdefault(digest, []).append(name)
        counts = {count for count, _ in groups}
        parts = [f"{', '.join(names)}: {count:,} merges" + ("" if len(counts) > 1 else f" (sha256 {digest[:12]})")
                 for (count, digest), names in groups.items()]
        return (f"{folder}: its tokenizer files hold different tokenizers ({'; '.join(parts)}): files of two saves "
                "(one killed midway, or files copied in); save the tokenizer into the folder again or remove the "
                "stale files")
    sizes = {name: size for name, (size, _) in sources.items() if size is not None}
    if len(set(sizes.values())) > 1:
        parts = [f"{name}: {size:,} tokens" for name, size in sizes.items()]
        return (f"{folder}: its tokenizer files hold different vocabularies ({'; '.join(parts)}): files of two saves "
                "(one killed midway, or files copied in); save the tokenizer into the folder again or remove the "
                "stale files")
    return None


def _merge_of(line: str, vocab: dict) -> bool:
    """Whether ``line`` is a merges.txt merge of two tokens of ``vocab``."""
    left, space, right = line.partition(" ")
    return bool(space) and left in vocab and right in vocab


def _is_model_file(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.readline().rstrip(b"\r\n").decode("ascii", "replace") in MODEL_FILE_HEADERS
    except OSError:
        return False


def _model_file_has_merges(path: Path, merges: list[str], vocab: dict | None) -> bool | None:
    """Whether the minbpe/hf_bbpe ``.model`` ``path`` holds exactly ``merges`` (``"a b"``, spelled as
    in ``vocab``, token -> id), without parsing it whole: its last ``len(merges)`` lines must be
    these merges by id, and the line before them no merge. None for another kind of file; False
    may also mean "written otherwise" (the caller then parses the file)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            header = handle.readline().rstrip("\r\n")
            if header not in MODEL_FILE_HEADERS:
                return None
            lines = handle.read().splitlines()
    except OSError:
        return None
    if vocab is None or len(lines) <= len(merges):
        return False
    width = 2 if header == MODEL_FILE_HEADERS[0] else 3  # minbpe v1: "a b"; ours: "a b new"
    before = lines[len(lines) - len(merges) - 1].split()
    if len(before) == width and all(field.isdigit() for field in before):
        return False  # the file holds more merges
    pairs = (merge.split(" ", 1) for merge in merges)
    try:  # as save writes them; another spacing only costs the whole parse (the caller's)
        if width == 2:
            expected = [f"{vocab[left]} {vocab[right]}" for left, right in pairs]
        else:
            expected = [f"{vocab[left]} {vocab[right]} {vocab[left + right]}" for left, right in pairs]
    except (KeyError, ValueError):
        return False
    return lines[len(lines) - len(merges):] == expected


def _model_file_merges(path: Path) -> list[str] | None:
    """The merges of a minbpe/hf_bbpe ``.model`` spelled as in ``merges.txt``; None for another
    kind of file (Meta's or sentencepiece's ``tokenizer.model``) or one that does not read."""
    try:
        with open(path, "rb") as handle:
            if handle.readline().rstrip(b"\r\n").decode("ascii", "replace") not in MODEL_FILE_HEADERS:
                return None
        contents = read_model_file(path)
    except (OSError, ValueError):
        return None
    tokens: dict[int, bytes] = {idx: bytes([byte]) for byte, idx in enumerate(contents.byte_ids) if idx >= 0}
    tokens.update(contents.unmerged)
    spelled: list[str] = []
    for (a, b), new in contents.merges.items():
        tokens[new] = tokens[a] + tokens[b]
        spelled.append(f"{token_to_unicode(tokens[a])} {token_to_unicode(tokens[b])}")
    return spelled
