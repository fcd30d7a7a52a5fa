"""Benchmark encoding: hf_bbpe vs tiktoken built from the same ``mergeable_ranks()``.

    python scripts/bench_encode.py [CORPUS] [--vocab-size 32768] [--limit-mb N] [--cache DIR]

Trains a GPT-4-pattern tokenizer on CORPUS (``.xz`` is decompressed; documents are separated by
blank lines), or loads it from ``DIR`` if an earlier run saved it there, then measures in this
one process:

1. ``encode_ordinary`` of the whole corpus as one string, with a fresh tokenizer object (cold
   chunk cache), against ``tiktoken.Encoding.encode_ordinary`` (one thread); ids must be equal;
2. ``encode_batch`` of the documents on 2 processes (fresh tokenizer again) against tiktoken
   encoding the same documents one by one on one thread; ids must be equal;
3. 1 MB and 2 MB without a split point (one letter repeated; random letters): time against
   tiktoken's, and the 2 MB / 1 MB time ratio (about 2 means linear scaling).

Throughput is UTF-8 megabytes per second of wall time; CPU seconds (this process and its worker
processes) are printed beside wall times, since on a shared machine wall time alone misleads.
Exits with status 1 if any ids differ.
"""

from __future__ import annotations

import argparse
import lzma
import os
import random
import resource
import string
import sys
import tempfile
import time
from pathlib import Path

import tiktoken

from hf_bbpe import RegexTokenizer, Tokenizer

DEFAULT_CORPUS = "/work/shared/data/bench/mix-49mb.txt.xz"


def load_text(corpus: str, limit_mb: float | None) -> str:
    opener = lzma.open if corpus.endswith(".xz") else open
    with opener(corpus, "rt", encoding="utf-8") as f:
        return f.read(int(limit_mb * 1_000_000)) if limit_mb else f.read()


def get_tokenizer(args: argparse.Namespace, documents: list[str], tmp: str) -> Path:
    """Path of a .model file for this corpus and vocab size: cached, or trained now."""
    limit = f"-{args.limit_mb:g}M" if args.limit_mb else ""
    name = f"{Path(args.corpus).name.split('.')[0]}{limit}-gpt4-{args.vocab_size}"
    directory = Path(args.cache) if args.cache else Path(tmp)
    model = directory / f"{name}.model"
    if model.exists():
        print(f"tokenizer: {model} (cached)")
        return model
    directory.mkdir(parents=True, exist_ok=True)
    tok = RegexTokenizer("gpt4")
    start = time.perf_counter()
    tok.train(documents, args.vocab_size, progress=False)
    print(f"tokenizer: trained {len(tok.merges)} merges in {time.perf_counter() - start:.1f} s -> {model}")
    tok.save(directory / name)
    return model


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its reaped child processes."""
    return sum(
        r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def timed(fn, *args, **kwargs):
    """(result, wall seconds, CPU seconds)."""
    cpu = cpu_seconds()
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--limit-mb", type=float, default=None, help="use this many million characters only")
    parser.add_argument("--cache", default=None, help="directory to keep the trained .model in, and reuse it from")
    parser.add_argument("--workers", type=int, default=2, help="processes for encode_batch")
    args = parser.parse_args()

    text = load_text(args.corpus, args.limit_mb)
    documents = text.split("\n\n")
    mb = len(text.encode("utf-8")) / 1e6
    print(f"corpus {args.corpus}: {mb:.1f} MB, {len(documents)} documents; CPUs available: "
          f"{len(os.sched_getaffinity(0))} (shared with other users of the machine: timings vary from run to run)")
    rows = []
    all_equal = True

    with tempfile.TemporaryDirectory() as tmp:
        model = get_tokenizer(args, documents, tmp)
        trained = Tokenizer.from_file(model)
    enc = tiktoken.Encoding(
        "bench", pat_str=trained.pattern, mergeable_ranks=trained.mergeable_ranks(), special_tokens={}
    )

    def fresh() -> Tokenizer:  # a new object: empty chunk cache
        return Tokenizer.from_merges(trained.merges, pattern=trained.pattern)

    # 1. the whole corpus in one call, one process
    ours, t_ours, c_ours = timed(fresh().encode_ordinary, text)
    theirs, t_tik, c_tik = timed(enc.encode_ordinary, text)
    equal = ours == theirs
    all_equal &= equal
    del ours, theirs
    rows.append(("encode_ordinary, whole corpus, 1 process, cold cache", t_ours, c_ours, t_tik, c_tik, mb, equal))

    # 2. encode_batch on several processes vs tiktoken on one thread
    ours, t_ours, c_ours = timed(fresh().encode_batch, documents, num_workers=args.workers)
    theirs, t_tik, c_tik = timed(lambda: [enc.encode_ordinary(d) for d in documents])
    equal = ours == theirs
    all_equal &= equal
    del ours, theirs
    rows.append((f"encode_batch, {len(documents)} documents, {args.workers} processes vs tiktoken 1 thread",
                 t_ours, c_ours, t_tik, c_tik, mb, equal))

    # 3. no split point
    rng = random.Random(0)
    scaling = {}
    for kind, make in [
        ("one letter", lambda n: "a" * n),
        ("random letters", lambda n: "".join(rng.choices(string.ascii_lowercase, k=n))),
    ]:
        for size in (1, 2):
            sample = make(size * 1_000_000)
            tok = fresh()
            ours, t_ours, c_ours = timed(tok.encode_ordinary, sample)
            theirs, t_tik, c_tik = timed(enc.encode_ordinary, sample)
            equal = ours == theirs
            all_equal &= equal
            scaling[(kind, size)] = (t_ours, t_tik)
            rows.append((f"{size} MB of {kind}, no split point", t_ours, c_ours, t_tik, c_tik, float(size), equal))

    print("\n| case | hf_bbpe wall (CPU) s | tiktoken wall (CPU) s | hf_bbpe MB/s | tiktoken MB/s "
          "| throughput hf_bbpe/tiktoken | ids equal |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for case, t_ours, c_ours, t_tik, c_tik, size, equal in rows:
        print(f"| {case} | {t_ours:.2f} ({c_ours:.2f}) | {t_tik:.2f} ({c_tik:.2f}) | {size / t_ours:.1f} "
              f"| {size / t_tik:.1f} | {t_tik / t_ours:.2f}x | {'yes' if equal else 'NO'} |")
    print()
    for kind in ("one letter", "random letters"):
        (o1, k1), (o2, k2) = scaling[(kind, 1)], scaling[(kind, 2)]
        print(f"{kind}: hf_bbpe time / tiktoken time at 1 MB {o1 / k1:.2f}x; "
              f"time 2 MB / 1 MB: hf_bbpe {o2 / o1:.2f}, tiktoken {k2 / k1:.2f}")
    print("ids equal everywhere:", "yes" if all_equal else "NO")
    if not all_equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
