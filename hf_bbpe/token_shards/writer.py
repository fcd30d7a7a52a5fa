"""Writing token shards: cut the document stream into shards, encode each, commit it, resume.

Shard boundaries depend only on the documents (a shard ends after the document that brings its
UTF-8 text to ``shard_bytes``), and ids are the engine's ``encode_ordinary`` ids whichever encoder
computes them, so the folder is byte-identical however the encoding ran. The shard format
(``formats.py``) writes a shard's files, each atomically (or appends to a file that takes its name
only at the end, ``growing_file.py``), then the manifest, atomically too, records it: after an
interruption the manifest says which documents are done, and a new run with the same settings
skips them and rewrites whatever came after (a shard written but not yet recorded is written
again, identically).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..engine.progress import progress_bar
from ..engine.tokenizer import Tokenizer
from .formats import shard_format
from .growing_file import PARTIAL
from .layout import FORMAT, MANIFEST, VERSION, read_manifest, write_manifest
from .shard_format import ShardFormat
from .val_split import DEFAULT_VAL_FRACTION, DEFAULT_VAL_SEED, check_both_splits, check_val_fraction

DEFAULT_SHARD_BYTES = 256 << 20  # of UTF-8 text: about 64M tokens, 128 MB of uint16
DEFAULT_BATCH_BYTES = 16 << 20  # text handed to the encoder at a time (the progress bar moves per batch)

Encoder = Callable[[list[str]], tuple[Any, Any]]
"""texts -> (flat uint32 ids, int64 offsets with ``len(texts) + 1`` entries), as ``encode_ordinary``.
An encoder that also has ``submit(texts)``, returning at once a function that waits for those
ids (``hf_bbpe.distributed.TextEncoderPool``), gets the next shard's texts while it encodes a shard."""


def local_encoder(tokenizer: Tokenizer, num_workers: int | None = None) -> Encoder:
    """This machine's encoder: the engine's batch encoding on ``num_workers`` threads or processes
    (default: every CPU; 1 encodes in this thread). Text is plain text, as ``encode_ordinary``
    reads it: a special token's string inside a document is not the special token."""
    from ..engine.encoding.batches import encode_batch_flat

    def encode(texts: list[str]) -> tuple[Any, Any]:
        return encode_batch_flat(tokenizer, texts, num_workers=num_workers, allowed_special="none",
                                 disallowed_special=())

    return encode


def tokenizer_sha256(tokenizer: Tokenizer) -> str:
    """sha256 of the tokenizer's ``.model`` file (merges, special tokens, split pattern, normalizer):
    the manifest's record of what encoded the shards."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save(Path(tmp) / "tokenizer")
        return hashlib.sha256((Path(tmp) / "tokenizer.model").read_bytes()).hexdigest()


def write_token_shards(
    documents: Iterable[str],
    tokenizer: Tokenizer,
    out: str | os.PathLike,
    *,
    eos_id: int,
    encoder: Encoder | None = None,
    format: str = "npy",
    val_fraction: float | None = None,
    val_seed: int = DEFAULT_VAL_SEED,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    source: Mapping[str, Any] | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Encode ``documents`` into token shards in the folder ``out``; returns the manifest.

    ``format`` is the files' layout, for a pretraining loader: ``npy`` (this package's shards, see
    :func:`open_token_shards`), ``nanogpt`` (``train.bin``/``val.bin``), ``llmc`` (llm.c and
    modded-nanogpt), ``megatron`` (Megatron-Core's ``.bin``/``.idx``) or ``olmo`` (OLMo-core's
    memmaps); the ids are the same in every one. ``nanogpt`` and ``llmc`` put about
    ``val_fraction`` of the documents (default 0.0005, nanoGPT's), picked by a hash of
    ``val_seed`` and each document's position (``val_split.py``), in their val file.

    ``encoder`` computes the ids (default: :func:`local_encoder` on every CPU; Ray's is
    ``hf_bbpe.distributed.encode_texts``); it never changes the result. ``source`` describes the
    input (file names and sizes, how documents are cut) and is kept in the manifest: a folder
    left by an interrupted run resumes only with the same tokenizer, EOS id, format, split,
    ``shard_bytes`` and ``source``, and ``documents`` must yield the same documents again. A
    finished folder is returned as it is.
    """
    if shard_bytes < 1 or batch_bytes < 1:
        raise ValueError(f"shard_bytes and batch_bytes must be >= 1, got {shard_bytes} and {batch_bytes}")
    n_vocab = tokenizer.n_vocab
    if not 0 <= eos_id < n_vocab:
        raise ValueError(f"eos_id {eos_id} is not an id of the tokenizer (0 <= id < {n_vocab})")
    fmt = shard_format(format)
    settings = {
        "format": FORMAT, "version": VERSION, "shard_format": fmt.name, "dtype": fmt.dtype(n_vocab),
        "vocab_size": n_vocab, "eos_id": eos_id, "tokenizer_sha256": tokenizer_sha256(tokenizer),
        "shard_bytes": shard_bytes, **_split_settings(fmt, val_fraction, val_seed), "source": dict(source or {}),
    }
    folder = Path(out)
    manifest = _start_or_resume(folder, settings)
    # what the folder held before the first run: only temp and .partial files can be left then (ours)
    before = None if not folder.is_dir() else set(os.listdir(folder)) if not manifest["shards"] else set()
    if manifest["complete"]:
        return manifest
    if manifest["shards"]:  # an interrupted run's growing files, back to what its manifest records
        fmt.resume(folder, manifest)
    encode = encoder or local_encoder(tokenizer)
    stream = iter(documents)
    done = manifest["documents"]
    if done and sum(1 for _ in itertools.islice(stream, done)) < done:
        raise ValueError(f"{folder / MANIFEST}: records {done} documents done, but the input now has fewer "
                         "(it changed since the interrupted run); write to a new folder")
    submit = getattr(encode, "submit", None)
    with progress_bar(desc="encoding", unit="MB", enabled=progress, scale=1 / 1e6) as bar:
        pending = None  # a shard whose ids an asynchronous encoder is computing
        for texts in _shard_texts(stream, shard_bytes):
            jobs = _start_batches(texts, encode, submit, batch_bytes)
            if pending is not None:
                _commit_shard(fmt, folder, manifest, *pending, eos_id, n_vocab, bar)
            pending = (texts, jobs)
            if submit is None:
                _commit_shard(fmt, folder, manifest, *pending, eos_id, n_vocab, bar)
                pending = None
        if pending is not None:
            _commit_shard(fmt, folder, manifest, *pending, eos_id, n_vocab, bar)
    try:
        if not manifest["documents"]:
            raise ValueError("no documents to encode (empty input)")
        if fmt.has_splits:
            check_both_splits(folder, manifest)
    except ValueError:  # every run of the same command stops here again: its files can never be finished
        discard_new_run(folder, before)
        raise
    fmt.finish(folder, manifest)
    manifest["complete"] = True
    write_manifest(folder, manifest)
    return manifest


def _start_or_resume(folder: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The manifest to continue from: a new one for a new or empty folder (written with the first
    shard, so that input that fails before a shard is whole leaves nothing), the folder's own if it
    was made with the same settings; else a ValueError naming what differs."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder}: exists and is not a folder")
    manifest = read_manifest(folder) if folder.is_dir() else None
    if manifest is not None and not manifest["shards"] and not manifest.get("complete"):
        manifest = None  # a run that committed nothing: start afresh, whatever its settings were
        (folder / MANIFEST).unlink()
    if manifest is None:
        others = sorted(p.name for p in folder.iterdir() if not _is_temp_file(p.name) and not p.name.endswith(PARTIAL)) \
            if folder.is_dir() else []
        if others:
            raise ValueError(f"{folder}: holds files but no {MANIFEST} ({', '.join(others[:3])}...): "
                             "give a new or empty folder")
        return {**settings, "complete": False, "documents": 0, "tokens": 0, "shards": []}
    for key, value in settings.items():
        before = manifest.get(key)
        if before != value:
            if isinstance(value, dict) and isinstance(before, dict):  # name the part of "source" that differs
                key, before, value = next((f"{key}.{k}", before.get(k), value.get(k)) for k in {**before, **value}
                                          if before.get(k) != value.get(k))
            raise ValueError(f"{folder / MANIFEST}: was written with another {key} ({before!r}, now {value!r}); "
                             "write to a new folder, or delete this one to start over")
    for leftover in folder.iterdir():  # temp files of a killed run (atomic_open removes its own otherwise)
        if _is_temp_file(leftover.name):
            leftover.unlink()
    return manifest


def discard_new_run(folder: str | os.PathLike, before: Iterable[str] | None) -> None:
    """Remove what a run that started ``folder`` afresh wrote there: every entry but ``before``
    (the names it held when the run began; None: the folder did not exist, and goes too). For a
    run stopped by bad input, which every run of the same command would meet again, so that its
    shards could never be resumed into a finished folder (a resumed run that ends so passes an
    empty ``before``: the folder held only this command's files)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    if before is None:
        shutil.rmtree(folder)
        return
    for path in folder.iterdir():
        if path.name not in before:
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


def _split_settings(fmt: ShardFormat, val_fraction: float | None, val_seed: int) -> dict[str, Any]:
    """The manifest's record of the val split: for the formats that have one, else nothing."""
    if not fmt.has_splits:
        if val_fraction is not None:
            raise ValueError(f"val_fraction is for the formats with a val file (nanogpt, llmc); {fmt.name} "
                             "shards are split by their loader")
        return {}
    val_fraction = DEFAULT_VAL_FRACTION if val_fraction is None else val_fraction
    check_val_fraction(val_fraction)
    return {"val_fraction": val_fraction, "val_seed": val_seed}


def _is_temp_file(name: str) -> bool:
    """An atomic write's temp file (``atomic_open``'s ``.NAME.XXXX.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def _shard_texts(documents: Iterator[str], shard_bytes: int) -> Iterator[list[str]]:
    """The documents in shards: each ends with the document that brings it to ``shard_bytes``."""
    texts: list[str] = []
    size = 0
    for n, doc in enumerate(documents):
        if not isinstance(doc, str):
            raise TypeError(f"document {n} is a {type(doc).__name__}, not a str")
        texts.append(doc)
        size += len(doc.encode("utf-8", "surrogatepass"))
        if size >= shard_bytes:
            yield texts
            texts, size = [], 0
    if texts:
        yield texts


def _start_batches(texts: list[str], encode: Encoder, submit: Any, batch_bytes: int) -> list[tuple[list[str], Any]]:
    """``(batch, function returning its ids and offsets)`` per batch of ``texts``: started now on
    an encoder that can ``submit``, else computed when the shard is committed, batch by batch."""
    if submit is not None:
        return [(batch, submit(batch)) for batch in _batches(texts, batch_bytes)]
    return [(batch, lambda batch=batch: encode(batch)) for batch in _batches(texts, batch_bytes)]


def _commit_shard(fmt: ShardFormat, folder: Path, manifest: dict[str, Any], texts: list[str],
                  jobs: list[tuple[list[str], Any]], eos_id: int, n_vocab: int, bar: Any) -> None:
    """Write the next shard in ``fmt`` (each document's ids, then ``eos_id``, as the manifest's
    dtype, and its int64 offsets) and record it in the manifest."""
    import numpy as np

    from ..engine.encoding.batches import append_to_each

    id_parts, length_parts = [], []
    for batch, result in jobs:
        ids, offsets = result()
        ids, offsets = np.asarray(ids), np.asarray(offsets, dtype=np.int64)
        if len(offsets) != len(batch) + 1:
            raise RuntimeError(f"the encoder returned {len(offsets) - 1} documents for {len(batch)}")
        if len(ids) and int(ids.max()) >= n_vocab:
            raise RuntimeError(f"the encoder returned id {int(ids.max())}, outside the tokenizer's {n_vocab} ids")
        id_parts.append(ids)
        length_parts.append(np.diff(offsets))
        bar.update(sum(len(text.encode("utf-8", "surrogatepass")) for text in batch))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(length_parts), out=offsets[1:])
    tokens, offsets = append_to_each(np.concatenate(id_parts), offsets, eos_id, np.dtype(manifest["dtype"]))
    if not manifest["shards"]:  # a new run's first shard makes the folder and the format's files
        folder.mkdir(parents=True, exist_ok=True)
        fmt.resume(folder, manifest)
    entry = fmt.write_shard(folder, manifest, tokens, offsets)
    manifest["shards"].append(entry)
    manifest["documents"] += entry["documents"]
    manifest["tokens"] += entry["tokens"]
    write_manifest(folder, manifest)


def _batches(texts: list[str], batch_bytes: int) -> Iterator[list[str]]:
    start = size = 0
    for i, text in enumerate(texts):
        size += len(text)
        if size >= batch_bytes:
            yield texts[start : i + 1]
            start, size = i + 1, 0
    if start < len(texts):
        yield texts[start:]
