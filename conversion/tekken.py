"""Mistral's Tekken files (``tekken.json``): tiktoken ranks inside JSON, read as Tekkenizer reads them.

A Tekken file holds ``config`` (the split ``pattern``, ``default_vocab_size``,
``default_num_special_tokens``, ``version``), ``vocab`` (entries ``{"rank", "token_bytes"
(base64), "token_str"}`` in rank order) and, from version v7 on, ``special_tokens`` (entries
``{"rank", "token_str", "is_control"}``). mistral-common's ``Tekkenizer`` keeps the first
``default_vocab_size - default_num_special_tokens`` ranks, shifts every rank up by the number of
special tokens (1000), so that ids 0..999 are special, and encodes text with tiktoken; special
tokens in the text are never matched (``Tekkenizer.encode`` is ``encode_ordinary`` here). Files
without a ``special_tokens`` list get the twenty tokens of Tekkenizer's
``DEPRECATED_SPECIAL_TOKENS`` (``<unk>``, ``<s>``, ``</s>``, ``[INST]`` ...); ids left over up
to the number of special tokens are ``<SPECIAL_{id}>``, as Tekkenizer fills them.

The result is a tokenizer in ``"ranks"`` mode (tiktoken's algorithm) with those ids, whose
roles are Tekkenizer's: ``<s>`` is the BOS token, added in front of each sequence (``bos=True``,
as Mistral's Hugging Face folders add it), and ``</s>`` the EOS token.
"""

from __future__ import annotations

import binascii
import os
from array import array
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_bbpe.engine.encoding.encoder import DuplicateTokensError, TokenTable
from hf_bbpe.engine.encoding.special_tokens import TokenRoles
from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError
from .reading import read_json_object

DEPRECATED_SPECIAL_TOKENS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
    "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
)
"""The special tokens of Tekken files that list none (mistral-common's Tekkenizer, ids 0..19)."""
FILLER_TEMPLATE = "<SPECIAL_{id}>"
TEKKEN_ROLES = TokenRoles(bos_token="<s>", eos_token="</s>", add_bos_token=True)
"""Tekkenizer's bos and eos (``SpecialTokens.bos``/``eos``); ``encode(s, bos=True, ...)`` adds the first."""
_VERSIONS_WITHOUT_LIST = ("v1", "v2", "v3", "v7")


def is_tekken_data(data: Any) -> bool:
    """Whether a parsed JSON document is a Tekken file (a ``config`` and a list ``vocab``)."""
    return isinstance(data, Mapping) and isinstance(data.get("config"), Mapping) and isinstance(data.get("vocab"), list)


def from_tekken(path: str | os.PathLike, *, vocab_size: int | None = None) -> Tokenizer:
    """A tokenizer with Tekkenizer's ids, split pattern and special tokens, from a Tekken file.

    ``vocab_size`` (special tokens included) defaults to the file's ``default_vocab_size``, as
    ``Tekkenizer.from_file`` uses; a model trained with a different size passes its own.
    """
    source = Path(path)
    return tekken_tokenizer(read_json_object(source, "a Tekken JSON object"), source, vocab_size=vocab_size)


def tekken_tokenizer(data: Mapping[str, Any], source: object, *, vocab_size: int | None = None) -> Tokenizer:
    """:func:`from_tekken` for an already parsed file; errors name ``source``."""
    if not is_tekken_data(data):
        raise FormatError(f"{source}: not a Tekken file (expected a 'config' object and a 'vocab' list)")
    config = data["config"]
    for key in ("pattern", "default_vocab_size", "default_num_special_tokens"):
        if key not in config:
            raise FormatError(f"{source}: config.{key} is missing")
    pattern = config["pattern"]
    num_special = config["default_num_special_tokens"]
    size = config["default_vocab_size"] if vocab_size is None else vocab_size
    vocab = data["vocab"]
    if not isinstance(num_special, int) or num_special < 0 or not isinstance(size, int):
        raise FormatError(f"{source}: config.default_num_special_tokens and the vocabulary size must be ints")
    if not num_special <= size <= len(vocab) + num_special:
        raise FormatError(f"{source}: vocabulary size {size} is not between the {num_special} special tokens and "
                          f"{len(vocab) + num_special} (special tokens + vocab entries)")
    specials = _special_tokens(data, num_special, source)
    kept = size - num_special
    tokens = []
    for i, entry in enumerate(vocab[:kept]):
        if not isinstance(entry, Mapping) or entry.get("rank") != i or not isinstance(entry.get("token_bytes"), str):
            raise FormatError(f"{source}: vocab[{i}] must be {{'rank': {i}, 'token_bytes': <base64>, ...}}, got "
                              f"{str(entry)[:80]}")
        try:
            token = binascii.a2b_base64(entry["token_bytes"], strict_mode=True) if entry["token_bytes"] else b""
        except (binascii.Error, ValueError) as exc:
            raise FormatError(f"{source}: vocab[{i}].token_bytes {entry['token_bytes'][:40]!r} is not base64 ({exc})")
        if i < 256 and token != bytes([i]):
            raise FormatError(f"{source}: vocab[{i}] must be the single byte {bytes([i])!r}, got {token!r}")
        tokens.append(token)
    if kept < 256:
        raise FormatError(f"{source}: the vocabulary keeps {kept} tokens, fewer than the 256 single bytes")
    table = TokenTable(b"".join(tokens), array("q", map(len, tokens)), array("q", range(num_special, num_special + kept)))
    try:
        tok = Tokenizer.from_token_table(table, list(range(num_special, num_special + 256)), pattern=pattern,
                                          special_tokens=specials)
    except DuplicateTokensError as exc:
        raise FormatError(f"{source}: vocab entries {exc.first - num_special} and {exc.second - num_special} are both "
                          f"{exc.token!r}") from None
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
    tok.roles = TEKKEN_ROLES.kept(tok.special_tokens)
    return tok


def _special_tokens(data: Mapping[str, Any], num_special: int, source: object) -> dict[str, int]:
    listed = data.get("special_tokens")
    if listed is None:
        version = data["config"].get("version")
        if version not in _VERSIONS_WITHOUT_LIST:
            raise FormatError(f"{source}: no special_tokens list, which a Tekken file of version {version!r} needs")
        listed = [{"rank": i, "token_str": token} for i, token in enumerate(DEPRECATED_SPECIAL_TOKENS)]
    if not isinstance(listed, list) or len(listed) > num_special:
        raise FormatError(f"{source}: special_tokens must be a list of at most {num_special} entries")
    specials: dict[str, int] = {}
    for i, entry in enumerate(listed):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("token_str"), str) \
                or not isinstance(entry.get("rank"), int):
            raise FormatError(f"{source}: special_tokens[{i}] must have a string token_str and an int rank")
        if entry["token_str"] in specials:
            raise FormatError(f"{source}: special token {entry['token_str']!r} is listed twice")
        specials[entry["token_str"]] = entry["rank"]
    for idx in range(len(listed), num_special):
        filler = FILLER_TEMPLATE.format(id=idx)
        if filler in specials:
            raise FormatError(f"{source}: special token {filler!r} is listed and is also the filler of id {idx}")
        specials[filler] = idx
    return specials
