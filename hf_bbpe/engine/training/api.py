"""Training a tokenizer: count the chunks of a corpus, then learn merges over them.

``Tokenizer.train``, ``train_from_counts`` and ``extend`` are thin methods over the functions
here. The steps, and where each lives:

1. **Reading**: documents are strs (one str, an iterable, a ``datasets`` dataset) or the lines
   and records of files (``text_files.py``: text, ``.jsonl``, ``.parquet``).
2. **Counting** (:func:`chunk_counts`): for a pattern a C scanner knows and no normalizer or
   pipeline, the C kernel ``csrc/count/`` (``engine/training/counting.py``: threads without the GIL,
   the counts in three flat buffers, :class:`~native_counting.ChunkCounts`); otherwise
   ``engine/training/counting_reference.py`` (the regex module in worker processes, a dict), or
   ``hf_bbpe.distributed`` for a Ray Dataset.
3. **Merging** (:func:`learn`): ``engine/training/merge_loop.py``, the one merge loop (the C kernel
   ``csrc/merge/`` or its twin ``engine/training/merge_loop_reference.py``), given the kernel's buffers as they are
   (no Python object per chunk from counting to the last merge) or a dict's chunks.

The tokenizer's state is reset to the 256 bytes before training and set from the learned merges
after it; ``extend`` builds a new tokenizer that keeps every old merge.
"""

from __future__ import annotations

import os
from array import array
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..chunking.patterns import check_split_pattern
from ..encoding.vocabulary import Merges
from ..progress import progress_bar
from ..worker_pool import available_cpus
from .counting import ChunkCounts, available, count_native, is_arrow_dataset
from .counting_reference import count_chunks, warn_if_mostly_control
from .counts_file import check_pattern, load_counts
from .merge_loop import reduce_words, train_flat_merges, train_merges
from .options import Trainable, TrainingOptions
from .parity import check_language_corpora
from .superwords import SuperwordConfig, superword_config
from .text_files import check_doc_mode, iter_file_documents, training_files


def train_tokenizer(tok: Trainable, text: Any, files: Any, vocab_size: int, options: TrainingOptions) -> None:
    """``tok.train``: count the chunks of ``text`` or ``files``, then :func:`train_tokenizer_from_counts`.

    With ``superwords`` (SuperBPE, see superwords.py) that is stage 1, up to the transition; the
    corpus is then counted again with stage 2's chunking, which ``tok`` keeps, and its chunks,
    segmented by the stage-1 merges, train the rest of the merges."""
    check_vocab_size(vocab_size)
    check_training_pattern(tok)
    config = superword_config(options.superwords)
    if config is not None:
        check_superword_corpus(tok, text)
    stage1 = vocab_size if config is None else config.stage1_vocab_size(vocab_size)
    counts = chunk_counts(tok, text, files, options)
    check_counted(counts, source_names(text, files), tok if stage1 > 256 else None)
    train_tokenizer_from_counts(tok, counts, stage1, options, consume=True)
    if config is None:
        return
    del counts
    config.set_chunking(tok)
    counts = chunk_counts(tok, text, files, options)
    tok.adopt_merges(continued_merges(tok, counts, vocab_size - 256 - len(tok.merges), options, config))


def train_tokenizer_by_language(tok: Trainable, languages: Mapping[str, Any], vocab_size: int,
                                options: TrainingOptions) -> None:
    """``tok.train(languages=..., parity=...)``: parity-aware BPE (parity.py, parity_reference.py).

    Each language's corpus (any input ``train`` takes), and each dev set, is counted on its own
    with ``tok``'s chunking (the C counter where it knows the pattern); the loop then learns up to
    ``vocab_size - 256`` merges over the per-language counts."""
    from .parity_loop import parity_merges

    check_vocab_size(vocab_size)
    check_training_pattern(tok)
    names = check_language_corpora(languages)
    config = options.parity
    if config is None:
        raise TypeError("training by language needs parity=ParityConfig(dev=... or ratio=...)")
    config.check_languages(names)
    if options.superwords:
        raise ValueError("superwords and parity training do not combine (yet): train one or the other")
    if options.tie_break not in ("huggingface", "smallest_pair"):
        raise ValueError(f"parity training breaks ties by 'huggingface' or 'smallest_pair', not {options.tie_break!r}")

    def counted(name: str, corpus: Any, what: str) -> Mapping[str | bytes, int] | ChunkCounts:
        try:
            counts = chunk_counts(tok, corpus, None, options)
            check_counted(counts, source_names(corpus, None))
        except ValueError as error:
            raise ValueError(f"language {name!r} ({what}): {error}") from None
        return counts

    train_counts = [counted(name, languages[name], "training text") for name in names]
    dev_counts = None if config.dev is None else [counted(name, config.dev[name], "dev set") for name in names]
    ratio = None if config.ratio is None else [float(config.ratio[name]) for name in names]
    tok.reset_to_bytes()
    tok.adopt_merges(parity_merges(tok, train_counts, dev_counts, ratio, vocab_size - 256, options))


def train_tokenizer_from_counts(
    tok: Trainable,
    counts: Mapping[str | bytes, int] | ChunkCounts | str | os.PathLike,
    vocab_size: int,
    options: TrainingOptions,
    *,
    consume: bool = False,
) -> None:
    """``tok.train_from_counts``: the merges of ``{chunk: count}``, of the C kernel's
    :class:`~native_counting.ChunkCounts`, or of a counts file (a path: mapped, and refused when
    its split pattern is not the tokenizer's; see counts_file.py), from the 256 bytes up. With
    ``consume`` (training's own counts) the merge loop works in the counts' symbols, which are
    then spent."""
    check_vocab_size(vocab_size)
    if isinstance(counts, (str, os.PathLike)):
        counts = load_counts(counts)
    if isinstance(counts, ChunkCounts) and counts.source is not None:
        check_pattern(counts, tok.chunking.counts_file_pattern(counts.source))
    warn_if_mostly_control(counts, stacklevel=4)
    if isinstance(counts, ChunkCounts):
        tok.reset_to_bytes()
        tok.adopt_merges(learn(tok, counts, None, vocab_size - 256, options, consume=consume))
        return
    words = []
    weights = []
    for chunk, count in counts.items():
        if isinstance(chunk, str):
            data = chunk.encode("utf-8")
        elif isinstance(chunk, (bytes, bytearray)):
            data = bytes(chunk)
        else:
            raise TypeError(f"chunk counts must have str or bytes keys, got {chunk!r}")
        count = int(count)
        if count < 0:
            raise ValueError(f"chunk counts must not be negative: {chunk!r} has count {count}")
        if count > 0 and data:
            words.append(data)
            weights.append(count)
    check_pair_counts_fit(words, weights)
    tok.reset_to_bytes()
    tok.adopt_merges(learn(tok, words, weights, vocab_size - 256, options))


def check_pair_counts_fit(words: Sequence[bytes], weights: Sequence[int]) -> None:
    """Refuse counts whose pair counts could pass 2**63 - 1, the merge loop's int64: a pair's
    count is at most the sum over words of count x (length - 1), so that sum must fit."""
    bound = sum(weight * (len(word) - 1) for word, weight in zip(words, weights))
    if bound > 2**63 - 1:
        raise ValueError(f"chunk counts too large: pair counts could reach {bound:,}, past the merge "
                         "loop's 64-bit limit (2**63 - 1); scale the counts down")


def extend_tokenizer(tok: Trainable, text: Any, files: Any, num_new_merges: int | None,
                     options: TrainingOptions) -> Trainable:
    """``tok.extend``: a copy of ``tok`` with up to ``num_new_merges`` merges learned on top
    (with ``superwords``, on the chunks of stage 2's chunking, which the copy keeps)."""
    if not isinstance(num_new_merges, int) or isinstance(num_new_merges, bool):
        raise TypeError(f"num_new_merges must be an int, got {num_new_merges!r}")
    config = superword_config(options.superwords)
    extended = copy_for_extension(tok)
    if config is not None:
        if config.transition is not None:
            raise ValueError("extend keeps every merge of the tokenizer as stage 1: a transition is for train "
                             f"(got transition={config.transition!r})")
        config.set_chunking(extended)
    counts = chunk_counts(extended, text, files, options)
    extended.adopt_merges(continued_merges(extended, counts, num_new_merges, options, config))
    return extended


def copy_for_extension(tok: Trainable) -> Trainable:
    """A copy of ``tok`` that ``extend`` adds merges to: the same merges, mode, special tokens
    (and their roles) and chunking."""
    extended = type(tok).from_merges(
        tok.merges, special_tokens=tok.special_tokens, byte_ids=tok.byte_ids,
        check=False, unmerged_tokens=tok.unmerged_tokens, mode=tok.mode,
        allow_large_ids=True,  # the ids were checked when they were registered in tok
        pre_tokenizer=tok.pre_tokenizer, normalizer=tok.normalizer,
    )
    if tok.normalized_special_tokens:
        extended.normalized_special_tokens = tok.normalized_special_tokens
    extended.roles = tok.roles
    return extended


def continued_merges(tok: Trainable, counts: Mapping[str, int] | ChunkCounts, num_new_merges: int,
                     options: TrainingOptions, superwords: SuperwordConfig | None = None) -> Merges:
    """``tok``'s merges and up to ``num_new_merges`` more, learned on ``counts``' chunks as
    ``tok``'s merges segment them (``extend``, and SuperBPE's stage 2): no new token repeats the
    bytes of an existing one, and ``superwords`` vetoes the tokens its rules refuse. The chunks
    are segmented in one call (``ChunkEncoder.encode_pieces``: C threads, no Python object per
    chunk from the C counter's buffers) and the merge loop works in the ids it gives."""
    warn_if_mostly_control(counts, stacklevel=5)
    words = segmented_chunks(tok, counts, options.num_workers)
    return learn(tok, words, None, num_new_merges, options, unique_bytes=True, consume=True,
                 token_filter=None if superwords is None else superwords.allows)


def segmented_chunks(tok: Trainable, counts: Mapping[str, int] | ChunkCounts,
                     num_workers: int | None = None) -> tuple[Any, Any, Any]:
    """``counts``' chunks as ``tok``'s merges segment them, as the merge loop takes words of ids:
    ``(ids, lengths, counts)`` (``ChunkEncoder.encode_pieces`` on up to ``num_workers`` threads;
    a ChunkCounts' buffers are spent)."""
    if isinstance(counts, ChunkCounts):
        pieces, lengths, weights = counts.buffers(spend=True)
    else:
        chunks = [chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk) for chunk in counts]
        pieces, lengths, weights = b"".join(chunks), array("i", map(len, chunks)), array("q", counts.values())
        del chunks
    ids, id_counts = tok.encoder.encode_pieces(pieces, lengths, max(1, num_workers or available_cpus()))
    return ids, id_counts, weights


def check_superword_corpus(tok: Trainable, text: Any) -> None:
    """Superwords need a tokenizer that splits text (a BasicTokenizer's documents are whole
    chunks already) and a corpus that can be read twice (stage 2 splits it again)."""
    if tok.pre_tokenizer is None:
        raise ValueError(f"superwords need a split pattern for stage 1; this {type(tok).__name__} has none")
    if text is not None and not isinstance(text, (str, os.PathLike)) and iter(text) is text:
        raise TypeError("training with superwords reads the corpus twice (stage 2 splits it again): pass a list, "
                        "a str, files= or a dataset, not a one-shot iterator or generator")


def chunk_counts(tok: Trainable, text: Any, files: Any, options: TrainingOptions, out: Any = None
                 ) -> dict[str, int] | ChunkCounts:
    """The chunk counts of training text or files: with the C kernel where it splits the
    tokenizer's chunking, else in this machine's processes, or on Ray for a Ray Dataset.

    ``files`` (a path or several) or a ``text`` that is an ``os.PathLike`` or a list of them are
    files (see text_files.py; ``docs`` says how text files are cut into documents); a str is
    always text. ``options.num_workers``: the kernel's threads, or the processes of the other
    paths (default: the CPUs available). ``options.max_memory`` bounds the C kernel's memory (its
    tables spill to disk: see counting.count_native); ``out`` writes its counts to a counts file."""
    num_workers, progress, text_column = options.num_workers, options.progress, options.text_column
    docs, max_memory = options.docs, options.max_memory
    check_doc_mode(docs)
    files = training_paths(text, files)
    split = tok.chunking.native_split
    native = split is not None and available(split[0], isolated=split[1]) and not _is_ray_dataset(text)
    if max_memory is not None and not native:
        raise ValueError(
            "max_memory needs the C chunk counter: a split pattern it knows (GPT-2, GPT-4, o200k, Llama 3, Qwen2, "
            "Tekken, SuperBPE's or another spelling of one), no normalizer or pre-tokenizer pipeline, the compiled "
            "extension, and text that is not a Ray Dataset"
        )
    if files is None and not (native and is_arrow_dataset(text)):  # (the kernel reads a Dataset's Arrow column)
        text = hf_dataset_texts(text, text_column)
    if native:
        return count_native(text, split[0], isolated=split[1], files=files, num_threads=num_workers,
                            progress=progress, text_column=text_column, docs=docs, max_memory=max_memory, out=out)
    if files is not None:
        text = iter_file_documents(files, text_column, docs)
    if not _is_ray_dataset(text):
        return count_chunks(text, tok.chunking.counting_spec, num_workers=num_workers, progress=progress)
    if options.tie_break == "first_occurrence":
        raise ValueError(
            "tie_break='first_occurrence' needs the order of the documents, which a Ray Dataset does not "
            "define: count with hf_bbpe.distributed.count_chunks(ds, tok, order_column=...) and call "
            "train_from_counts"
        )
    if _dataset_counter is None:
        raise ImportError("counting a Ray Dataset needs hf_bbpe.distributed (pip install 'hf_bbpe[ray]')")
    return _dataset_counter(text, tok, text_column)


def count_tokenizer_chunks(tok: Trainable, text: Any, files: Any, options: TrainingOptions,
                           out: str | os.PathLike | None = None) -> ChunkCounts:
    """``tok.count_chunks``: the chunk counts of ``text`` or ``files`` with ``tok``'s chunking, as
    :class:`~native_counting.ChunkCounts` (the C kernel's, or Python's counts made flat), written
    to the counts file ``out`` too if given (see counts_file.py)."""
    check_training_pattern(tok)
    if out is not None:
        tok.chunking.counts_file_pattern(os.fspath(out))
    counts = chunk_counts(tok, text, files, options, out=out)
    if isinstance(counts, ChunkCounts):
        return counts
    counts = ChunkCounts.from_dict(counts, tok.chunking.counting_spec)
    if out is not None:
        counts.save(out)
    return counts


def training_paths(text: Any, files: Any) -> list[str] | None:
    """The checked paths of the training files, or None when training is on ``text``.

    Files are ``files=`` (a path or a list of paths, str or ``os.PathLike``, as ``tokenizers``'
    ``train(files=...)`` takes them), or ``text`` given as ``os.PathLike`` objects (a
    ``pathlib.Path`` or a list or tuple of them): a str in ``text`` is a document, never a path.
    A list of strs that all name existing files draws a warning (it is trained on as text)."""
    if files is not None:
        if text is not None:
            raise TypeError("train on text or on files=, not both")
        return training_files(files)
    if text is None:
        raise TypeError("nothing to train on: pass text (a str or an iterable of documents) or files=")
    if isinstance(text, os.PathLike):
        return training_files([text])
    if isinstance(text, (list, tuple)) and text and all(isinstance(item, os.PathLike) for item in text):
        return training_files(text)
    if (isinstance(text, (list, tuple)) and 0 < len(text) <= 1000 and all(isinstance(item, str) for item in text)
            and all("\n" not in item and len(item) < 4096 and os.path.isfile(item) for item in text)):
        warnings.warn(
            f"every document given to train names an existing file ({text[0]!r}, ...): they are trained on as text. "
            "To train on the files' contents, pass files=[...] or pathlib.Path objects",
            stacklevel=4,
        )
    return None


DatasetCounter = Callable[[Any, Trainable, str], Any]
_dataset_counter: DatasetCounter | None = None


def register_dataset_counter(counter: DatasetCounter | None) -> None:
    """Set how a Ray Dataset is counted: ``counter(dataset, tok, text_column)`` returns the chunk
    counts. ``hf_bbpe/__init__.py`` registers ``hf_bbpe.distributed.count_chunks`` (loaded on first
    use), so that the engine never imports the Ray layer above it."""
    global _dataset_counter
    _dataset_counter = counter


def _is_ray_dataset(text: Any) -> bool:
    ray_data = sys.modules.get("ray.data")  # a Ray Dataset can only exist once ray.data is loaded
    return ray_data is not None and isinstance(text, ray_data.Dataset)


def learn(
    tok: Trainable,
    words: list[bytes] | list[list[int]] | ChunkCounts | tuple[Any, Any, Any],
    weights: list[int] | None,
    num_merges: int,
    options: TrainingOptions,
    *,
    unique_bytes: bool = False,
    consume: bool = False,
    token_filter: Callable[[bytes], bool] | None = None,
) -> Merges:
    """Run the merge loop on words of ``tok``'s token ids (or on the C kernel's counts, whose
    words are bytes, or on ``(ids, lengths, counts)``, words of ids laid end to end as
    ``trainer.train_flat_merges`` takes them: no weights then); new ids go above the current
    ones. Returns ``tok``'s merges followed by the new ones.

    With ``unique_bytes``, a pair whose bytes already form a token is never merged, so no
    two tokens share the same bytes. ``token_filter(bytes)``, if given, vetoes the tokens it
    returns False for (superwords' rules).

    Words of ids with ``tie_break="smallest_pair"`` (SuperBPE's stage 2, ``extend``; not with
    ``verbose``, whose lines a second run would print again) are first cut where no merge that
    counts enough can join them (``trainer.reduce_words``): the loop runs
    on the cut words, and again on the whole ones only if its last merge counts less than the
    cut assumed (then its merges could differ), so the merges are always those of the words.
    Reads ``options``' ``tie_break``, ``min_frequency``, ``verbose`` and ``progress``.
    """
    tie_break, verbose, progress = options.tie_break, options.verbose, options.progress
    specials = set(tok.special_tokens.values())
    loop_options = {
        "first_id": max(idx for idx in tok.vocab if idx not in specials) + 1,
        "taken_ids": tok.vocab.keys(),
        "tie_break": tie_break,
        "min_frequency": options.min_frequency,
        "byte_ids": tok.byte_ids,
    }

    def run(words: Any, weights: Any, consume: bool, quiet: bool = False) -> tuple[list, list[int]]:
        """One run of the merge loop with callbacks of its own: (merges, their counts)."""
        vocab = dict(tok.vocab)
        bar = progress_bar(desc="merging", total=num_merges, unit="merge", enabled=progress)
        counts: list[int] = []

        def on_merge(a: int, b: int, new_id: int, count: int) -> None:
            counts.append(count)
            vocab[new_id] = vocab[a] + vocab[b]
            if verbose:
                print(f"merge {len(counts)}/{num_merges}: {(a, b)} -> {new_id} ({vocab[new_id]}) had {count} "
                      "occurrences")
            bar.update(1)

        known_bytes = set(vocab.values()) if unique_bytes else None

        def allow_pair(a: int, b: int) -> bool:
            merged = vocab[a] + vocab[b]
            if known_bytes is not None and merged in known_bytes or token_filter is not None and not token_filter(merged):
                return False
            if known_bytes is not None:
                known_bytes.add(merged)
            return True

        callbacks = {
            "on_merge": on_merge if quiet or verbose or not bar.disable or unique_bytes or token_filter else None,
            "allow_pair": allow_pair if unique_bytes or token_filter else None,
        }
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore")
            if isinstance(words, ChunkCounts):
                learned = train_flat_merges(*words.buffers(spend=consume), num_merges, consume=consume, **loop_options,
                                            **callbacks)
            elif isinstance(words, tuple):
                learned = train_flat_merges(*words, num_merges, consume=consume, **loop_options, **callbacks)
            else:
                learned = train_merges(words, weights, num_merges, **loop_options, **callbacks)
        bar.close()
        return learned, counts

    if isinstance(words, ChunkCounts):
        consume = consume or words.private  # (a private mapping of a counts file: nobody else's)
    learned = None
    # (reduce_words reads int32 ids; a tuple of uint8 symbols, which the merge loop also takes, is run whole)
    if (isinstance(words, tuple) and memoryview(words[0]).itemsize == 4 and tie_break == "smallest_pair"
            and not verbose and num_merges > 0):
        reduced = reduce_words(*words, num_merges)  # (see trainer.reduce_words: the same merges, or a second run)
        if reduced is not None:
            *fewer, least = reduced
            learned, counts = run(tuple(memoryview(b).cast(f) for b, f in zip(fewer, "iiq")), None, True, quiet=True)
            del fewer, reduced
            if len(learned) < num_merges or counts[-1] < least:
                learned = None
    if learned is None:
        learned, _ = run(words, weights, consume)
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


def check_training_pattern(tok: Trainable) -> None:
    """Refuse, before counting, a split pattern training cannot use or a saved folder cannot hold
    (:func:`patterns.check_split_pattern`: one line naming the pattern)."""
    pattern = tok.plain_pattern
    if pattern:
        check_split_pattern(pattern)


EMPTY_INPUT = "empty input (no text to work on)"
"""What training says of input without text: the words the command line uses (cli/text_input.py)."""


def check_counted(counts: Mapping[str | bytes, int] | ChunkCounts, names: list[str], tok: Trainable | None = None
                  ) -> None:
    """Refuse counts without a chunk: empty input, or text the split pattern matches none of (a
    ValueError naming the files ``names``, if any). Training would return the 256 bytes alone. With
    ``tok`` (merges are asked for), also refuse a user's split pattern whose chunks are all single
    bytes (e.g. ``(?<=a)b``): BPE merges only inside chunks, so there is nothing to learn (with a
    built-in pattern, which matches every character, that is a text too small, and only warned)."""
    where = f"{', '.join(names[:3])}{f' and {len(names) - 3} more' if len(names) > 3 else ''}: " if names else ""
    if len(counts):
        pattern = tok.plain_pattern if tok is not None else None
        if pattern and tok.chunking.builtin_name is None and _longest_chunk(counts) < 2:
            shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
            raise ValueError(f"split pattern {shown!r} makes no chunk of two or more bytes of the training text: "
                             "BPE merges only inside chunks, so there is nothing to learn (does the pattern leave most "
                             "of the text unmatched? end it with '|\\s+|\\S' to match the rest)")
        return
    if getattr(counts, "input_bytes", 0) or getattr(counts, "characters", 0):
        raise ValueError(f"{where}no chunk to train on: the split pattern matches none of the input")
    raise ValueError(f"{where}{EMPTY_INPUT}" if isinstance(counts, ChunkCounts) else
                     f"{where}{EMPTY_INPUT[:-1]}, or none that the split pattern matches)")


def _longest_chunk(counts: Mapping[str | bytes, int] | ChunkCounts) -> int:
    """The most bytes a counted chunk holds."""
    if isinstance(counts, ChunkCounts):
        return max(counts.lengths, default=0)
    return max((len(c.encode("utf-8")) if isinstance(c, str) else len(c) for c in counts), default=0)


def source_names(text: Any, files: Any) -> list[str]:
    """The names of training's files (``files=``, or ``text`` given as ``os.PathLike``), for
    messages; empty when training is on text."""
    source = files if files is not None else text
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)] if files is not None or isinstance(source, os.PathLike) else []
    if isinstance(source, (list, tuple)) and (files is not None or all(isinstance(s, os.PathLike) for s in source)):
        return [os.fspath(s) for s in source if isinstance(s, (str, os.PathLike))]
    return []


def check_vocab_size(vocab_size: int) -> None:
    if not isinstance(vocab_size, int) or vocab_size < 256:
        raise ValueError(f"vocab_size must be an int >= 256 (the 256 byte tokens), got {vocab_size!r}")
