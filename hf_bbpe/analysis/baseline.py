"""A sentencepiece baseline on the user's data: the lecture's comparison of byte-level BPE with
sentencepiece's BPE (Llama 2's recipe: code-point merges with byte fallback).

Each trainer runs in a fresh process, so its time and peak memory are its own: the peak is the
resident set of that process (or of its largest worker process, when larger), the interpreter
included. :func:`fallback_characters` counts the characters a tokenizer cannot hold in a token of
its vocabulary: sentencepiece spells them with byte-fallback tokens, byte-level BPE with byte
tokens that cut the character.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .foreign_tokenizers import ViewTokenizer, import_sentencepiece

# Llama 2's trainer settings (model_type=bpe, byte_fallback=True, digits split, text not normalized)
SENTENCEPIECE_OPTIONS = {
    "model_type": "bpe",
    "byte_fallback": True,
    "split_digits": True,
    "normalization_rule_name": "identity",
    "remove_extra_whitespaces": False,
    "allow_whitespace_only_pieces": True,
    "character_coverage": 0.99995,
    "max_sentence_length": 1 << 16,
    "input_sentence_size": 0,
}


@dataclass(frozen=True)
class TrainingRun:
    """One trainer's cost: wall-clock seconds, peak resident memory in bytes, and how much of it
    the training added to the process (the peak less the resident memory before training)."""

    name: str
    seconds: float
    peak_rss: int
    added_rss: int
    path: Path  # what it wrote


def measure(name: str, target: Callable[..., Path], *args) -> TrainingRun:
    """Run ``target(*args)`` (a module-level function returning the path it wrote) in a fresh
    process and measure it. A failure in the process is raised here as a
    RuntimeError carrying its message."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_measured, args=(child, target, args))
    process.start()
    child.close()
    try:
        outcome = parent.recv()
    except EOFError:
        outcome = ("error", f"the training process died (exit status {process.join() or process.exitcode})")
    process.join()
    if outcome[0] == "error":
        raise RuntimeError(outcome[1])
    _, seconds, peak, before, path = outcome
    return TrainingRun(name, seconds, peak, max(0, peak - before), Path(path))


def _measured(conn, target: Callable[..., Path], args: tuple) -> None:
    try:
        before = _current_rss()
        start = time.perf_counter()
        path = target(*args)
        seconds = time.perf_counter() - start
        peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        conn.send(("ok", seconds, peak_kb * 1024, before, str(path)))
    except BaseException as exc:  # reported to the parent, which raises it with the message
        conn.send(("error", f"{type(exc).__name__}: {exc}".strip()))
    finally:
        conn.close()


def _current_rss() -> int:
    """This process's resident memory in bytes now (Linux's /proc; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def train_sentencepiece(paths: Sequence[str], vocab_size: int, out_dir: str, threads: int | None = None) -> Path:
    """Train a sentencepiece BPE of ``vocab_size`` pieces (3 control pieces and 256 byte pieces
    included) on the lines of ``paths``; returns the ``.model`` written in ``out_dir``."""
    spm = import_sentencepiece()
    prefix = os.path.join(out_dir, "sentencepiece")
    spm.SentencePieceTrainer.train(
        input=list(paths), model_prefix=prefix, vocab_size=vocab_size,
        num_threads=threads or os.cpu_count() or 1, minloglevel=2, **SENTENCEPIECE_OPTIONS,
    )
    return Path(prefix + ".model")


def fallback_characters(tok: ViewTokenizer, ids: Sequence[int]) -> int:
    """Characters of the encoded text that no single vocabulary token holds: spelled by
    byte-fallback tokens (``<0xE2>``) or cut across byte tokens. Special tokens are skipped."""
    count = 0
    pending = b""  # bytes of a character cut across tokens so far
    for idx in ids:
        piece = tok.piece(idx)
        if piece.special:
            continue
        data = piece.data
        start = 0
        if pending:
            # continuation bytes finish the cut character
            need = _char_length(pending[0]) - len(pending)
            take = data[:need]
            pending += take
            start = len(take)
            if len(pending) == _char_length(pending[0]):
                count += 1
                pending = b""
        i = start
        while i < len(data):
            length = _char_length(data[i])
            if i + length <= len(data):
                if piece.fallback:
                    count += 1
                i += length
            else:
                pending = data[i:]
                break
    return count + (1 if pending else 0)


def _char_length(lead: int) -> int:
    if lead < 0x80:
        return 1
    if lead >= 0xF0:
        return 4
    if lead >= 0xE0:
        return 3
    if lead >= 0xC0:
        return 2
    return 1  # a stray continuation byte counts as one
