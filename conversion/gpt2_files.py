"""OpenAI's GPT-2 files (``encoder.json`` + ``vocab.bpe``) and transformers' GPT-2 folders
(``vocab.json`` + ``merges.txt``), both ways.

Both spell token bytes in GPT-2's byte-to-unicode alphabet (hf_bbpe/engine/chunking/byte_unicode.py); the pair
is parsed by hf_bbpe/engine/files/vocab_merges.py (shared with the transformers glue), after the checks
that module leaves out (the ``#version`` header, the alphabet, JSON syntax with line numbers).
``encoder.json`` maps every token to its id; ``vocab.bpe`` lists the merges in priority order
after a ``#version: 0.2`` line, one ``left right`` pair per line. Ids are kept as the files give
them (GPT-2's single bytes have ids in the alphabet's order: id 0 is "!"), so ids equal
tiktoken's ``gpt2`` encoding. Entries of ``encoder.json`` that no merge builds and that are not
single bytes are special tokens (GPT-2: ``<|endoftext|>`` = 50256) if ``special_tokens=`` or
``added_tokens.json`` declare them, or, when neither does, if they are spelled like one
(``<...>``, ``[...]``); every other such entry is a normal token that no merge builds (the
engine keeps it as an unmerged token: decoded, never produced, as ``tokenizers`` and
transformers' GPT2Tokenizer do with such a file).

Writing gives OpenAI's exact layout (``json.dumps`` with default separators and ASCII escapes,
no final newline; ``vocab.bpe`` ending in a newline), so GPT-2 round-trips byte for byte.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from hf_bbpe.engine.files.atomic_write import replaced_folder, write_bytes_atomic
from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode, spell_vocab
from hf_bbpe.engine.chunking.pre_tokenizers import PreTokenizer, resolve_pre_tokenizer
from hf_bbpe.engine.tokenizer import Tokenizer
from hf_bbpe.engine.files.vocab_merges import MERGES_HEADER, VERSION_PREFIX, read_vocab_merges, split_extra_tokens

from .assembly import assemble_tokenizer
from .errors import FormatError
from .reading import read_json_object, read_text


def check_merges_text(path: str | os.PathLike, *, require_version: bool) -> None:
    """The checks hf_bbpe's reader leaves to us: the ``#version`` first line (mandatory in
    OpenAI's vocab.bpe) and that every symbol is in GPT-2's byte alphabet."""
    path = Path(path)
    lines = read_text(path).split("\n")
    if require_version and not lines[0].startswith(VERSION_PREFIX):
        raise FormatError(f"{path}:1: expected the header line {MERGES_HEADER!r}, got {lines[0][:60]!r}")
    alphabet = set(bytes_to_unicode().values())
    alphabet.update(" \r")
    for lineno, line in enumerate(lines, 1):
        if lineno == 1 and line.startswith(VERSION_PREFIX):
            continue
        bad = next((ch for ch in line if ch not in alphabet), None)
        if bad is not None:
            raise FormatError(f"{path}:{lineno}: {bad!r} (U+{ord(bad):04X}) in {line[:60]!r} is not a byte-level symbol")


def _tokenizer_from_files(
    vocab_file: Path,
    merges_file: Path,
    *,
    require_version: bool,
    pattern: str | None,
    special_tokens: Mapping[str, int] | None,
    added: Mapping[str, int] | None = None,
    pre_tokenizer: PreTokenizer | Mapping | str | None = None,
) -> Tokenizer:
    """Check both files, read them with hf_bbpe's reader, and build the tokenizer.

    Vocabulary entries that are neither bytes nor built by a merge become special tokens or
    unmerged tokens (see the module doc); ``special_tokens`` given must have the file's ids.
    """
    read_json_object(vocab_file, "an object of token -> id")  # JSON errors with line numbers
    check_merges_text(merges_file, require_version=require_version)
    try:
        parsed = read_vocab_merges(vocab_file, merges_file)
    except ValueError as exc:
        raise FormatError(str(exc)) from None
    extra = dict(parsed.extra_tokens)
    for token, idx in (added or {}).items():
        if extra.get(token, idx) != idx:
            raise FormatError(f"{vocab_file}: {token!r} has id {extra[token]} but {idx} in added_tokens.json")
        extra[token] = idx
    declared = None
    if special_tokens is not None or added:
        declared = set(special_tokens or {}) | set(added or {})
    in_file, unmerged = split_extra_tokens(extra, declared)
    specials = dict(in_file)
    for token, idx in (special_tokens or {}).items():
        if extra.get(token, idx) != idx:
            raise FormatError(f"{vocab_file}: special token {token!r} has id {extra[token]} here but {idx} was given")
        specials[token] = idx
    try:
        pipeline = resolve_pre_tokenizer(pre_tokenizer)
    except (TypeError, ValueError) as exc:
        raise FormatError(f"{vocab_file}: pre_tokenizer: {exc}") from None
    return assemble_tokenizer(parsed.merges, parsed.byte_ids, pattern=None if pipeline else pattern,
                              special_tokens=specials, source=vocab_file, unmerged_tokens=unmerged,
                              pre_tokenizer=pipeline)


def from_gpt2_files(
    encoder_json: str | os.PathLike,
    vocab_bpe: str | os.PathLike,
    *,
    pattern: str | None = "gpt2",
    special_tokens: Mapping[str, int] | None = None,
    pre_tokenizer: PreTokenizer | Mapping | str | None = None,
) -> Tokenizer:
    """A tokenizer from OpenAI's ``encoder.json`` + ``vocab.bpe`` (GPT-2's split pattern), or from
    a ``vocab.json`` + ``merges.txt`` pair; ``pre_tokenizer`` (a pipeline, its JSON form or a
    pattern, as the engine takes it) instead of ``pattern``."""
    return _tokenizer_from_files(Path(encoder_json), Path(vocab_bpe), require_version=True,
                                 pattern=pattern, special_tokens=special_tokens, pre_tokenizer=pre_tokenizer)


def from_transformers_gpt2(folder: str | os.PathLike, *, pattern: str | None = "gpt2") -> Tokenizer:
    """A tokenizer from a transformers GPT-2-style folder (``vocab.json`` + ``merges.txt``).

    Tokens listed in ``added_tokens.json`` (if present) and vocabulary entries no merge builds
    become special tokens with their ids.
    """
    folder = Path(folder)
    added_path = folder / "added_tokens.json"
    added = read_json_object(added_path) if added_path.exists() else None
    return _tokenizer_from_files(folder / "vocab.json", folder / "merges.txt", require_version=False,
                                 pattern=pattern, special_tokens=None, added=added)


def gpt2_file_contents(tok: Tokenizer) -> tuple[bytes, bytes]:
    """The bytes of ``encoder.json`` and ``vocab.bpe`` for ``tok`` (OpenAI's exact layout).

    The files carry no mode: a tokenizer whose whole-piece rule (``"ranks"``/``"ignore_merges"``)
    encodes differently from plain BPE over its merges raises FormatError naming the first such token.
    """
    try:
        tok.check_merge_list("GPT-2 encoder.json/vocab.bpe")
    except ValueError as exc:
        raise FormatError(str(exc)) from None
    specials = {idx: token for token, idx in tok.special_tokens.items()}
    try:
        spelled = spell_vocab(tok.vocab, skip=set(specials))
    except ValueError as exc:
        raise FormatError(str(exc)) from None
    encoder = {text: idx for idx, text in spelled.items()}
    for idx, token in sorted(specials.items()):
        if token in encoder:
            raise FormatError(f"special token {token!r} (id {idx}) is spelled like the normal token {encoder[token]}")
        encoder[token] = idx
    encoder = dict(sorted(encoder.items(), key=lambda item: item[1]))
    merges = sorted(tok.merges.items(), key=lambda item: item[1])
    vocab_bpe = MERGES_HEADER + "\n" + "".join(f"{spelled[a]} {spelled[b]}\n" for (a, b), _ in merges)
    return json.dumps(encoder).encode("utf-8"), vocab_bpe.encode("utf-8")


def to_gpt2_files(tok: Tokenizer, out_dir: str | os.PathLike) -> None:
    """Write ``encoder.json`` and ``vocab.bpe`` into ``out_dir`` (created if missing).

    Both files are computed before either is written, and replace the old pair together; merges
    are listed by id, which is the engine's priority and GPT-2's line order.
    """
    encoder_bytes, vocab_bytes = gpt2_file_contents(tok)
    # the pair switched in together, the folder's other files kept (atomic_write.replaced_folder)
    with replaced_folder(out_dir, ("encoder.json", "vocab.bpe")) as out:
        write_bytes_atomic(out / "encoder.json", encoder_bytes)
        write_bytes_atomic(out / "vocab.bpe", vocab_bytes)
