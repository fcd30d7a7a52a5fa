"""Parity-aware BPE's merge loop, as training runs it: per-language chunk counts in, a tokenizer's
merges out (parity_reference.py is the loop and says what it counts).

The merges come as byte pairs; here they get ids above the tokenizer's, skipping its special
tokens. A merge whose bytes already form a token gets that token's id, as ``tokenizers`` does.
"""

from __future__ import annotations

import warnings
from array import array
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from ..encoding.vocabulary import Merges
from ..progress import progress_bar
from . import parity_reference
from .chunk_counts import ChunkCounts
from .merge_loop import huggingface_ranks, merge_kernel
from .options import Trainable, TrainingOptions

Counts = Mapping[str | bytes, int] | ChunkCounts


def flat_words(counts: Counts) -> tuple[Any, Any, Any]:
    """A language's chunks as the kernel takes them: uint8 symbols end to end, int32 lengths,
    int64 counts (a ChunkCounts' own buffers, not copied)."""
    if isinstance(counts, ChunkCounts):
        return counts.buffers()
    chunks = [chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk) for chunk in counts]
    return b"".join(chunks), array("i", map(len, chunks)), array("q", map(int, counts.values()))


def words_of(flat: tuple[Any, Any, Any]) -> tuple[list[bytes], list[int]]:
    """Flat words as the Python twin takes them: ``(words, counts)``, words as bytes."""
    symbols, lengths, counts = (memoryview(b).cast("B") for b in flat)
    words, at = [], 0
    for length in lengths.cast("i"):
        words.append(bytes(symbols[at : at + length]))
        at += length
    return words, list(counts.cast("q"))


def parity_kernel() -> ModuleType | None:
    """The C merge-loop module if built (it has ``parity_train``), else None (the Python twin runs)."""
    kernel = merge_kernel()
    return kernel if hasattr(kernel, "parity_train") else None


def run_parity(train: Sequence[tuple[Any, Any, Any]], dev: Sequence[tuple[Any, Any, Any]] | None,
               ratio: Sequence[float] | None, num_merges: int, *, variant: str = "base", window_size: int = 100,
               alpha: float = 2.0, global_merges: int = 0, min_frequency: int = 0, tie_break: str = "huggingface",
               on_merge: Callable[[bytes, bytes, int, int], object] | None = None, kernel: bool = True,
               ) -> list[tuple[bytes, bytes]]:
    """Parity-aware merges as byte pairs over flat per-language words: the C kernel
    (``_merge_loop.parity_train``) when built and ``kernel``, else parity_reference.train."""
    module = parity_kernel() if kernel else None
    if module is None:
        return parity_reference.train(
            [words_of(flat) for flat in train], num_merges, dev=None if dev is None else [words_of(f) for f in dev],
            ratio=ratio, variant=variant, window_size=window_size, alpha=alpha, global_merges=global_merges,
            min_frequency=min_frequency, tie_break=tie_break, on_merge=on_merge)
    if tie_break not in ("huggingface", "smallest_pair"):
        raise ValueError(f"parity training breaks ties by 'huggingface' or 'smallest_pair', not {tie_break!r}")
    tokens = [bytes([b]) for b in range(256)]
    callback = None
    if on_merge is not None:
        seen = list(tokens)  # the tokens so far, for the callback (new ids count up from 256)

        def callback(a: int, b: int, x: int, language: int, count: int) -> None:
            if x == len(seen):
                seen.append(seen[a] + seen[b])
            on_merge(seen[a], seen[b], language, count)
    hf_ranks = huggingface_ranks() if tie_break == "huggingface" else None  # (bytes by their byte-level characters)
    raw = module.parity_train(
        [tuple(flat) for flat in train], None if dev is None else [tuple(flat) for flat in dev],
        None if ratio is None else [float(r) for r in ratio], num_merges, variant == "window", window_size,
        float(alpha), global_merges, min_frequency, hf_ranks, callback)
    ids = memoryview(raw).cast("i")
    learned = []
    for k in range(0, len(ids), 4):
        a, b, x = ids[k], ids[k + 1], ids[k + 2]
        if x == len(tokens):
            tokens.append(tokens[a] + tokens[b])
        learned.append((tokens[a], tokens[b]))
    return learned


def parity_merges(tok: Trainable, train: Sequence[Counts], dev: Sequence[Counts] | None,
                  ratio: Sequence[float] | None, num_merges: int, options: TrainingOptions) -> Merges:
    """Up to ``num_merges`` parity-aware merges over per-language ``train`` counts (balanced by the
    ``dev`` counts or the ``ratio``s, one per language), as ``tok``'s merges (ids from the first
    free id up); warns when the languages run out of pairs first."""
    config = options.parity
    bar = progress_bar(desc="merging", total=num_merges, unit="merge", enabled=options.progress)

    def on_merge(left: bytes, right: bytes, language: int, count: int) -> None:
        if options.verbose:
            print(f"merge {bar.n + 1}/{num_merges}: {left!r} + {right!r} ({count} occurrences, language "
                  f"{'all' if language < 0 else language})")
        bar.update(1)

    learned = run_parity(
        [flat_words(counts) for counts in train], None if dev is None else [flat_words(counts) for counts in dev],
        ratio, num_merges, variant=config.variant, window_size=config.window_size, alpha=config.alpha,
        global_merges=config.global_merges, min_frequency=options.min_frequency, tie_break=options.tie_break,
        on_merge=on_merge if options.verbose or not bar.disable else None,
    )
    bar.close()
    if len(learned) < num_merges:
        warnings.warn(f"parity training stopped after {len(learned)} of {num_merges} merges: every language ran out "
                      f"of pairs that occur min_frequency={options.min_frequency} times", stacklevel=5)
    return merges_with_ids(tok, learned)


def merges_with_ids(tok: Trainable, learned: Sequence[tuple[bytes, bytes]]) -> Merges:
    """``tok``'s merges and ``learned`` (byte pairs) with ids: a new token takes the first id
    above ``tok``'s that no special token holds; a pair whose bytes are already a token maps to it."""
    specials = set(tok.special_tokens.values())
    ids: dict[bytes, int] = {token: idx for idx, token in tok.vocab.items() if idx not in specials}
    next_id = max(ids.values()) + 1
    merges = dict(tok.merges)
    for left, right in learned:
        merged = left + right
        new_id = ids.get(merged)
        if new_id is None:
            while next_id in specials:
                next_id += 1
            new_id = ids[merged] = next_id
            next_id += 1
        merges[ids[left], ids[right]] = new_id
    return merges
