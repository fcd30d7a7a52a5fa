"""GPT-2's ``vocab.json`` + ``merges.txt``: read them into the engine's terms and write them back.

This is the slow-tokenizer file pair of transformers' GPT-2 family (OpenAI's ``encoder.json`` +
``vocab.bpe`` are the same files under other names). ``vocab.json`` maps each token, spelled in
GPT-2's byte-to-unicode alphabet, to its id; ``merges.txt`` lists the merges in order, one
``"left right"`` per line (an optional ``#version`` first line), and the merge makes the token
``left + right`` whose id ``vocab.json`` gives. Because every id is explicit, the pair can hold
what minbpe's format cannot: permuted byte ids (GPT-2, cl100k) and holes in the id space. A byte
may have no token (its ``byte_ids`` entry is -1): ``tokenizers``' BpeTrainer leaves out the bytes
that UTF-8 never uses unless it is given the ByteLevel alphabet (SuperBPE's released files lack
them), and text never needs them; text that needs a missing byte fails to encode, naming it.

Entries of ``vocab.json`` that are neither a byte nor made by a merge are returned as
``extra_tokens``: special tokens (GPT-2's ``<|endoftext|>``) or normal tokens that no merge
builds (Llama 3's ``.:.:``); :func:`split_extra_tokens` tells them apart. A merge may name such a
token as a part.

This module is part of the code that ``save_pretrained`` copies beside a tokenizer for
``trust_remote_code=True``: it imports flat sibling modules only, relatively.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..chunking.byte_unicode import bytes_to_unicode, unicode_to_token
from .atomic_write import write_text_atomic

VERSION_PREFIX = "#version"
"""How an optional first line of ``merges.txt`` (mandatory in OpenAI's ``vocab.bpe``) starts."""
MERGES_HEADER = f"{VERSION_PREFIX}: 0.2"
"""The first line written, as GPT-2 and transformers write it."""


@dataclass
class VocabMerges:
    """What a ``vocab.json`` + ``merges.txt`` pair says, in the engine's terms."""

    byte_ids: list[int]
    """The id of each byte's token, -1 for a byte the vocabulary has no token for."""
    merges: dict[tuple[int, int], int]
    extra_tokens: dict[str, int] = field(default_factory=dict)


def read_vocab_merges(vocab_file: str | os.PathLike, merges_file: str | os.PathLike) -> VocabMerges:
    """Read a GPT-2-style file pair; bad content raises ValueError naming the file and line.

    The engine applies the merge with the lowest new id first, so the ids that the merges make
    must increase line by line (true of GPT-2, of converted tiktoken files and of our own
    files); a file pair where they do not would encode differently here and is refused.
    """
    vocab = _read_vocab(Path(vocab_file))
    table = bytes_to_unicode()
    byte_ids = [vocab.get(table[b], -1) for b in range(256)]
    merges: dict[tuple[int, int], int] = {}
    made_by: dict[int, int] = {idx: 0 for idx in byte_ids if idx >= 0}  # id -> line that made it (0: a byte)
    last_new = -1
    with open(merges_file, encoding="utf-8") as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    pairs: list[tuple[int, str, str]] = []
    for number, line in enumerate(lines, start=1):
        if (number == 1 and line.startswith(VERSION_PREFIX)) or not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"{merges_file}, line {number}: expected two tokens separated by one space, got {line!r}")
        pairs.append((number, parts[0], parts[1]))
    built = {vocab.get(left + right) for _, left, right in pairs}
    for number, left, right in pairs:
        where = f"{merges_file}, line {number}"
        for side in (left, right):
            if side not in vocab:
                raise ValueError(f"{where}: token {side!r} is not in {vocab_file}")
        a, b, new = vocab[left], vocab[right], vocab.get(left + right)
        if new is None:
            raise ValueError(f"{where}: the merged token {left + right!r} is not in {vocab_file}")
        for side, idx in ((left, a), (right, b)):
            if idx not in made_by and idx in built:
                raise ValueError(f"{where}: token {side!r} is used before a merge makes it")
        if new in made_by:
            earlier = made_by[new]
            what = "is a byte" if earlier == 0 else f"was already made on line {earlier}"
            raise ValueError(f"{where}: the merged token {left + right!r} {what}; each merge must make a new token")
        if new < last_new:
            raise ValueError(
                f"{where}: {left + right!r} has id {new}, below the id {last_new} made by an earlier "
                "merge; merges must make ids in increasing order"
            )
        merges[(a, b)] = new
        made_by[new] = number
        last_new = new
    extra = {token: idx for token, idx in vocab.items() if idx not in made_by}
    return VocabMerges(byte_ids, merges, extra)


def looks_special(token: str) -> bool:
    """Spelled like a special token (``<|endoftext|>``, ``<pad>``, ``[PAD]``), not like a word."""
    return len(token) > 2 and (token[0], token[-1]) in (("<", ">"), ("[", "]"))


def split_extra_tokens(
    extra: Mapping[str, int], declared: Collection[str] | None = None
) -> tuple[dict[str, int], dict[int, bytes]]:
    """``(special tokens, unmerged normal tokens {id: bytes})`` among a file pair's extra tokens.

    A token is special if ``declared`` names it, or, when nothing is declared, if it is spelled
    like one (:func:`looks_special`); a token that is not spelled in GPT-2's byte alphabet can
    only be special. Every other one is a normal token that no merge builds.
    """
    specials: dict[str, int] = {}
    unmerged: dict[int, bytes] = {}
    for token, idx in extra.items():
        special = token in declared if declared is not None else looks_special(token)
        if not special:
            try:
                unmerged[idx] = unicode_to_token(token)
                continue
            except KeyError:
                pass
        specials[token] = idx
    return specials, unmerged


def _read_vocab(path: Path) -> dict[str, int]:
    try:
        vocab = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(vocab, dict):
        raise ValueError(f"{path}: expected a JSON object {{token: id}}")
    owner: dict[int, str] = {}
    for token, idx in vocab.items():
        if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
            raise ValueError(f"{path}: token {token!r} has id {idx!r}, not a non-negative integer")
        if idx in owner:
            raise ValueError(f"{path}: tokens {owner[idx]!r} and {token!r} have the same id {idx}")
        owner[idx] = token
    return vocab


def write_vocab_merges(
    vocab_file: str | os.PathLike,
    merges_file: str | os.PathLike,
    spelled: dict[int, str],
    merges: dict[tuple[int, int], int],
) -> None:
    """Write ``vocab.json`` (tokens in id order) and ``merges.txt`` (merges in order), atomically.

    ``spelled`` is :func:`byte_unicode.spell_vocab`'s result for the non-special tokens.
    """
    body = ",\n".join(f"  {json.dumps(text, ensure_ascii=False)}: {idx}" for idx, text in sorted(spelled.items()))
    write_text_atomic(vocab_file, "{\n" + body + "\n}\n")
    lines = [MERGES_HEADER] + [f"{spelled[a]} {spelled[b]}" for a, b in merges]
    write_text_atomic(merges_file, "\n".join(lines) + "\n")
