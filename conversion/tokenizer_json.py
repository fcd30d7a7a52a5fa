"""``tokenizers``' tokenizer.json, both ways.

Export: :func:`hf_bbpe.hf.tokenizer_json_writer.tokenizer_json_dict` builds the file (BPE model with our
ids and merges, the split pattern translated for Oniguruma, ByteLevel, special tokens as added
tokens); this module writes it atomically.

Import accepts byte-level BPE files, with the pre-tokenizer pipeline and normalizer that
``tokenizers`` runs: any ``Sequence`` of ``Split`` (every behaviour, ``invert``; regexes
translated back from Oniguruma), ``Digits``, ``Punctuation`` and ``ByteLevel`` (with or without
its regex and ``add_prefix_space``), e.g. GPT-2 / GPT-NeoX (``ByteLevel``), Llama-3 / Qwen2
(``Split`` + ``ByteLevel(use_regex=False)``), StarCoder (``Digits`` + ``ByteLevel``), DeepSeek-V3
(three ``Split`` + ``ByteLevel``); and the normalizers ``NFC``, ``NFD``, ``NFKC``, ``NFKD`` and
``Sequence`` of them (Qwen2's NFC). Any other pre-tokenizer or normalizer, or a pipeline with no
``ByteLevel`` step, raises FormatError naming the component and the file. Two kinds of merge
list occur:

* **one merge per token** (files trained with ``tokenizers``, GPT-2, our own exports): the
  merges are used as they are; their new ids must grow in merge order, because the engine
  ranks merges by id where ``tokenizers`` ranks them by position.
* **every split of every token** (files converted from tiktoken ranks by transformers, e.g.
  Llama-3, Qwen2): ``tokenizers`` then merges like tiktoken, so the vocabulary ids are read as
  ranks and the merges recovered from them (merge_recovery.py); the file must list every pair
  that rank-based BPE uses.

``ignore_merges=True`` (Llama-3, Qwen2) makes ``tokenizers`` emit a pre-token that is itself in
the vocabulary as that one token, without merging: the engine's ``"ignore_merges"`` mode, or its
``"ranks"`` mode when the ids are tiktoken ranks (the second kind, and the first kind when its
merges are exactly those the ids imply). Vocabulary tokens that no merge builds (Llama 3's
``.:.:``) are kept as the engine's unmerged tokens. Export writes the mode back: ``ignore_merges``
for the two modes that look whole pieces up, and in ``"ranks"`` mode with unmerged tokens every
split of every token as the merge list, as transformers' TikTokenConverter does.

A vocabulary may lack single bytes: ``tokenizers``' BpeTrainer leaves out every byte it did not
see unless it is given the ByteLevel alphabet, so real files (the SuperBPE tokenizers) lack the
bytes that UTF-8 never uses (0xC0, 0xC1, 0xF5-0xFF), which no text needs. Such a file loads with
``tokenizers``' ids; so does one that lacks other bytes, as a rank file without a byte does:
text whose encoding needs a missing byte on its own raises ``MissingByteError`` naming it, where
``tokenizers`` drops the character.

What does not change ids is not imported: the decoder, padding, truncation and the post-processor,
except that the special tokens a ``TemplateProcessing`` puts around a single sequence become the
tokenizer's roles (``Tokenizer.roles``: Llama 3's ``<|begin_of_text|>`` as the BOS token that is
added), which the transformers glue and the export put back. What would
change them and the engine cannot do raises FormatError: an unsupported normalizer
(``strict=False`` drops it with a warning), ``byte_fallback``, subword prefixes, dropout, added
tokens that strip spaces or match single words. Added tokens marked ``normalized`` are found in
the normalized text, as ``tokenizers`` finds them (``Tokenizer.normalized_special_tokens``).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hf_bbpe.engine.files.atomic_write import write_text_atomic
from hf_bbpe.engine.chunking.byte_unicode import unicode_to_token
from hf_bbpe.engine.encoding.encoder import UNMERGEABLE_ID
from hf_bbpe.engine.chunking.normalizers import Normalizer, normalizer_from_json
from hf_bbpe.engine.chunking.onig_regex import translate_pattern_for_onig, translate_pattern_from_onig
from hf_bbpe.engine.chunking.patterns import EQUIVALENT_PATTERNS, ISOLATED_PATTERNS, NATIVE_PATTERNS, canonical_pattern
from hf_bbpe.engine.chunking.pre_tokenizers import ByteLevel, PreTokenizer, pre_tokenizer_from_json
from hf_bbpe.engine.tokenizer import Tokenizer
from hf_bbpe.hf.tokenizer_json_writer import template_bos_eos, token_splits, tokenizer_json_dict

from .assembly import assemble_tokenizer
from .errors import FormatError
from .file_kinds import TOKENIZER_JSON, json_kind, text_kind, wrong_kind_message
from .reading import read_json_object

def to_tokenizer_json(
    tok: Tokenizer,
    path: str | os.PathLike,
    *,
    added_tokens_extra: Iterable[Mapping[str, Any]] | None = None,
    trim_offsets: bool = False,
) -> None:
    """Write ``tok`` as a tokenizer.json that ``tokenizers.Tokenizer.from_file`` reads with the
    same ids (atomically; nothing is written if the tokenizer cannot be expressed)."""
    try:
        data = tokenizer_json_dict(tok, added_tokens_extra=added_tokens_extra, trim_offsets=trim_offsets)
    except ValueError as exc:
        raise FormatError(f"{path}: {exc}") from None
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def python_pattern(onig_pattern: str) -> str:
    """The ``regex`` pattern for a tokenizer.json split pattern; a registered pattern when the
    file holds exactly the translation of one of its spellings (so our own exports round-trip to
    the same string, and files written with tiktoken's spellings read as the registry's), also as
    files written before anchors were portable hold it (``\\Z`` for ``$``)."""
    for pattern in (*NATIVE_PATTERNS.values(), *EQUIVALENT_PATTERNS, *ISOLATED_PATTERNS.values()):
        written = (translate_pattern_for_onig(pattern), translate_pattern_for_onig(pattern, portable_anchors=False))
        if onig_pattern in written:
            return canonical_pattern(pattern)
    return translate_pattern_from_onig(onig_pattern)


def _pre_tokenizer_of(pre: Any, source: Path) -> PreTokenizer:
    """The engine's pipeline for a tokenizer.json ``pre_tokenizer`` (regexes translated from
    Oniguruma); it must spell bytes (a ``ByteLevel`` step) to be byte-level BPE."""
    if pre is None:
        raise FormatError(f"{source}: no pre_tokenizer; byte-level BPE needs a ByteLevel pre-tokenizer step")
    try:
        pipeline = pre_tokenizer_from_json(pre, translate=python_pattern)
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
    if not any(isinstance(step, ByteLevel) for step in pipeline.steps()):
        raise FormatError(f"{source}: pre_tokenizer {pre.get('type')!r} has no ByteLevel step, so the model does not "
                          "see bytes: not byte-level BPE")
    return pipeline


def _normalizer_of(data: Any, source: Path, strict: bool) -> Normalizer | None:
    try:
        return normalizer_from_json(data)
    except ValueError as exc:
        message = f"{source}: {exc}"
    if strict:
        raise FormatError(message + "; pass strict=False to drop it", option="strict")
    warnings.warn(message + "; dropped: texts it would change encode differently", stacklevel=3)
    return None


def _check_model(model: Any, source: Path) -> None:
    if not isinstance(model, Mapping) or model.get("type", "BPE") != "BPE":
        raise FormatError(f"{source}: model must be BPE, got {model.get('type') if isinstance(model, Mapping) else model!r}")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise FormatError(f"{source}: model.{key}={model[key]!r} is not byte-level BPE")
    if model.get("byte_fallback"):
        raise FormatError(f"{source}: model.byte_fallback=true is not byte-level BPE")
    if model.get("dropout") not in (None, 0, 0.0):
        raise FormatError(f"{source}: model.dropout={model['dropout']!r} makes encoding random")
    if not isinstance(model.get("vocab"), Mapping) or not isinstance(model.get("merges"), list):
        raise FormatError(f"{source}: model needs a 'vocab' object and a 'merges' list")


def _read_merges(raw: list, source: Path) -> list[tuple[str, str]]:
    merges = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            fields = item.split(" ")
        elif isinstance(item, list):
            fields = item
        else:
            fields = []
        if len(fields) != 2 or not all(isinstance(f, str) and f for f in fields):
            raise FormatError(f"{source}: model.merges[{i}] must be 'left right' or [left, right], got {item!r}")
        merges.append((fields[0], fields[1]))
    return merges


def from_tokenizer_json(path: str | os.PathLike, *, strict: bool = True) -> Tokenizer:
    """A tokenizer from a byte-level BPE tokenizer.json, with the file's ids (see module doc)."""
    source = Path(path)
    try:
        data = read_json_object(source, "a tokenizer.json object")
    except FormatError:
        other = wrong_kind_message(source, text_kind(source), TOKENIZER_JSON)
        if other:
            raise FormatError(other) from None
        raise
    other = wrong_kind_message(source, json_kind(data), TOKENIZER_JSON)
    if other:
        raise FormatError(other)
    return tokenizer_from_json_data(data, source, strict=strict)


def tokenizer_from_json_data(data: Mapping[str, Any], source: Path, *, strict: bool = True) -> Tokenizer:
    """:func:`from_tokenizer_json` for an already parsed file; errors name ``source``."""
    model = data.get("model")
    _check_model(model, source)
    normalizer = _normalizer_of(data.get("normalizer"), source, strict)
    pre_tokenizer = _pre_tokenizer_of(data.get("pre_tokenizer"), source)

    specials: dict[str, int] = {}
    normalized: set[str] = set()
    for entry in data.get("added_tokens") or []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("content"), str) or not isinstance(entry.get("id"), int):
            raise FormatError(f"{source}: bad added_tokens entry {entry!r}")
        for flag in ("lstrip", "rstrip", "single_word"):
            if entry.get(flag):
                raise FormatError(f"{source}: added token {entry['content']!r} has {flag}=true, which the engine "
                                  "cannot do")
        if entry.get("normalized"):
            normalized.add(entry["content"])
        if entry["content"] in specials:
            raise FormatError(f"{source}: added token {entry['content']!r} is listed twice")
        specials[entry["content"]] = entry["id"]

    vocab: Mapping[str, Any] = model["vocab"]
    token_bytes: dict[int, bytes] = {}
    ids: dict[str, int] = {}
    for text, idx in vocab.items():
        if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
            raise FormatError(f"{source}: model.vocab[{text!r}] = {idx!r}; ids are non-negative ints")
        if text in specials:
            if specials[text] != idx:
                raise FormatError(f"{source}: added token {text!r} has id {specials[text]} but {idx} in model.vocab")
            continue
        if idx in token_bytes:
            raise FormatError(f"{source}: model.vocab gives id {idx} twice")
        try:
            token_bytes[idx] = unicode_to_token(text)
        except KeyError as exc:
            raise FormatError(f"{source}: model.vocab token {exc.args[0]}") from None
        ids[text] = idx
    merges = _read_merges(model["merges"], source)

    result_ids = []
    pair_ids = []
    for i, (left, right) in enumerate(merges):
        for side in (left, right):
            if side not in ids:
                raise FormatError(f"{source}: model.merges[{i}] = {left!r} {right!r} names {side!r}, which is not in "
                                  "model.vocab")
        merged = left + right
        if merged not in ids:
            raise FormatError(f"{source}: model.merges[{i}]: the merged token {merged!r} is not in model.vocab")
        pair_ids.append((ids[left], ids[right]))
        result_ids.append(ids[merged])
    for i in range(1, len(result_ids)):
        if result_ids[i] < result_ids[i - 1]:
            raise FormatError(f"{source}: model.merges[{i}] = {' '.join(merges[i])!r} builds id {result_ids[i]} after "
                              f"a merge built id {result_ids[i - 1]}; merge priority must follow the ids")
    byte_id = {token[0]: idx for idx, token in sorted(token_bytes.items(), reverse=True) if len(token) == 1}
    byte_ids = [byte_id.get(b, -1) for b in range(256)]  # a byte without a token: see the module doc
    ignore_merges = bool(model.get("ignore_merges"))

    if len(set(result_ids)) == len(result_ids):
        built = set(result_ids)
        engine_merges = dict(zip(pair_ids, result_ids))
        unmerged = {idx: token for idx, token in token_bytes.items() if idx not in built and idx not in byte_ids}
        mode = "ignore_merges" if ignore_merges else "merges"
        if ignore_merges and _is_rank_vocabulary(token_bytes, engine_merges):
            tok = _ranks_tokenizer(token_bytes, pre_tokenizer, normalizer, specials, source)
        else:
            tok = assemble_tokenizer(engine_merges, byte_ids, pattern=None, special_tokens=specials, source=source,
                                     pre_tokenizer=pre_tokenizer, normalizer=normalizer, unmerged_tokens=unmerged,
                                     mode=mode)
    else:
        _check_rank_pairs(token_bytes, set(pair_ids), ignore_merges, source)
        tok = _ranks_tokenizer(token_bytes, pre_tokenizer, normalizer, specials, source)
    tok.normalized_special_tokens = normalized
    bos, eos = template_bos_eos(data.get("post_processor"))
    roles = {f"{role}_token": token for role, token in (("bos", bos), ("eos", eos)) if token in specials}
    tok.roles = {**roles, **{f"add_{name}": True for name in roles}}
    return tok


def _ranks_tokenizer(token_bytes: Mapping[int, bytes], pre_tokenizer: PreTokenizer, normalizer: Normalizer | None,
                     specials: Mapping[str, int], source: Path) -> Tokenizer:
    try:
        return Tokenizer.from_ranks({token: idx for idx, token in token_bytes.items()}, special_tokens=specials,
                                    pre_tokenizer=pre_tokenizer, normalizer=normalizer)
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None


def _is_rank_vocabulary(token_bytes: Mapping[int, bytes], merges: Mapping[tuple[int, int], int]) -> bool:
    """Whether the ids, read as tiktoken ranks, imply exactly these merges and nothing else (then
    ``"ranks"`` mode, one merge per token and ``ignore_merges`` all encode alike)."""
    try:
        as_ranks = Tokenizer.from_ranks({token: idx for idx, token in token_bytes.items()})
        return as_ranks.merges == merges and not any(as_ranks.unmerged_tokens.values())
    except ValueError:  # e.g. a missing byte: ranks recover no merges without all 256
        return False


def _check_rank_pairs(token_bytes: Mapping[int, bytes], file_pairs: set[tuple[int, int]], ignore_merges: bool,
                      source: Path) -> None:
    """A file that lists several splits per token (transformers' TikTokenConverter) is read as
    tiktoken ranks; ``tokenizers`` then merges as tiktoken does if the file lists every pair
    that tiktoken's rule merges: the recovered merges when every token is built by one, else
    every split of every token into two tokens, with ``ignore_merges`` for the tokens that only
    whole pieces reach."""
    ranks = {token: idx for idx, token in token_bytes.items()}
    try:
        as_ranks = Tokenizer.from_ranks(ranks)
        unmerged = as_ranks.unmerged_tokens
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
    if not any(unmerged.values()):
        needed = as_ranks.merges
    else:
        if not ignore_merges:
            idx = next(i for i, t in sorted(as_ranks.unmerged_tokens.items()) if t)
            raise FormatError(f"{source}: token {token_bytes[idx]!r} (id {idx}) is built by no merge of lower ids and "
                              "model.ignore_merges is false: tokenizers merges pairs of it that tiktoken's rule would "
                              "not, which the engine cannot do")
        needed = {(a, b): idx for a, b, idx in token_splits(as_ranks.vocab, set(token_bytes))}
    unmergeable = token_bytes.get(UNMERGEABLE_ID)
    pair = None if unmergeable is None else next(
        (p for p in file_pairs if token_bytes[p[0]] + token_bytes[p[1]] == unmergeable), None)
    if pair is not None:
        raise FormatError(f"{source}: model.merges merges {token_bytes[pair[0]]!r} + {token_bytes[pair[1]]!r} into "
                          f"{unmergeable!r} (id {UNMERGEABLE_ID}): tokenizers makes that token by a merge, but the "
                          "file reads as tiktoken ranks, and tiktoken's rule never merges into id 2**32 - 1 (its "
                          "u32::MAX rank means no rank)")
    for pair, new in needed.items():
        if pair not in file_pairs:
            raise FormatError(f"{source}: model.merges lacks {token_bytes[pair[0]]!r} + {token_bytes[pair[1]]!r} "
                              f"-> {token_bytes[new]!r} (id {new}), a pair that tiktoken's rule merges")
