"""``encode_batch``: many texts on several threads (or processes), results in input order.

Threads are the default. Where the C kernel encodes and the chunking is one of the patterns the C
scanner knows (GPT-2, GPT-4, o200k, Llama 3, Qwen2, Tekken, no normalizer), the whole batch is one C call that
releases the GIL once and runs its own threads over ranges of documents (``encode_texts``): no
Python thread pool, no GIL taken back per range, and for lists the int objects are put in place
without the GIL too, so threads scale with cores and nothing is copied between processes. Elsewhere (the pure-Python encoder, ``regex``-module patterns, normalizers and
pipelines) threads still give the same ids, but the GIL serialises most of the work; there a pool
of forked processes (``num_workers``) is what runs in parallel, on batches of about 1 MB or more.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..chunking.chunking import Chunking
from ..worker_pool import available_cpus, forked_pool, shared, usable_workers
from .encoder import ChunkEncoder
from .special_tokens import AllowedSpecial, DisallowedSpecial, DisallowedSpecialToken, SpecialTokenIndex


class Tokenizer(Protocol):
    """What batches need of a tokenizer (``engine/tokenizer.py``'s ``Tokenizer`` is one)."""

    @property
    def chunking(self) -> Chunking: ...

    @property
    def encoder(self) -> ChunkEncoder: ...

    @property
    def special_token_index(self) -> SpecialTokenIndex: ...

    def encode(self, text: str, allowed_special: AllowedSpecial = ..., disallowed_special: DisallowedSpecial = ...,
               *, num_threads: int = 1) -> list[int]: ...

    def encode_ordinary(self, text: str, *, num_threads: int = 1) -> list[int]: ...

_PARALLEL_MIN_CHARS = 1 << 20  # below this, process start-up costs more than it saves
_TASK_CHARS = 1 << 19  # characters of text per task sent to a worker
_THREAD_MIN_CHARS = 1 << 15  # below this a batch is encoded in the calling thread
_TASKS_PER_THREAD = 4  # ranges per thread, so that an uneven range does not leave a thread idle


def encode_batch_threads(tokenizer: Tokenizer, texts: Sequence[str], *, num_threads: int | None = None,
                         **options) -> list[list[int]]:
    """``[tokenizer.encode(text, **options) for text in texts]`` on ``num_threads`` threads
    (default: the CPUs available)."""
    texts = list(texts)
    fast = _whole_text_encoder(tokenizer, texts, options)
    if fast is None:
        return _threaded(lambda span: [tokenizer.encode(t, **options) for t in texts[span[0] : span[1]]],
                         texts, num_threads)
    encode_texts, scanner = fast
    results = encode_texts(texts, scanner, True, max(1, num_threads or available_cpus()))
    for i, ids in enumerate(results):
        if ids is None:  # a lone surrogate: encode_ordinary's replacement rule
            results[i] = tokenizer.encode_ordinary(texts[i])
    return results


def encode_batch_to_numpy(tokenizer: Tokenizer, texts: Sequence[str], *, num_threads: int | None = None,
                          **options):
    """All ids of ``texts`` as one flat uint32 array, and int64 ``offsets`` (``len(texts) + 1``
    of them): text ``i`` has ids ``ids[offsets[i]:offsets[i + 1]]``."""
    import numpy as np

    texts = list(texts)
    fast = _whole_text_encoder(tokenizer, texts, options)
    if fast is not None:
        encode_texts, scanner = fast
        flat, ends, surrogates = encode_texts(texts, scanner, False, max(1, num_threads or available_cpus()))
        flat, ends = np.frombuffer(flat, dtype=np.uint32), np.frombuffer(ends, dtype=np.int64)
        if surrogates:
            lists = [flat[a:b] for a, b in zip(np.concatenate(([0], ends[:-1])), ends)]
            for i in surrogates:  # a lone surrogate: encode_ordinary's replacement rule
                lists[i] = np.asarray(tokenizer.encode_ordinary(texts[i]), dtype=np.uint32)
            flat, ends = np.concatenate(lists).astype(np.uint32), np.cumsum([len(x) for x in lists], dtype=np.int64)
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        offsets[1:] = ends
        return (flat if flat.flags.writeable else flat.copy()), offsets

    def task(span: tuple[int, int]):
        lists = [tokenizer.encode(t, **options) for t in texts[span[0] : span[1]]]
        flat = np.fromiter((i for ids in lists for i in ids), dtype=np.uint32)
        return flat, np.cumsum([len(ids) for ids in lists], dtype=np.int64)

    parts = _threaded(lambda span: [task(span)], texts, num_threads)
    offsets = [np.zeros(1, dtype=np.int64)]
    base = 0
    for _, ends in parts:
        offsets.append(ends + base)
        base += int(ends[-1]) if len(ends) else 0
    ids = np.concatenate([flat for flat, _ in parts]) if parts else np.zeros(0, dtype=np.uint32)
    return ids.astype(np.uint32, copy=False), np.concatenate(offsets)


def no_plain_array(text: str, allowed_special: object, disallowed_special: object, num_threads: int) -> None:
    """``Tokenizer.encode_to_numpy``'s one C call before there is one: no array (the general path
    runs)."""
    return None


# special-token arguments whose objects are kept by identity for encode_to_numpy's C call: only
# immutable ones (a set could change between two calls)
_IMMUTABLE_ARGUMENTS = frozenset({str, tuple, frozenset})

_NUMPY_UINT32: tuple | None = None  # (numpy.frombuffer, its uint32 dtype), set on first use


def _load_numpy_uint32() -> tuple:
    """numpy's ``frombuffer`` and uint32 dtype, imported on first use (``import hf_bbpe`` stays
    light) and kept: in a call made once per document, the import statement and the dtype's
    parsing would cost more than encoding a short text."""
    global _NUMPY_UINT32
    import numpy

    _NUMPY_UINT32 = (numpy.frombuffer, numpy.dtype(numpy.uint32))
    return _NUMPY_UINT32


def encode_to_numpy(tokenizer: Tokenizer, text: str, allowed_special: AllowedSpecial = "none_raise",
                    disallowed_special: DisallowedSpecial = "all", num_threads: int = 1
                    ) -> tuple[Any, Callable | None]:
    """``tokenizer.encode(text, ...)`` as a uint32 numpy array (tiktoken's ``encode_to_numpy``),
    and the C call that encodes the next text with the same special-token arguments in one step
    (the kernel's ``PlainArrayCall``; :func:`no_plain_array` when there is none for them; None:
    keep the one the tokenizer has).

    Where the C kernel encodes the whole text (a C scanner, no special token allowed) the ids go
    from its buffer to the array without a Python int per id; elsewhere, and for a text cut over
    ``num_threads`` threads, the list of ids is converted.
    """
    scanner = tokenizer.chunking.scanner
    if num_threads == 1 and scanner is not None:
        specials = tokenizer.special_token_index
        allowed, disallowed = specials.policy(allowed_special, disallowed_special)
        if not allowed and not (disallowed and specials.regex(disallowed).search(text)):
            encoder = tokenizer.encoder
            ids = encoder.encode_text_array(text, scanner)
            if ids is not None:
                frombuffer, uint32 = _NUMPY_UINT32 or _load_numpy_uint32()
                plain_array = None
                if not disallowed and {type(allowed_special), type(disallowed_special)} <= _IMMUTABLE_ARGUMENTS:
                    plain_array = encoder.plain_array_call(scanner, allowed_special, disallowed_special) \
                        or no_plain_array
                return frombuffer(ids, uint32), plain_array
    import numpy as np

    options = {"allowed_special": allowed_special, "disallowed_special": disallowed_special}
    fast = _whole_text_encoder(tokenizer, [text], options) if num_threads == 1 else None
    if fast is not None:
        encode_texts, scanner = fast
        flat, _, surrogates = encode_texts([text], scanner, False, 1)
        if not surrogates:
            ids = np.frombuffer(flat, dtype=np.uint32)
            return (ids if ids.flags.writeable else ids.copy()), None
    return np.asarray(tokenizer.encode(text, num_threads=num_threads, **options), dtype=np.uint32), None


def encode_batch_flat(tokenizer: Tokenizer, texts: Sequence[str], *, num_workers: int | None = None, **options):
    """:func:`encode_batch_to_numpy`'s flat uint32 ids and int64 offsets, computed the way that runs
    in parallel for this tokenizer: threads where the C kernel encodes whole texts without the GIL,
    else ``num_workers`` forked processes (:func:`encode_batch`). ``num_workers`` defaults to the
    CPUs available; 1 encodes in this thread."""
    import numpy as np

    texts = list(texts)
    if num_workers == 1 or _whole_text_encoder(tokenizer, texts, options) is not None:
        return encode_batch_to_numpy(tokenizer, texts, num_threads=num_workers, **options)
    lists = encode_batch(tokenizer, texts, num_workers=num_workers or available_cpus(), **options)
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(ids) for ids in lists], out=offsets[1:])
    ids = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.uint32, count=int(offsets[-1]))
    return ids, offsets


def append_to_each(ids, offsets, token_id: int, dtype=None):
    """Flat ids and offsets (as :func:`encode_batch_to_numpy` gives them) with ``token_id`` after
    each text's ids (an EOS), as ``dtype`` (default: that of ``ids``)."""
    import numpy as np

    offsets = np.asarray(offsets, dtype=np.int64)
    moved = offsets + np.arange(len(offsets), dtype=np.int64)  # text i starts i slots later
    out = np.empty(int(moved[-1]), dtype=dtype or ids.dtype)
    is_text = np.ones(len(out), dtype=bool)
    is_text[moved[1:] - 1] = False
    out[is_text] = ids
    out[~is_text] = token_id
    return out, moved


def _whole_text_encoder(tokenizer: Tokenizer, texts: list[str], options: dict):
    """``(encode_texts, scanner)`` when every text can go through the C kernel in one call: a C
    scanner splits, the C kernel encodes, and no special token is allowed (a disallowed one
    raises here, as ``encode`` would). None when texts must go through ``tokenizer.encode``."""
    scanner = tokenizer.chunking.scanner
    encoder = tokenizer.encoder
    if scanner is None or not encoder.native:
        return None
    specials = tokenizer.special_token_index
    allowed, disallowed = specials.policy(options.get("allowed_special", "none_raise"),
                                          options.get("disallowed_special", "all"))
    if allowed:
        return None
    if disallowed:
        search = specials.regex(disallowed).search
        for text in texts:
            match = search(text)
            if match:
                raise DisallowedSpecialToken(match.group())
    return encoder.encode_texts, scanner


def _threaded(task, texts: list[str], num_threads: int | None) -> list:
    """Concatenated results of ``task((start, stop))`` over ranges of ``texts``, in order, on a
    pool of threads (or in this thread when the batch is small or one thread is asked for)."""
    num_threads = max(1, num_threads or available_cpus())
    total = sum(map(len, texts))
    if num_threads == 1 or len(texts) < 2 or total < _THREAD_MIN_CHARS:
        return task((0, len(texts))) if texts else []
    spans = list(_task_ranges(texts, max(1, total // (num_threads * _TASKS_PER_THREAD))))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(num_threads, len(spans))) as pool:
        return [item for part in pool.map(task, spans) for item in part]


def encode_batch(tokenizer: Tokenizer, texts: Sequence[str], *, num_workers: int, **options) -> list[list[int]]:
    """Encode ``texts`` with ``tokenizer.encode(text, **options)``, in parallel when it pays.

    Workers inherit the tokenizer and the texts through fork (a task is only a range of
    indices, so no text is pickled) and send back each task's ids as one flat int64 array plus
    lengths, which costs far less to pass between processes than lists of ints.
    """
    texts = list(texts)
    worth_it = len(texts) >= 2 and sum(map(len, texts)) >= _PARALLEL_MIN_CHARS
    num_workers = usable_workers(num_workers) if worth_it and num_workers > 1 else 1
    if num_workers == 1:
        return [tokenizer.encode(text, **options) for text in texts]
    with forked_pool(num_workers, tokenizer=tokenizer, options=options, texts=texts) as pool:
        results: list[list[int]] = []
        for flat, lengths in pool.imap(_encode_task, _task_ranges(texts)):
            ids = flat.tolist()
            start = 0
            for end in itertools.accumulate(lengths):
                results.append(ids[start:end])
                start = end
        return results


def _task_ranges(texts: list[str], task_chars: int = _TASK_CHARS):
    """``(start, stop)`` index ranges of about ``task_chars`` characters each."""
    start = size = 0
    for i, text in enumerate(texts):
        size += len(text)
        if size >= task_chars:
            yield start, i + 1
            start, size = i + 1, 0
    if start < len(texts):
        yield start, len(texts)


def _encode_task(span: tuple[int, int]) -> tuple[array, array]:
    tokenizer, options = shared("tokenizer"), shared("options")
    flat = array("q")  # ids reach 2**32 - 1 (tiktoken's u32 ranks)
    lengths = array("i")
    for text in shared("texts")[span[0] : span[1]]:
        ids = tokenizer.encode(text, **options)
        flat.extend(ids)
        lengths.append(len(ids))
    return flat, lengths
