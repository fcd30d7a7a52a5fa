"""The chunk encoder: applies learned merges to one pre-tokenized chunk.

The result is minbpe's ``_encode_chunk``: repeatedly merge the adjacent pair with the lowest
merge id, all its occurrences left to right. Short chunks (nearly all of them) use that loop
directly, with the pair lookups done in C by ``map``; long chunks use a heap over a linked list,
as tiktoken does for long pieces, so 1 MB without a split point costs O(n log n), not O(n^2).
A bounded cache maps frequent chunks to their ids.

The same algorithm is compiled in ``_chunk_bpe.c``, which does the work when the extension is
built (an installed hf_bbpe). This Python version is what runs where only source files can go:
the copy of the tokenizer code that transformers saves beside a model for
``trust_remote_code=True``. Tests check that both give identical ids.
"""

from __future__ import annotations

import heapq
import importlib
from collections.abc import Iterable, Sequence
from itertools import repeat

try:  # imported by name, not "from .", so that remote-code copies of this file load without it
    _native = importlib.import_module("._chunk_bpe", __package__)
except ImportError:
    _native = None

_NO_MERGE = 1 << 62
_LONG_CHUNK = 64  # bytes; above this the heap path wins
_CACHE_MAX_ENTRIES = 1 << 18
_CACHE_MAX_CHUNK = 128  # characters; longer chunks are rare and not worth keeping


class ChunkEncoder:
    """Encodes chunks of text with a fixed set of merges.

    ``merges`` maps ``(left_id, right_id)`` to the merged id, where a lower merged id means an
    earlier merge. ``byte_ids[b]`` is the id of the single byte ``b`` (the identity for trained
    tokenizers; a permutation for GPT-2 and cl100k).
    """

    def __init__(self, merges: dict[tuple[int, int], int], byte_ids: Sequence[int], *, native: bool = True) -> None:
        self.merges = merges
        self.byte_ids = tuple(byte_ids)
        self._identity = self.byte_ids == tuple(range(256))
        self._cache: dict[str, tuple[int, ...]] = {}
        if native and _native is not None:
            kernel = _native.ChunkBPE(merges, self.byte_ids, _CACHE_MAX_ENTRIES)
            self.encode_chunks = kernel.encode_chunks
            self.encode_bytes = kernel.encode_bytes
            self.clear_cache = kernel.clear_cache
        else:  # only the Python loops need the inverse table
            self._pair_of = {new: pair for pair, new in merges.items()}

    def __getstate__(self) -> dict:
        return {"merges": self.merges, "byte_ids": self.byte_ids, "native": "encode_chunks" in self.__dict__}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["merges"], state["byte_ids"], native=state["native"])

    def clear_cache(self) -> None:
        self._cache.clear()

    def encode_chunks(self, chunks: Iterable[str]) -> list[int]:
        """Encode each chunk and concatenate the ids (the hot loop of ``encode``)."""
        out: list[int] = []
        extend = out.extend
        cache = self._cache
        get = cache.get
        encode_bytes = self.encode_bytes
        for chunk in chunks:
            ids = get(chunk)
            if ids is None:
                ids = tuple(encode_bytes(chunk.encode("utf-8")))
                if len(chunk) <= _CACHE_MAX_CHUNK:
                    if len(cache) >= _CACHE_MAX_ENTRIES:
                        cache.clear()
                    cache[chunk] = ids
            extend(ids)
        return out

    def encode_bytes(self, data: bytes) -> list[int]:
        """Encode one chunk given as bytes (no cache)."""
        ids = list(data) if self._identity else [self.byte_ids[b] for b in data]
        if len(ids) < 2:
            return ids
        if len(ids) > _LONG_CHUNK:
            return self._merge_long(ids)
        return self._merge_short(ids)

    def _merge_short(self, ids: list[int]) -> list[int]:
        get = self.merges.get
        pair_of = self._pair_of
        while len(ids) >= 2:
            best = min(map(get, zip(ids, ids[1:]), repeat(_NO_MERGE)))
            if best == _NO_MERGE:
                break
            a, b = pair_of[best]
            out: list[int] = []
            i = 0
            n = len(ids)
            while i < n:
                if i < n - 1 and ids[i] == a and ids[i + 1] == b:
                    out.append(best)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            ids = out
        return ids

    def _merge_long(self, ids: list[int]) -> list[int]:
        """Heap of (merge id, position) over a doubly linked list of tokens.

        Popping in (merge id, position) order merges the lowest pair first and its occurrences
        left to right, exactly like the short loop; entries made stale by a neighbouring merge
        are recognised because the pair at that position no longer maps to the same id.
        """
        get = self.merges.get
        n = len(ids)
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))
        nxt[-1] = -1
        alive = [True] * n
        heap = []
        for i in range(n - 1):
            r = get((ids[i], ids[i + 1]))
            if r is not None:
                heap.append((r, i))
        heapq.heapify(heap)
        push, pop = heapq.heappush, heapq.heappop
        while heap:
            r, i = pop(heap)
            if not alive[i]:
                continue
            j = nxt[i]
            if j < 0 or get((ids[i], ids[j])) != r:
                continue
            ids[i] = r
            alive[j] = False
            k = nxt[j]
            nxt[i] = k
            if k >= 0:
                prv[k] = i
                r2 = get((r, ids[k]))
                if r2 is not None:
                    push(heap, (r2, i))
            p = prv[i]
            if p >= 0:
                r2 = get((ids[p], r))
                if r2 is not None:
                    push(heap, (r2, p))
        out = []
        i = 0
        while i >= 0:
            out.append(ids[i])
            i = nxt[i]
        return out
