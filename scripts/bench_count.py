"""Benchmark chunk counting (training's first step) and the peak memory of training from files.

    python scripts/bench_count.py [CORPUS] [--patterns gpt2 gpt4] [--workers 2] [--rounds 3]
                                  [--vocab-size 32768] [--no-train] [--json OUT]

CORPUS is a text file (``.xz`` is decompressed into a temporary file first); its documents are
its lines, as ``open(f)`` and ``tokenizers``' ``train(files)`` give them. Each measurement runs in
its own subprocess, and the rounds interleave the systems, so that a busy machine slows them alike:

* ``python``: chunk_counting.count_chunks over ``open(CORPUS, newline="\\n")`` in ``--workers``
  forked processes (the path every chunking took before the C counter, and still takes for
  patterns no C scanner knows);
* ``c``: native_counting.count_native on the file itself, ``--workers`` threads reading it in blocks;
* ``train``: ``Tokenizer.train(files=[CORPUS], vocab_size)``, the whole of training (C counting,
  then the merge loop on the counter's buffers).

Reported: wall seconds, CPU seconds (every thread and child process), MB/s of wall and of CPU,
the peak RSS of the process (its VmHWM) less its RSS before the measured call, and, for ``c`` and
``train``, that peak per distinct chunk. Python's counts are checked to equal C's, in order.
``--json OUT`` also writes the figures with the machine, load and date (scripts/bench_results.py),
from which scripts/render_benchmarks.py renders docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench_results import machine, write_results

DEFAULT_CORPUS = "/work/shared/data/bench/mix-49mb.txt.xz"

CHILD = r"""
import json, os, resource, sys, time
mode, path, pattern, workers, vocab_size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
from hf_bbpe import RegexTokenizer
from hf_bbpe.engine.training.counting_reference import count_chunks
from hf_bbpe.engine.training.counting import count_native
from hf_bbpe.engine.chunking.patterns import resolve_pattern
pattern = resolve_pattern(pattern)
RegexTokenizer(pattern)  # load the scanner's classes before measuring

def rss_kb(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field))

def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # VmHWM := VmRSS
base = rss_kb("VmRSS:")
c0, t0 = cpu(), time.perf_counter()
distinct = None
if mode == "python":
    with open(path, encoding="utf-8", newline="\n") as handle:
        counts = count_chunks(handle, pattern, num_workers=workers, progress=False)
    distinct = len(counts)
elif mode == "c":
    counts = count_native(None, pattern, files=[path], num_threads=workers, progress=False)
    distinct = len(counts)
else:
    tok = RegexTokenizer(pattern)
    tok.train(files=[path], vocab_size=vocab_size, num_workers=workers, progress=False)
wall, used = time.perf_counter() - t0, cpu() - c0
peak = rss_kb("VmHWM:")
result = {"mode": mode, "wall": wall, "cpu": used, "peak_mb": (peak - base) / 1e3, "base_mb": base / 1e3,
          "distinct": distinct}
if mode in ("python", "c") and os.environ.get("BENCH_COUNT_DUMP"):
    import pickle
    items = counts.items() if mode == "python" else ((k.decode(), v) for k, v in counts.items())
    with open(os.environ["BENCH_COUNT_DUMP"] + "." + mode, "wb") as f:
        pickle.dump(list(items), f)
print(json.dumps(result))
"""


def corpus_file(corpus: str, scratch: str) -> str:
    if not corpus.endswith(".xz"):
        return corpus
    path = os.path.join(scratch, os.path.basename(corpus)[:-3])
    with lzma.open(corpus) as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    return path


def run(mode: str, path: str, pattern: str, workers: int, vocab_size: int, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, path, pattern, str(workers), str(vocab_size)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--patterns", nargs="+", default=["gpt2", "gpt4"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--no-train", action="store_true", help="count only")
    parser.add_argument("--no-python", action="store_true", help="skip the (slow) Python counting")
    parser.add_argument("--json", help="also write the figures here, with the machine, load and date")
    args = parser.parse_args()
    started, recorded = machine(), []
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.pathsep + env.get(
        "PYTHONPATH", "")
    modes = [m for m in ("python", "c", "train") if not (m == "train" and args.no_train)
             and not (m == "python" and args.no_python)]
    with tempfile.TemporaryDirectory() as scratch:
        path = corpus_file(args.corpus, scratch)
        mb = os.path.getsize(path) / 1e6
        print(f"corpus {args.corpus}: {mb:.1f} MB, its lines as documents; {args.workers} workers; "
              f"load average {os.getloadavg()[0]:.1f} at the start", flush=True)
        for pattern in args.patterns:
            results: dict[str, list[dict]] = {m: [] for m in modes}
            for round_ in range(args.rounds):
                for mode in modes:
                    dump_env = dict(env)
                    if round_ == 0 and mode in ("python", "c") and "python" in modes:
                        dump_env["BENCH_COUNT_DUMP"] = os.path.join(scratch, "counts")
                    result = run(mode, path, pattern, args.workers, args.vocab_size, dump_env)
                    results[mode].append(result)
                    print(f"  {pattern} round {round_ + 1} {mode}: wall {result['wall']:.2f} s, "
                          f"cpu {result['cpu']:.2f} s, peak +{result['peak_mb']:.0f} MB", flush=True)
                if round_ == 0 and "python" in modes:
                    import pickle

                    with open(os.path.join(scratch, "counts.python"), "rb") as f:
                        python = pickle.load(f)
                    with open(os.path.join(scratch, "counts.c"), "rb") as f:
                        assert pickle.load(f) == python, "the C counts differ from Python's"
                    print(f"  {pattern}: C counts equal Python's, in order ({len(python):,} distinct chunks)")
            distinct = results["c"][0]["distinct"] if "c" in results else None
            recorded.append({"pattern": pattern, "distinct": distinct, "mb": mb, "modes": {
                mode: {"wall": min(r["wall"] for r in rows), "cpu": min(r["cpu"] for r in rows),
                       "peak_mb": statistics.median(r["peak_mb"] for r in rows)} for mode, rows in results.items()}})
            print(f"{pattern}: best of {args.rounds} (median)")
            for mode, rows in results.items():
                wall = min(r["wall"] for r in rows)
                used = min(r["cpu"] for r in rows)
                peak = statistics.median(r["peak_mb"] for r in rows)
                per_chunk = f", {peak * 1e6 / distinct:.0f} B per distinct chunk" if distinct and mode != "python" \
                    else ""
                print(f"  {mode:6s} wall {wall:6.2f} s ({mb / wall:6.1f} MB/s), cpu {used:6.2f} s "
                      f"({mb / used:6.1f} MB/s per CPU-second), peak +{peak:.0f} MB{per_chunk}")
            if "python" in results and "c" in results:
                ratio = min(r["wall"] for r in results["python"]) / min(r["wall"] for r in results["c"])
                print(f"  c / python: {ratio:.1f}x faster (wall)")
    if args.json:
        write_results(args.json, "bench_count", vars(args), {"corpus": args.corpus, "workers": args.workers,
                                                             "rounds": args.rounds, "patterns": recorded}, started)


if __name__ == "__main__":
    main()
