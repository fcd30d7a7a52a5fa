"""Benchmark training: hf_bbpe vs rustbpe 0.1.0 vs HF tokenizers' BpeTrainer, same documents.

    python scripts/bench_train.py [CORPUS] [--vocab-size 32768] [--limit-mb N]

CORPUS is a text file (``.xz`` is decompressed), split into documents at blank lines; every
trainer gets the same list of documents and the GPT-4 split pattern. Each trainer runs in its own
subprocess, so that memory is measured per trainer:

* wall: the training call only (the child loads the corpus first, outside the timing), and the
  CPU time it used (all threads and worker processes): on a busy machine, wall time alone misleads;
* peak PSS: the largest sum, over the child and its worker processes, of their proportional set
  size (``/proc/<pid>/smaps_rollup``; pages shared after ``fork`` are split, not counted twice),
  sampled every 0.1 s; this is the fair figure for hf_bbpe, which counts chunks in processes;
* max RSS: the largest single process of the child's tree (the child's VmHWM, reset after
  loading, and ``getrusage(RUSAGE_CHILDREN)`` for its workers);
* base: the child's RSS after loading the documents, before training (the same for all three).
  Both memory figures are measured from the end of loading on, and include this base.

hf_bbpe's merges are checked to equal rustbpe's, byte for byte, in the same run.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import threading
import time

DEFAULT_CORPUS = "/work/shared/data/bench/mix-49mb.txt.xz"
TRAINERS = ("hf_bbpe", "rustbpe", "hf_tokenizers")
_BLOCK_CHARS = 1 << 22


def load_documents(corpus: str, limit_mb: float | None) -> list[str]:
    """``text.split("\\n\\n")`` of the corpus (its first ``limit_mb`` million characters if given).

    Read in blocks, so that loading never holds the whole text beside its documents: the peak
    memory measured during training is then the trainer's, not the loader's.
    """
    opener = lzma.open if corpus.endswith(".xz") else open
    left = int(limit_mb * 1_000_000) if limit_mb else None
    documents: list[str] = []
    carry = ""
    with opener(corpus, "rt", encoding="utf-8") as f:
        while left is None or left > 0:
            block = f.read(_BLOCK_CHARS if left is None else min(_BLOCK_CHARS, left))
            if not block:
                break
            if left is not None:
                left -= len(block)
            # the last piece may continue in the next block (a "\n\n" may straddle the cut too)
            *complete, carry = (carry + block).split("\n\n")
            documents += complete
    documents.append(carry)
    return documents


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    return _status_mb("VmRSS")


def peak_rss_mb() -> float:
    return _status_mb("VmHWM")


def reset_peak_rss() -> None:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux clear_refs)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its reaped child processes."""
    return sum(
        r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


# ------------------------------------------------------------------------------ child


def train_hf_bbpe(docs: list[str], vocab_size: int, pattern: str):
    from hf_bbpe import RegexTokenizer

    tok = RegexTokenizer(pattern)
    tok.train(docs, vocab_size, progress=False)
    return tok.mergeable_ranks()


def train_rustbpe(docs: list[str], vocab_size: int, pattern: str):
    import rustbpe

    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(docs, vocab_size, pattern=pattern)
    return dict(tok.get_mergeable_ranks())


def train_hf_tokenizers(docs: list[str], vocab_size: int, pattern: str):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from hf_bbpe.onig_regex import translate_pattern_for_onig

    # the pattern the tokenizer.json export uses: Oniguruma reads some of Python regex's syntax
    # differently ("{1,3}+", "$"), see hf_bbpe/onig_regex.py
    hf_pattern = translate_pattern_for_onig(pattern)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(hf_pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=0,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(docs, trainer)
    return None  # not compared: its tie-break and merge counting differ


def run_child(args: argparse.Namespace) -> None:
    from hf_bbpe import GPT4_SPLIT_PATTERN

    docs = load_documents(args.corpus, args.limit_mb)
    base = rss_mb()
    reset_peak_rss()
    print("loaded", flush=True)  # the parent starts sampling memory now
    train = {"hf_bbpe": train_hf_bbpe, "rustbpe": train_rustbpe, "hf_tokenizers": train_hf_tokenizers}[args.child]
    cpu_start = cpu_seconds()
    start = time.perf_counter()
    ranks = train(docs, args.vocab_size, GPT4_SPLIT_PATTERN)
    wall = time.perf_counter() - start
    cpu = cpu_seconds() - cpu_start
    if ranks is not None and args.ranks_out:
        with open(args.ranks_out, "wb") as f:
            pickle.dump(ranks, f)
    # the largest single process since loading: this one, or one of its (reaped) worker processes
    max_rss = max(peak_rss_mb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    result = {"wall": wall, "cpu": cpu, "base_rss_mb": base, "max_rss_mb": max_rss, "documents": len(docs)}
    print(json.dumps(result))


# ----------------------------------------------------------------------------- parent


def descendants(root: int) -> list[int]:
    """root and every process below it (scans /proc: the machine has no /proc/*/children)."""
    parent_of = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            parent_of[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parent_of.items() if ppid in frontier]
        tree += frontier
    return tree


def pss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_trainer(name: str, args: argparse.Namespace, ranks_out: str) -> dict:
    cmd = [sys.executable, __file__, args.corpus, "--child", name, "--vocab-size", str(args.vocab_size)]
    cmd += ["--ranks-out", ranks_out]
    if args.limit_mb:
        cmd += ["--limit-mb", str(args.limit_mb)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "loaded":
        proc.wait()
        raise SystemExit(f"{name} failed to load the corpus")
    peak = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.1):
            peak = max(peak, sum(pss_mb(pid) for pid in descendants(proc.pid)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"{name} failed with exit code {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_pss_mb"] = peak
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--limit-mb", type=float, default=None, help="train on this many million characters only")
    parser.add_argument("--trainers", default=",".join(TRAINERS), help="comma-separated, from: " + ", ".join(TRAINERS))
    parser.add_argument("--child", choices=TRAINERS, help=argparse.SUPPRESS)
    parser.add_argument("--ranks-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
        return

    names = [n for n in args.trainers.split(",") if n]
    print(f"corpus {args.corpus}" + (f" (first {args.limit_mb} M characters)" if args.limit_mb else ""))
    print(f"vocab_size {args.vocab_size}, GPT-4 split pattern; CPUs available: {len(os.sched_getaffinity(0))} "
          "(shared with other users of the machine: timings vary from run to run)")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            results[name] = run_trainer(name, args, os.path.join(tmp, f"{name}.pkl"))
            r = results[name]
            print(f"  {name:14s} {r['wall']:7.1f} s (CPU {r['cpu']:6.1f} s)   peak PSS {r['peak_pss_mb']:6.0f} MB"
                  f"   max RSS {r['max_rss_mb']:6.0f} MB   (base {r['base_rss_mb']:.0f} MB, {r['documents']} documents)",
                  flush=True)
        equal = None
        if "hf_bbpe" in results and "rustbpe" in results:
            with open(os.path.join(tmp, "hf_bbpe.pkl"), "rb") as f:
                ours = pickle.load(f)
            with open(os.path.join(tmp, "rustbpe.pkl"), "rb") as f:
                theirs = pickle.load(f)
            equal = ours == theirs
            verdict = "equal" if equal else "NOT EQUAL"
            print(f"hf_bbpe merges == rustbpe merges: {verdict} ({len(ours)} vs {len(theirs)} tokens)")

    print("\n| trainer | wall (s) | CPU (s) | peak PSS (MB) | max RSS (MB) |\n|---|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['peak_pss_mb']:.0f} | {r['max_rss_mb']:.0f} |")
    ours = results.get("hf_bbpe")
    if ours:
        print()
        for anchor in ("hf_tokenizers", "rustbpe"):
            if anchor in results:
                a = results[anchor]
                print(f"hf_bbpe / {anchor}: wall {ours['wall'] / a['wall']:.2f}x, CPU {ours['cpu'] / a['cpu']:.2f}x, "
                      f"peak PSS {ours['peak_pss_mb'] / a['peak_pss_mb']:.2f}x, max RSS {ours['max_rss_mb'] / a['max_rss_mb']:.2f}x")
    if equal is False:
        sys.exit(1)


if __name__ == "__main__":
    main()
