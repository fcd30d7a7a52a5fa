"""Parity-aware BPE's merge loop in pure Python: the twin of the C kernel (csrc/merge/parity.c),
which runs it step for step (Foroutan et al., "Parity-Aware Byte-Pair Encoding:
Improving Cross-lingual Fairness in Tokenization", ACL 2026, arXiv 2508.04796).

Plain BPE merges the pair that is most frequent over the whole corpus, so the language with the
most data gets most merges. Parity-aware BPE instead picks, at each step, the language that is
compressed worst, and merges *that language's* most frequent pair (in every language's words).
This module follows ``tokenizers``' ``ParityBpeTrainer`` (0.23, ``models/bpe/parity_trainer.rs``)
rule for rule, so that with ``tie_break="huggingface"`` its merges are that trainer's. What is
counted, as that file counts it:

* **Words**: the chunks of each language's training text, with their counts, as byte strings;
  a word is a sequence of tokens, a token is its bytes (a merge whose bytes already form a token
  yields that token, as ``tokenizers`` looks new tokens up by their string).
* **Pair counts** are per language and exact: merging rewrites only the words where the pair
  occurs (left to right, without overlap) and moves the counts of the neighbouring pairs.
* **Which language** (the worst compressed), among those not exhausted:

  - with a dev set (``dev``): the one whose dev text is the most tokens *now* (its dev words
    are merged along with the training words). A parallel dev set makes those totals
    comparable. Ties go to the language given first.
  - with target ratios (``ratio``): the one with the lowest ``(initial / current) / ratio``,
    where initial and current are the token totals of its *training* words (so the rate is
    counted in bytes at the start); ties go to the language given first.
  - ``variant="window"``: the same order, but a language already chosen more than
    ``alpha / number of languages`` of the last ``window_size`` times is passed over for the
    next one (if every language is passed over, the last one tried is taken). Where only
    exhausted languages would be left, ``ParityBpeTrainer`` 0.23.3 never returns (it retries
    language 0 for ever); this loop takes the best language the window passed over instead.
* **Which pair**: the chosen language's pair with the highest count; ties go to the pair whose
  two tokens, as byte-level strings (GPT-2's byte-to-unicode table), compare *greatest*
  (``max`` over ``(count, (left, right))``, Python's and Rust's string order) under
  ``"huggingface"``, and to the smallest ``(left id, right id)`` under ``"smallest_pair"``.
  A language whose best pair counts less than ``min_frequency`` (or that has no pair) is
  exhausted and never chosen again; training stops when all are.
* ``global_merges``: the first merges are plain BPE on the counts summed over languages (the
  same tie rule); if no pair qualifies there, training stops.

The loop never passes over the corpus per merge: each language keeps its pair counts and a lazy
max-heap; dev words live in the same structure (without a heap), so the dev totals are running
sums that each merge lowers by the occurrences it rewrote.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..chunking.byte_unicode import bytes_to_unicode

_DEAD = -1
_BYTE_CHARS = bytes_to_unicode()


def _descending(text: str) -> tuple[int, ...]:
    """A key that sorts strings in *descending* order (heapq is a min-heap): the code points
    negated, then 1, which sorts after every negated code point, so a longer string with the same
    start comes first, as it is the greater string."""
    return (*(-ord(c) for c in text), 1)


@dataclass
class Words:
    """One language's words (training or dev): each word a linked list of token ids over one
    array of positions; a merge overwrites the left symbol and unlinks the right one."""

    sym: list[int]
    prv: list[int]
    nxt: list[int]
    weight: list[int]
    counts: dict[tuple[int, int], int]
    where: dict[tuple[int, int], list[int]]
    length: int  # the tokens of all words, each word once per count

    @classmethod
    def of(cls, words: Sequence[Sequence[int]], weights: Sequence[int]) -> Words:
        """Link ``words`` (token ids) with their ``weights`` and count their pairs."""
        self = cls([], [], [], [], {}, {}, 0)
        for word, count in zip(words, weights):
            if count <= 0 or not word:
                continue
            start = len(self.sym)
            for k, token in enumerate(word):
                self.sym.append(token)
                self.weight.append(count)
                self.prv.append(start + k - 1 if k else -1)
                self.nxt.append(start + k + 1 if k + 1 < len(word) else -1)
                if k:
                    self._add((word[k - 1], token), count, start + k - 1)
            self.length += len(word) * count
        return self

    def _add(self, pair: tuple[int, int], delta: int, position: int | None = None) -> None:
        self.counts[pair] = self.counts.get(pair, 0) + delta
        if position is not None:
            self.where.setdefault(pair, []).append(position)

    def merge(self, pair: tuple[int, int], x: int, changed: set[tuple[int, int]]) -> None:
        """Replace each occurrence of ``pair`` by ``x``, left to right in each word; add the pairs
        whose counts moved to ``changed``; lower ``length`` by the tokens removed."""
        positions = self.where.pop(pair, None)
        if positions is None:
            return
        a, b = pair
        sym, prv, nxt = self.sym, self.prv, self.nxt
        for i in sorted(set(positions)):
            j = nxt[i]
            if sym[i] != a or j < 0 or sym[j] != b:
                continue  # stale: an earlier merge (or this one, in a run like "aaa") took it
            c = self.weight[i]
            left, right = prv[i], nxt[j]
            if left >= 0:
                self._add((sym[left], a), -c)
                self._add((sym[left], x), c, left)
                changed.update(((sym[left], a), (sym[left], x)))
            if right >= 0:
                self._add((b, sym[right]), -c)
                self._add((x, sym[right]), c, i)
                changed.update(((b, sym[right]), (x, sym[right])))
            sym[i], sym[j] = x, _DEAD
            nxt[i] = right
            if right >= 0:
                prv[right] = i
            self.length -= c
        self.counts[pair] = 0


class _Queue:
    """A lazy max-heap over one table of pair counts: an entry whose count is out of date is
    pushed back with the current one when it comes up (every rise is pushed when it happens)."""

    def __init__(self, counts: dict[tuple[int, int], int], key: Callable[[tuple[int, int]], object]) -> None:
        self.counts = counts
        self.key = key
        self.heap = [(-c, key(p), p) for p, c in counts.items() if c > 0]
        heapq.heapify(self.heap)

    def push(self, pair: tuple[int, int]) -> None:
        count = self.counts.get(pair, 0)
        if count > 0:
            heapq.heappush(self.heap, (-count, self.key(pair), pair))

    def best(self) -> tuple[tuple[int, int], int] | None:
        """The pair with the highest count (ties by the key), or None when no count is positive."""
        heap = self.heap
        while heap:
            negative, key, pair = heapq.heappop(heap)
            count = self.counts.get(pair, 0)
            if count <= 0:
                continue
            if count != -negative:
                heapq.heappush(heap, (-count, key, pair))
                continue
            heapq.heappush(heap, (negative, key, pair))  # still queued: it may not be merged
            return pair, count
        return None


def _select_window(values: Sequence[float], recent: Sequence[int], window_size: int, threshold: float) -> int:
    """The window variant's choice: the language with the greatest value (the first on ties)
    whose share of the last ``window_size`` choices is at most ``threshold``; passed-over
    languages are masked, and when all are, the last one tried is taken."""
    mask = [True] * len(values)
    while True:
        best, best_value = 0, float("-inf")
        for k, value in enumerate(values):
            if mask[k] and value > best_value:
                best, best_value = k, value
        if best_value == float("-inf") and not mask[best]:
            # only exhausted languages are left unmasked: ParityBpeTrainer 0.23.3 loops here for
            # ever (it keeps trying language 0); take the best language the window passed over
            return max(range(len(values)), key=lambda k: (values[k], -k))
        if recent.count(best) / window_size <= threshold:
            return best
        mask[best] = False
        if not any(mask):
            return best


def train(
    languages: Sequence[tuple[Sequence[bytes], Sequence[int]]],
    num_merges: int,
    *,
    dev: Sequence[tuple[Sequence[bytes], Sequence[int]]] | None = None,
    ratio: Sequence[float] | None = None,
    variant: str = "base",
    window_size: int = 100,
    alpha: float = 2.0,
    global_merges: int = 0,
    min_frequency: int = 0,
    tie_break: str = "huggingface",
    on_merge: Callable[[bytes, bytes, int, int], object] | None = None,
) -> list[tuple[bytes, bytes]]:
    """Up to ``num_merges`` merges, as ``(left bytes, right bytes)`` in order, over per-language
    ``(words, counts)`` (words as bytes); ``dev`` (the same shape, one per language) or ``ratio``
    (one float per language) balances them, as the module doc says. ``on_merge(left, right,
    language, count)`` is called after each merge (``language`` is -1 in the global phase)."""
    if (dev is None) == (ratio is None):
        raise ValueError("parity training needs a dev set or target ratios (one of them)")
    tokens: list[bytes] = [bytes([b]) for b in range(256)]
    token_id = {t: i for i, t in enumerate(tokens)}
    strings = [_BYTE_CHARS[b] for b in range(256)]

    descending: list[tuple[int, ...]] = [_descending(s) for s in strings]  # per token, made once
    if tie_break == "huggingface":
        def key(pair: tuple[int, int]) -> object:
            return (descending[pair[0]], descending[pair[1]])
    elif tie_break == "smallest_pair":
        def key(pair: tuple[int, int]) -> object:
            return pair
    else:
        raise ValueError(f"parity training breaks ties by 'huggingface' or 'smallest_pair', not {tie_break!r}")

    train_words = [Words.of([list(w) for w in words], counts) for words, counts in languages]
    dev_words = None if dev is None else [Words.of([list(w) for w in words], counts) for words, counts in dev]
    queues = [_Queue(words.counts, key) for words in train_words]
    n = len(train_words)
    initial = [float(words.length) for words in train_words]
    summed: dict[tuple[int, int], int] = {}
    if global_merges > 0:
        for words in train_words:
            for pair, count in words.counts.items():
                if count > 0:
                    summed[pair] = summed.get(pair, 0) + count
    global_queue = _Queue(summed, key)

    recent: list[int] = []
    threshold = alpha / n
    exhausted: set[int] = set()
    merges: list[tuple[bytes, bytes]] = []
    while len(merges) < num_merges and len(exhausted) < n:
        if len(merges) < global_merges:
            language = -1
        else:
            language = _choose(train_words, dev_words, initial, ratio, exhausted, variant, recent, window_size,
                               threshold)
        found = (global_queue if language < 0 else queues[language]).best()
        if found is None or found[1] < min_frequency:
            if language < 0:
                break
            exhausted.add(language)
            continue
        pair, count = found
        merged = tokens[pair[0]] + tokens[pair[1]]
        x = token_id.get(merged)
        if x is None:
            x = token_id[merged] = len(tokens)
            tokens.append(merged)
            strings.append(strings[pair[0]] + strings[pair[1]])
            descending.append(_descending(strings[-1]))
        merges.append((tokens[pair[0]], tokens[pair[1]]))
        changed_anywhere: set[tuple[int, int]] = {pair}
        for words, queue in zip(train_words, queues):
            changed: set[tuple[int, int]] = set()
            words.merge(pair, x, changed)
            for changed_pair in changed:
                queue.push(changed_pair)
            changed_anywhere |= changed
        if global_merges > 0:
            for changed_pair in changed_anywhere:
                summed[changed_pair] = max(0, sum(words.counts.get(changed_pair, 0) for words in train_words))
                global_queue.push(changed_pair)
        if dev_words is not None:
            for words in dev_words:
                words.merge(pair, x, set())
        if on_merge is not None:
            on_merge(merges[-1][0], merges[-1][1], language, count)
    return merges


def _choose(train_words: list[Words], dev_words: list[Words] | None, initial: list[float],
            ratio: Sequence[float] | None, exhausted: set[int], variant: str, recent: list[int],
            window_size: int, threshold: float) -> int:
    """The language whose pair is merged next (the module doc's rule)."""
    if ratio is not None:
        # the worst compressed has the lowest rate; the window variant takes the highest negated rate
        values = [-((initial[k] / words.length) / ratio[k]) for k, words in enumerate(train_words)]
    else:
        values = [float(words.length) for words in dev_words]
    values = [float("-inf") if k in exhausted else v for k, v in enumerate(values)]
    if variant == "base":
        return max(range(len(values)), key=lambda k: (values[k], -k))
    choice = _select_window(values, recent, window_size, threshold)
    recent.append(choice)
    if len(recent) > window_size:
        del recent[0]
    return choice
