"""Naive reference implementations of minbpe's algorithms, for the engine's parity tests.

Written here from the algorithm's description (minbpe's README and Wikipedia's "Byte pair
encoding"), deliberately slow and simple, so that the tests compare hf_bbpe's incremental trainer
and heap encoder against something obviously right:

* :func:`naive_train`: minbpe's training loop. Every merge recounts the pair statistics over ALL
  chunks in text order (one entry per occurrence, not per unique chunk) into an
  insertion-ordered dict, picks the best pair, and merges it everywhere.
  ``tie_break="first_occurrence"`` takes the first maximum in that dict (minbpe's
  ``max(stats, key=stats.get)``); ``"smallest_pair"`` takes the highest count, then the smallest
  ``(left_id, right_id)`` (rustbpe's rule); ``"huggingface"`` the highest count, then the pair
  smallest in the ids ``tokenizers``' BpeTrainer gives (its alphabet is the byte-level characters
  sorted by code point, then merged tokens in the order they were made).
* :func:`naive_encode` / :func:`naive_encode_chunk`: minbpe's ``_encode_chunk``: repeatedly find
  the adjacent pair with the lowest merge id and merge all its occurrences, left to right.
* :func:`minbpe_save` / :func:`minbpe_load`: minbpe's ``.model`` file exactly as minbpe's
  ``Tokenizer.save``/``Tokenizer.load`` write and read it. minbpe is not on PyPI, so "minbpe
  loads what we save" is tested against this reimplementation of its reader and writer.
* :func:`naive_superbpe`: SuperBPE's two stages as its paper's scripts run them (Liu et al., COLM
  2025; the ``tokenizers`` fork its repository uses): :func:`naive_train` with the stage-1
  pattern, then every occurrence of every ``Split(stage-2 pattern, "isolated")`` piece
  (:func:`isolated_chunks`) encoded with those merges and BPE continued on them, skipping the
  merges the fork skips (:func:`paper_allows`, written on the byte-level strings as the fork
  tests them) and those whose token exists already (this library's rule).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path


from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode
from hf_bbpe.engine.chunking.patterns import compile_pattern

Pair = tuple[int, int]
Merges = dict[Pair, int]

_SEPARATOR = -1


def split_chunks(text: str, pattern: str | None) -> list[str]:
    """The chunks minbpe trains on and encodes: whole regex matches (as tiktoken; minbpe's findall
    would return capturing groups instead), or the whole text if no pattern. A built-in pattern
    classifies characters as its owners' engines do (``patterns.compile_pattern``)."""
    if not pattern:
        return [text] if text else []
    return [match.group() for match in compile_pattern(pattern).finditer(text)]


def corpus_chunks(documents: Iterable[str], pattern: str | None) -> list[bytes]:
    """Every chunk of every document, in text order, as UTF-8 bytes (repeats kept)."""
    return [chunk.encode("utf-8") for doc in documents for chunk in split_chunks(doc, pattern)]


def merge_pair(ids: Sequence[int], pair: Pair, new_id: int) -> list[int]:
    """Replace every occurrence of ``pair`` in ``ids`` by ``new_id``, left to right, no overlap."""
    out = []
    i = 0
    n = len(ids)
    while i < n:
        if i + 1 < n and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def merge_pair_scan(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """:func:`merge_pair`, but jumping between occurrences of the left id with ``list.index``.

    Same result (tests/engine/training/test_train.py checks it); used by :func:`naive_train`, whose loop runs
    over a whole text per merge and would otherwise make the minbpe-parity tests too slow.
    """
    a, b = pair
    out: list[int] = []
    done = 0  # ids[:done] are already in out
    start = 0
    last = len(ids) - 1
    while True:
        try:
            k = ids.index(a, start, last)
        except ValueError:
            break
        if ids[k + 1] == b:
            out += ids[done:k]
            out.append(new_id)
            done = start = k + 2
        else:
            start = k + 1
    out += ids[done:]
    return out


def pair_stats(chunks: Iterable[Sequence[int]]) -> dict[Pair, int]:
    """Count adjacent pairs (overlapping, as minbpe's get_stats does) in order of first occurrence."""
    stats: Counter[Pair] = Counter()  # a dict: keeps insertion order, like minbpe's get_stats
    for ids in chunks:
        stats.update(zip(ids, ids[1:]))
    return stats


def naive_train(
    chunks: Sequence[bytes],
    num_merges: int,
    tie_break: str = "smallest_pair",
    min_frequency: int = 1,
) -> Merges:
    """minbpe's training loop over ``chunks`` (all occurrences, in text order).

    Stops early when no pair is left, or when the best pair occurs fewer than ``min_frequency``
    times. Returns ``{(left, right): new_id}`` in merge order, new ids 256, 257, ...
    """
    # All chunks in one list, a separator (-1, never a token id) after each: a pair is never
    # counted or merged across two chunks, and pairs keep the order in which they occur.
    flat: list[int] = []
    for chunk in chunks:
        flat += chunk
        flat.append(_SEPARATOR)
    merges: Merges = {}
    for i in range(num_merges):
        stats = Counter(zip(flat, flat[1:]))  # insertion-ordered, like minbpe's get_stats dict
        for pair in [p for p in stats if _SEPARATOR in p]:
            del stats[pair]
        if not stats:
            break
        if tie_break == "first_occurrence":
            pair = max(stats, key=stats.get)
        elif tie_break == "smallest_pair":
            pair = min(stats, key=lambda p: (-stats[p], p))
        elif tie_break == "huggingface":
            pair = min(stats, key=lambda p: (-stats[p], huggingface_id(p[0]), huggingface_id(p[1])))
        else:
            raise ValueError(tie_break)
        if stats[pair] < max(1, min_frequency):
            break
        new_id = 256 + i
        flat = merge_pair_scan(flat, pair, new_id)
        merges[pair] = new_id
    return merges


def huggingface_id(token: int) -> int:
    """The id BpeTrainer gives a token (bytes 0..255, merges 256, 257, ... in order), up to an offset:
    bytes in code point order of their byte-level characters, merges after them in merge order."""
    if token >= 256:
        return 1000 + token  # past every byte's character (the last is U+0143)
    return ord(bytes_to_unicode()[token])


def naive_encode_chunk(data: bytes, merges: Mapping[Pair, int], byte_ids: Sequence[int] | None = None) -> list[int]:
    """minbpe's ``_encode_chunk``: merge the lowest-id pair, all occurrences, until none applies."""
    ids = list(data) if byte_ids is None else [byte_ids[b] for b in data]
    while len(ids) >= 2:
        stats = pair_stats([ids])
        pair = min(stats, key=lambda p: merges.get(p, float("inf")))
        if pair not in merges:
            break
        ids = merge_pair(ids, pair, merges[pair])
    return ids


def naive_encode(
    text: str, merges: Mapping[Pair, int], pattern: str | None, byte_ids: Sequence[int] | None = None
) -> list[int]:
    """minbpe's ``encode_ordinary``: split with the pattern, encode each chunk, concatenate."""
    out: list[int] = []
    for chunk in split_chunks(text, pattern):
        out += naive_encode_chunk(chunk.encode("utf-8"), merges, byte_ids)
    return out


def naive_vocab(merges: Mapping[Pair, int], byte_ids: Sequence[int] | None = None) -> dict[int, bytes]:
    """``{id: bytes}`` of the byte tokens and the merges (minbpe's ``_build_vocab`` minus specials)."""
    byte_ids = list(range(256)) if byte_ids is None else byte_ids
    vocab = {idx: bytes([b]) for b, idx in enumerate(byte_ids)}
    for (a, b), new in merges.items():
        vocab[new] = vocab[a] + vocab[b]
    return vocab


def minbpe_verbose_lines(merges: Mapping[Pair, int], counts: Sequence[int]) -> list[str]:
    """The lines minbpe's ``train(..., verbose=True)`` prints for these merges and their counts."""
    vocab = naive_vocab(merges)
    return [
        f"merge {i + 1}/{len(merges)}: {pair} -> {new} ({vocab[new]}) had {count} occurrences"
        for i, ((pair, new), count) in enumerate(zip(merges.items(), counts))
    ]


def naive_train_counts(chunks: Sequence[bytes], merges: Mapping[Pair, int]) -> list[int]:
    """How often each merge's pair occurred when it was chosen (the count verbose mode prints)."""
    ids = [list(chunk) for chunk in chunks]
    counts = []
    for pair, new in merges.items():
        counts.append(pair_stats(ids).get(pair, 0))
        ids = [merge_pair(chunk, pair, new) for chunk in ids]
    return counts


# ------------------------------------------------------------------ SuperBPE


def isolated_chunks(text: str, pattern: str) -> list[str]:
    """``tokenizers``' ``Split(pattern, "isolated")``: every match, and every stretch of text
    between two matches, in order."""
    pieces: list[str] = []
    at = 0
    for match in compile_pattern(pattern).finditer(text):
        if match.start() > at:
            pieces.append(text[at : match.start()])
        if match.end() > match.start():
            pieces.append(match.group())
        at = match.end()
    if at < len(text):
        pieces.append(text[at:])
    return pieces


def paper_allows(token: bytes, max_words: int | None = 4, colon_rule: bool = True) -> bool:
    """Whether the SuperBPE paper's trainer makes this token: its BpeTrainer loop skips a merge
    whose new token (byte-level characters) contains ``":Ġ"`` or has more than ``max_words``
    non-empty pieces when split at ``"Ġ"`` (the space byte's character)."""
    table = bytes_to_unicode()
    text = "".join(table[b] for b in token)
    if colon_rule and ":Ġ" in text:
        return False
    return max_words is None or len([piece for piece in text.split("Ġ") if piece]) <= max_words


def naive_continue(words: Sequence[Sequence[int]], vocab: Mapping[int, bytes], num_merges: int, first_id: int,
                   allows=lambda token: True) -> Merges:
    """BPE continued on words of token ids (every occurrence, in order), tie-break
    ``"smallest_pair"``, new ids from ``first_id``: a pair whose token's bytes already form a
    token, or that ``allows(bytes)`` refuses, is never merged (the next best is taken)."""
    flat: list[int] = []
    for word in words:
        flat += word
        flat.append(_SEPARATOR)
    vocab = dict(vocab)
    known = set(vocab.values())
    refused: set[Pair] = set()
    merges: Merges = {}
    while len(merges) < num_merges:
        stats = Counter(pair for pair in zip(flat, flat[1:]) if _SEPARATOR not in pair and pair not in refused)
        if not stats:
            break
        pair = min(stats, key=lambda p: (-stats[p], p))
        data = vocab[pair[0]] + vocab[pair[1]]
        if data in known or not allows(data):
            refused.add(pair)
            continue
        new = first_id + len(merges)
        merges[pair] = new
        vocab[new] = data
        known.add(data)
        flat = merge_pair_scan(flat, pair, new)
    return merges


def naive_superbpe(documents: Sequence[str], stage1_pattern: str, stage2_pattern: str, stage1_merges: int,
                   total_merges: int, allows=paper_allows) -> Merges:
    """SuperBPE's merges: up to ``stage1_merges`` of plain BPE with ``stage1_pattern``, then up to
    ``total_merges`` in all, learned on the isolated pieces of ``stage2_pattern``."""
    first = naive_train(corpus_chunks(documents, stage1_pattern), stage1_merges)
    words = [naive_encode_chunk(piece.encode("utf-8"), first)
             for doc in documents for piece in isolated_chunks(doc, stage2_pattern)]
    second = naive_continue(words, naive_vocab(first), total_merges - len(first), 256 + len(first), allows)
    return {**first, **second}


# ------------------------------------------------------------------ minbpe's .model file


def minbpe_save(path: str | Path, pattern: str, special_tokens: Mapping[str, int], merges: Mapping[Pair, int]) -> None:
    """Write a ``.model`` file as minbpe's ``Tokenizer.save`` does (merge ids implied: 256, 257, ...)."""
    with open(path, "w") as f:
        f.write("minbpe v1\n")
        f.write(f"{pattern}\n")
        f.write(f"{len(special_tokens)}\n")
        for special, idx in special_tokens.items():
            f.write(f"{special} {idx}\n")
        for idx1, idx2 in merges:
            f.write(f"{idx1} {idx2}\n")


def minbpe_load(path: str | Path) -> tuple[str, dict[str, int], Merges]:
    """Read a ``.model`` file as minbpe's ``Tokenizer.load`` does: (pattern, special_tokens, merges).

    Like minbpe, it asserts the version line, strips the pattern line, splits special-token lines
    on whitespace and numbers the merges 256, 257, ... in file order.
    """
    assert str(path).endswith(".model")
    merges: Merges = {}
    special_tokens: dict[str, int] = {}
    idx = 256
    with open(path, encoding="utf-8") as f:
        version = f.readline().strip()
        assert version == "minbpe v1"
        pattern = f.readline().strip()
        num_special = int(f.readline().strip())
        for _ in range(num_special):
            special, special_idx = f.readline().strip().split()
            special_tokens[special] = int(special_idx)
        for line in f:
            idx1, idx2 = map(int, line.split())
            merges[(idx1, idx2)] = idx
            idx += 1
    return pattern, special_tokens, merges


def naive_train_weighted(words: Mapping[bytes, int], num_merges: int) -> Merges:
    """``naive_train`` with tie-break ``"smallest_pair"`` over unique words with their counts
    (Python ints, so no count is ever cut to a machine word): recount every pair each merge."""
    seqs = {word: list(word) for word in words}
    merges: Merges = {}
    for i in range(num_merges):
        stats: Counter[Pair] = Counter()
        for word, count in words.items():
            for pair in zip(seqs[word], seqs[word][1:]):
                stats[pair] += count
        if not stats:
            break
        pair = min(stats, key=lambda p: (-stats[p], p))
        merges[pair] = 256 + i
        seqs = {word: merge_pair_scan(ids, pair, 256 + i) for word, ids in seqs.items()}
    return merges
