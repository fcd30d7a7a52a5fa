"""Parity-aware BPE's merge loop, as training runs it: per-language chunk counts in, a tokenizer's
merges out (parity_reference.py is the loop and says what it counts).

The merges come as byte pairs; here they get ids above the tokenizer's, skipping its special
tokens. A merge whose bytes already form a token gets that token's id, as ``tokenizers`` does.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..encoding.vocabulary import Merges
from ..progress import progress_bar
from . import parity_reference
from .chunk_counts import ChunkCounts
from .options import Trainable, TrainingOptions

Counts = Mapping[str | bytes, int] | ChunkCounts


def words_of(counts: Counts) -> tuple[list[bytes], list[int]]:
    """A language's chunks as ``(words, counts)``, words as bytes."""
    words, weights = [], []
    for chunk, count in counts.items():
        words.append(chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk))
        weights.append(int(count))
    return words, weights


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

    learned = parity_reference.train(
        [words_of(counts) for counts in train], num_merges,
        dev=None if dev is None else [words_of(counts) for counts in dev], ratio=ratio,
        variant=config.variant, window_size=config.window_size, alpha=config.alpha,
        global_merges=config.global_merges, min_frequency=options.min_frequency, tie_break=options.tie_break,
        on_merge=on_merge,
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
