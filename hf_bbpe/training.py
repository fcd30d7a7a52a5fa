"""Training a tokenizer: count the chunks of a corpus, then learn merges over them.

``Tokenizer.train``, ``train_from_counts`` and ``extend`` are thin methods over the functions
here. The steps, and where each lives:

1. **Counting** (:func:`chunk_counts`): ``chunk_counting.py`` (documents split with the pattern,
   counted in worker processes), or ``hf_bbpe.distributed`` for a Ray Dataset.
2. **Merging** (:func:`learn`): ``trainer.train_merges``, the one merge loop (the C kernel
   ``_merge_loop.c`` or its twin ``merge_loop.py``).

The tokenizer's state is reset to the 256 bytes before training and set from the learned merges
after it; ``extend`` builds a new tokenizer that keeps every old merge.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .chunk_counting import count_chunks, warn_if_mostly_control
from .progress import progress_bar
from .trainer import train_merges

if TYPE_CHECKING:
    from .tokenizer import Merges, Tokenizer


def train_tokenizer(
    tok: Tokenizer,
    text: str | Iterable[str],
    vocab_size: int,
    verbose: bool = False,
    *,
    tie_break: str = "smallest_pair",
    min_frequency: int = 1,
    num_workers: int | None = None,
    progress: bool | None = None,
    text_column: str = "text",
) -> None:
    """``tok.train``: count the chunks of ``text``, then :func:`train_tokenizer_from_counts`."""
    check_vocab_size(vocab_size)
    counts = chunk_counts(tok, text, num_workers, progress, tie_break, text_column)
    train_tokenizer_from_counts(tok, counts, vocab_size, verbose, tie_break=tie_break,
                                min_frequency=min_frequency, progress=progress)


def train_tokenizer_from_counts(
    tok: Tokenizer,
    counts: Mapping[str | bytes, int],
    vocab_size: int,
    verbose: bool = False,
    *,
    tie_break: str = "smallest_pair",
    min_frequency: int = 1,
    progress: bool | None = None,
) -> None:
    """``tok.train_from_counts``: the merges of ``{chunk: count}``, from the 256 bytes up."""
    check_vocab_size(vocab_size)
    warn_if_mostly_control(counts, stacklevel=4)
    words = []
    weights = []
    for chunk, count in counts.items():
        if isinstance(chunk, str):
            data = chunk.encode("utf-8")
        elif isinstance(chunk, (bytes, bytearray)):
            data = bytes(chunk)
        else:
            raise TypeError(f"chunk counts must have str or bytes keys, got {chunk!r}")
        if count > 0 and data:
            words.append(data)
            weights.append(int(count))
    tok._reset_to_bytes()
    tok._set_merges(learn(tok, words, weights, vocab_size - 256, tie_break, min_frequency, verbose, progress))


def extend_tokenizer(
    tok: Tokenizer,
    text: str | Iterable[str],
    num_new_merges: int,
    verbose: bool = False,
    *,
    tie_break: str = "smallest_pair",
    min_frequency: int = 1,
    num_workers: int | None = None,
    progress: bool | None = None,
    text_column: str = "text",
) -> Tokenizer:
    """``tok.extend``: a copy of ``tok`` with up to ``num_new_merges`` merges learned on top."""
    counts = chunk_counts(tok, text, num_workers, progress, tie_break, text_column)
    warn_if_mostly_control(counts, stacklevel=4)
    words: list[list[int]] = []
    weights: list[int] = []
    for chunk, count in counts.items():
        ids = tok.encode_single_piece(chunk)
        if len(ids) >= 2:
            words.append(ids)
            weights.append(count)
    extended = tok._copy_for_extension()
    extended._set_merges(
        learn(extended, words, weights, num_new_merges, tie_break, min_frequency, verbose, progress, unique_bytes=True)
    )
    return extended


def chunk_counts(
    tok: Tokenizer, text: Any, num_workers: int | None, progress: bool | None, tie_break: str, text_column: str
) -> dict[str, int]:
    """The chunk counts of training text: in this machine's processes, or on Ray for a Ray Dataset."""
    ray_data = sys.modules.get("ray.data")  # a Ray Dataset can only exist once ray.data is loaded
    if ray_data is None or not isinstance(text, ray_data.Dataset):
        text = hf_dataset_texts(text, text_column)
        return count_chunks(text, tok._chunking_spec(), num_workers=num_workers, progress=progress)
    if tie_break == "first_occurrence":
        raise ValueError(
            "tie_break='first_occurrence' needs the order of the documents, which a Ray Dataset does not "
            "define: count with hf_bbpe.distributed.count_chunks(ds, tok, order_column=...) and call "
            "train_from_counts"
        )
    distributed = importlib.import_module(".distributed", __package__)
    return distributed.count_chunks(text, tok, text_column=text_column)


def learn(
    tok: Tokenizer,
    words: list[bytes] | list[list[int]],
    weights: list[int],
    num_merges: int,
    tie_break: str,
    min_frequency: int,
    verbose: bool,
    progress: bool | None,
    unique_bytes: bool = False,
) -> Merges:
    """Run the merge loop on words of ``tok``'s token ids; new ids go above the current ones.
    Returns ``tok``'s merges followed by the new ones.

    With ``unique_bytes``, a pair whose bytes already form a token is never merged, so no
    two tokens share the same bytes.
    """
    vocab = dict(tok.vocab)
    bar = progress_bar(desc="merging", total=num_merges, unit="merge", enabled=progress)
    merge_number = 0

    def on_merge(a: int, b: int, new_id: int, count: int) -> None:
        nonlocal merge_number
        merge_number += 1
        vocab[new_id] = vocab[a] + vocab[b]
        if verbose:
            print(f"merge {merge_number}/{num_merges}: {(a, b)} -> {new_id} ({vocab[new_id]}) had {count} occurrences")
        bar.update(1)

    known_bytes = set(vocab.values()) if unique_bytes else None

    def allow_pair(a: int, b: int) -> bool:
        merged = vocab[a] + vocab[b]
        if merged in known_bytes:
            return False
        known_bytes.add(merged)
        return True

    learned = train_merges(
        words,
        weights,
        num_merges,
        first_id=max(tok._normal_ids()) + 1,
        taken_ids=tok.vocab.keys(),
        tie_break=tie_break,
        min_frequency=min_frequency,
        on_merge=on_merge if verbose or not bar.disable or unique_bytes else None,
        allow_pair=allow_pair if unique_bytes else None,
        byte_ids=tok._byte_ids,
    )
    bar.close()
    merges = dict(tok.merges)
    merges.update(learned)
    return merges


def hf_dataset_texts(data: Any, text_column: str) -> Any:
    """The texts of column ``text_column`` of a Hugging Face ``datasets.Dataset`` or streaming
    ``IterableDataset``, as a stream read in batches; anything else is returned as it is."""
    datasets = sys.modules.get("datasets")  # such a dataset can only exist once datasets is loaded
    if datasets is None:
        return data
    if isinstance(data, (datasets.DatasetDict, datasets.IterableDatasetDict)):
        raise TypeError(f"train on one split of the dataset (its splits: {', '.join(data)}), e.g. ds['train']")
    if not isinstance(data, (datasets.Dataset, datasets.IterableDataset)):
        return data
    columns = data.column_names
    if columns is not None and text_column not in columns:
        raise ValueError(f"the dataset has no column {text_column!r} (its columns: {', '.join(columns)}); "
                         "pass text_column=")
    return (text for batch in data.select_columns([text_column]).iter(batch_size=1024) for text in batch[text_column])


def check_vocab_size(vocab_size: int) -> None:
    if not isinstance(vocab_size, int) or vocab_size < 256:
        raise ValueError(f"vocab_size must be an int >= 256 (the 256 byte tokens), got {vocab_size!r}")
