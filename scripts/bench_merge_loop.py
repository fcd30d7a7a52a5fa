"""Benchmark the merge loop alone: time, CPU time and memory of the kernel's ``train`` per rule.

    python scripts/bench_merge_loop.py [CORPUS] [--pattern gpt2] [--vocab-size 32768]
        [--rules smallest_pair first_occurrence huggingface] [--kernel MODULE ...] [--json OUT]

CORPUS (default: the shared 49 MB corpus; ``.xz`` is decompressed) is split into documents at
blank lines and its chunks are counted once with ``hf_bbpe.engine.training.counting_reference.count_chunks``; the
counts are kept in a cache folder as the kernel's three buffers (symbols, lengths, counts).
Each kernel and rule then runs in a process of its own, which loads the buffers, notes its RSS,
calls ``train`` (symbols in place, merges as arrays, as ``trainer.train_merges`` calls it) and
reports the wall and CPU time of the call, and its peak RSS above that base: the merge loop's own
memory. ``--kernel`` names modules with the same ``train`` to compare (default: the C kernel;
an older build can be imported from elsewhere with PYTHONPATH). The merges of every kernel are
checked to be the same. On a shared machine, CPU time is the steadier figure. ``--json OUT`` also
writes the rows with the machine, load and date (scripts/bench_results.py), from which
scripts/render_benchmarks.py renders docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import lzma
import os
import resource
import subprocess
import sys
import tempfile
import time
from array import array

DEFAULT_CORPUS = "/work/shared/data/bench/mix-49mb.txt.xz"
RULES = ("smallest_pair", "first_occurrence", "huggingface")


def cached_buffers(corpus: str, pattern: str) -> str:
    """The path prefix of the three buffer files for this corpus and pattern, made if missing."""
    stat = os.stat(corpus)
    tag = hashlib.sha256(f"{os.path.abspath(corpus)}:{stat.st_size}:{stat.st_mtime}:{pattern}".encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), "hf_bbpe_bench_merge_loop")
    os.makedirs(folder, exist_ok=True)
    base = os.path.join(folder, tag)
    if not os.path.exists(base + ".cnt"):
        from hf_bbpe.engine.training.counting_reference import count_chunks
        from hf_bbpe.engine.chunking.patterns import resolve_pattern

        opener = lzma.open if corpus.endswith(".xz") else open
        with opener(corpus, "rt", encoding="utf-8") as f:
            documents = f.read().split("\n\n")
        started = time.perf_counter()
        counts = count_chunks(documents, resolve_pattern(pattern), progress=False)
        print(f"counted {len(counts):,} distinct chunks in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        words = [chunk.encode("utf-8") for chunk in counts]
        with open(base + ".sym", "wb") as f:
            f.write(b"".join(words))
        with open(base + ".len", "wb") as f:
            array("i", map(len, words)).tofile(f)
        with open(base + ".cnt", "wb") as f:  # written last: its presence marks a complete cache
            array("q", counts.values()).tofile(f)
    return base


def status_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process. Not getrusage's maxrss: a process started
    by fork and exec keeps its parent's, and this benchmark's parent counted the chunks."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(base: str, num_merges: int, rule: str, kernel_name: str) -> None:
    """Run one training in this process and print its figures as one JSON line."""
    from hf_bbpe.engine.training import merge_loop as trainer

    kernel = importlib.import_module(kernel_name)
    with open(base + ".sym", "rb") as f:
        symbols = bytearray(f.read())
    lengths, counts = array("i"), array("q")
    with open(base + ".len", "rb") as f:
        lengths.frombytes(f.read())
    with open(base + ".cnt", "rb") as f:
        counts.frombytes(f.read())
    ranks = trainer.huggingface_ranks() if rule == "huggingface" else None
    base_mb = status_mb("VmRSS")
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    args = (symbols, lengths, counts, num_merges, 256, None, rule == "first_occurrence", 1, None, None, ranks)
    try:
        (ids, _), _ = kernel.train(*args, True, True)
    except TypeError:  # an older kernel: no consume, merges as a list
        merges, _ = kernel.train(*args)
        ids = array("i", [token for merge in merges for token in merge[:3]]).tobytes()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({
        "kernel": kernel_name, "rule": rule, "wall": wall,
        "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
        "base_mb": base_mb, "loop_mb": status_mb("VmHWM") - base_mb,
        "merges": len(ids) // 12, "sha": hashlib.sha256(ids).hexdigest()[:12],
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--pattern", default="gpt2")
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--rules", nargs="+", choices=RULES, default=list(RULES))
    parser.add_argument("--kernel", nargs="+", default=["hf_bbpe.engine.training._merge_loop"])
    parser.add_argument("--json", help="also write the rows here, with the machine, load and date")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        base, num_merges, rule, kernel_name = args.child
        child(base, int(num_merges), rule, kernel_name)
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_results import machine, write_results

    started, rows = machine(), []
    base = cached_buffers(args.corpus, args.pattern)
    print(f"{os.path.basename(args.corpus)}, {args.pattern} pattern, {args.vocab_size:,} tokens")
    print(f"{'kernel':<24} {'rule':<17} {'wall s':>7} {'cpu s':>6} {'loop MB':>8}  merges")
    merges_of: dict[str, str] = {}
    for rule in args.rules:
        for kernel_name in args.kernel:
            out = subprocess.run(
                [sys.executable, __file__, "--child", base, str(args.vocab_size - 256), rule, kernel_name],
                capture_output=True, text=True, check=True,
            )
            row = json.loads(out.stdout.splitlines()[-1])
            same = merges_of.setdefault(rule, row["sha"]) == row["sha"]
            rows.append({**row, "same_merges": same})
            print(f"{kernel_name:<24} {rule:<17} {row['wall']:>7.2f} {row['cpu']:>6.2f} {row['loop_mb']:>8.1f}  "
                  f"{row['merges']:,}{'' if same else '  DIFFERENT MERGES'}")
    if args.json:
        write_results(args.json, "bench_merge_loop", vars(args), {"corpus": args.corpus, "pattern": args.pattern,
                                                                  "vocab_size": args.vocab_size, "rows": rows}, started)


if __name__ == "__main__":
    main()
