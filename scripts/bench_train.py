"""Benchmark training: hf_bbpe against gigabpe 0.1.0, rustbpe 0.1.0 and HF tokenizers' BpeTrainer.

    python scripts/bench_train.py [CORPUS] [--patterns gpt2,gpt4] [--vocab-sizes 32768,131072]
                                  [--rounds 1] [--trainers hf_bbpe,gigabpe,rustbpe,hf_tokenizers]
                                  [--tie-breaks smallest_pair,huggingface] [--limit-mb N] [--json OUT]

CORPUS (default: the shared mix-49mb) is a UTF-8 text file; ``.xz`` is decompressed once into the
cache directory (``--cache-dir``, default ``$HF_BBPE_BENCH_CACHE`` or /tmp/hf_bbpe_bench), and
``--limit-mb`` trains on its first N MB, cut at a line end (also written there). The 1 GB real-text
corpus is made by scripts/make_train_corpus.py (``python scripts/make_train_corpus.py DIR``, then
``python scripts/bench_train.py DIR/corpus.txt``); a corpus with ~100 million distinct chunks by
scripts/make_many_chunks_corpus.py. Run with ``PYTHONPATH`` at the checkout whose hf_bbpe is
measured (its C kernels built in place).

**Documents are lines**: each line with its ``\\n`` (the last one may lack it), split at ``\\n``
only (no ``\\r`` or Unicode line separator ends a line). That is how ``tokenizers`` and gigabpe read
a text file, so every trainer reads the same file and gets the same documents:

* hf_bbpe: ``tok.train(open(path, newline="\\n"), ...)`` (a file object yields its lines);
  ``--hf-bbpe-input path`` passes ``files=[path]`` instead: the counting threads read the file themselves;
* rustbpe: ``train_from_iterator`` over the same file object's lines;
* HF BpeTrainer: ``Tokenizer.train([path])``, with ``initial_alphabet=ByteLevel.alphabet()`` (all
  256 bytes, as hf_bbpe and rustbpe have) and ``min_frequency=0``;
* gigabpe: ``train_bpe([path], pretokenizer="bytelevel")``. Its alphabet is only the bytes that
  occur in the corpus, so it is asked for ``vocab_size - 256 + (distinct bytes)`` tokens: the same
  number of merges as the others (the distinct bytes are counted once per corpus, untimed).

Patterns: ``gpt2`` is GPT-2's (hf_bbpe's GPT2_SPLIT_PATTERN for hf_bbpe and rustbpe; BpeTrainer
and gigabpe use the ByteLevel pre-tokenizer's own regex, ``use_regex=True``, which splits the same);
``gpt4`` is GPT-4's (cl100k's): for BpeTrainer a ``Split`` with the pattern as Oniguruma reads it,
then ``ByteLevel(use_regex=False)``; gigabpe is left out (it takes only ``"bytelevel"`` and
``"whitespace"``).

Each training runs in its own process (imports done before the clock starts), one after another,
round-robin: in each round every configuration (pattern x vocab size) runs every trainer, in an
order rotated by one each round, so that the anchors are measured beside hf_bbpe in the same run.
Per run:

* wall: the training call, from the path to the merges in memory; CPU: of the process and its
  worker processes over that call (on a shared machine, wall time alone misleads);
* max RSS: the largest RSS of any one process of the tree, as the child reports it at its end:
  its own peak (VmHWM) or that of a worker process it reaped (``RUSAGE_CHILDREN``). Not the
  child's ``ru_maxrss`` from ``wait4``: Linux carries into it the RSS that this script had when
  it forked the child, a floor under every trainer's figure;
* tree PSS: the largest sum of the proportional set sizes of the child and its worker processes,
  sampled every 0.1 s (pages shared after ``fork`` split, not counted twice): the fair figure for
  a trainer that works in processes;
* peak: the larger of the two, the figure the ratios use. It includes the interpreter and the
  imports (base: the child's RSS just before training).

The table gives the median over rounds, and the ratios hf_bbpe / fastest peer (wall) and
hf_bbpe / smallest peer (peak), per hf_bbpe tie-break. The merges are checked in every round:

* hf_bbpe ``tie_break="smallest_pair"`` must equal rustbpe's merges (its rule), token for token;
* hf_bbpe ``tie_break="huggingface"`` must equal BpeTrainer's and gigabpe's merge pairs, when
  ``hf_bbpe.engine.training.merge_loop.TIE_BREAKS`` has it ("not available" otherwise);
* gigabpe's must equal BpeTrainer's (the peers read the same documents; reported, it does not
  fail the run);
* information: how many of hf_bbpe's tokens are also BpeTrainer's (ties are broken differently).

The script exits with status 1 when an hf_bbpe check fails.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import pickle
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from importlib import metadata

from bench_results import machine, write_results

DEFAULT_CORPUS = "/work/shared/data/bench/mix-49mb.txt.xz"
TRAINERS = ("hf_bbpe", "gigabpe", "rustbpe", "hf_tokenizers")
PEERS = TRAINERS[1:]
PATTERNS = ("gpt2", "gpt4")
TARGET_TIME, TARGET_MEMORY = 0.5, 1.0  # issue 28: at most half the fastest peer's time, the smallest peer's memory
MB = 1_000_000


# ------------------------------------------------------------------------------ corpus


def cache_dir(path: str | None) -> str:
    path = path or os.environ.get("HF_BBPE_BENCH_CACHE") or "/tmp/hf_bbpe_bench"
    os.makedirs(path, exist_ok=True)
    return path


def file_key(path: str) -> str:
    """A short key for a file's version: its size, mtime and the sha256 of its first and last MB."""
    st = os.stat(path)
    h = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode())
    with open(path, "rb") as f:
        h.update(f.read(MB))
        f.seek(max(0, st.st_size - MB))
        h.update(f.read(MB))
    return h.hexdigest()[:12]


def prepare_corpus(corpus: str, limit_mb: float | None, cache: str) -> str:
    """The plain text file the trainers read: the corpus, decompressed and cut as asked (cached)."""
    stem = os.path.basename(corpus).removesuffix(".xz").removesuffix(".txt")
    plain = corpus
    if corpus.endswith(".xz"):
        plain = os.path.join(cache, f"{stem}-{file_key(corpus)}.txt")
        if not os.path.exists(plain):
            import lzma

            with lzma.open(corpus, "rb") as src, open(plain + ".partial", "wb") as dst:
                for block in iter(lambda: src.read(1 << 24), b""):
                    dst.write(block)
            os.replace(plain + ".partial", plain)
    if not limit_mb:
        return plain
    cut = os.path.join(cache, f"{stem}-{file_key(plain)}-first{limit_mb:g}MB.txt")
    if not os.path.exists(cut):
        left = int(limit_mb * MB)
        with open(plain, "rb") as src, open(cut + ".partial", "wb") as dst:
            for line in src:  # whole lines, so that the documents are the corpus's first ones
                if left <= 0:
                    break
                dst.write(line)
                left -= len(line)
        os.replace(cut + ".partial", cut)
    return cut


def distinct_bytes(path: str, cache: str) -> int:
    """How many of the 256 byte values occur in the file (cached beside the corpus's key)."""
    memo = os.path.join(cache, f"distinct-bytes-{file_key(path)}.json")
    if os.path.exists(memo):
        with open(memo) as f:
            return json.load(f)["distinct_bytes"]
    import numpy as np

    seen = np.zeros(256, dtype=bool)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            seen |= np.bincount(np.frombuffer(block, dtype=np.uint8), minlength=256) > 0
    n = int(seen.sum())
    with open(memo, "w") as f:
        json.dump({"path": path, "distinct_bytes": n}, f)
    return n


# ------------------------------------------------------------------------------- child


def documents(path: str):
    """The file's lines, each with its "\\n": the documents every trainer gets."""
    return open(path, encoding="utf-8", newline="\n")


def split_pattern(name: str) -> str:
    from hf_bbpe import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN

    return {"gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN}[name]


def onig_pattern(name: str) -> str:
    """The pattern as a tokenizer.json spells it for BpeTrainer's Split: Oniguruma reads some of
    Python regex's syntax differently ("{1,3}+", "$"), see hf_bbpe/engine/chunking/onig_regex.py."""
    from hf_bbpe.engine.chunking.onig_regex import translate_pattern_for_onig

    return translate_pattern_for_onig(split_pattern(name))


# Each trainer's child returns what its library gives, in plain Python objects; the parent turns it
# into merges (merges_of), so that a peer's process never imports hf_bbpe.


def train_hf_bbpe(args: argparse.Namespace):
    from hf_bbpe import RegexTokenizer

    tok = RegexTokenizer(args.split_pattern)
    if args.hf_bbpe_input == "path":
        tok.train(files=[args.path], vocab_size=args.vocab_size, tie_break=args.tie_break, progress=False)
    else:
        with documents(args.path) as docs:
            tok.train(docs, args.vocab_size, tie_break=args.tie_break, progress=False)
    return tok


def raw_hf_bbpe(tok) -> dict:
    vocab = tok.vocab
    return {"pairs": [(vocab[a], vocab[b]) for (a, b), _ in sorted(tok.merges.items(), key=lambda kv: kv[1])]}


def train_rustbpe(args: argparse.Namespace):
    import rustbpe

    tok = rustbpe.Tokenizer()
    with documents(args.path) as docs:
        tok.train_from_iterator(docs, args.vocab_size, pattern=args.split_pattern)
    return tok


def raw_rustbpe(tok) -> dict:
    # the 256 single bytes first (ranks 0-255), then one token per merge, in order; no pairs
    return {"tokens": [token for token, rank in sorted(tok.get_mergeable_ranks(), key=lambda kv: kv[1]) if rank >= 256]}


def train_hf_tokenizers(args: argparse.Namespace):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    if args.pattern == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(args.onig_pattern), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    trainer = trainers.BpeTrainer(
        vocab_size=args.vocab_size,
        min_frequency=0,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train([args.path], trainer)
    return tok


def raw_hf_tokenizers(tok) -> dict:
    merges = json.loads(tok.to_str())["model"]["merges"]
    return {"unicode_pairs": [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]}


def train_gigabpe(args: argparse.Namespace):
    import gigabpe

    # its alphabet is the corpus's bytes only: ask for as many merges as the others make
    vocab_size = args.vocab_size - 256 + args.distinct_bytes
    return gigabpe.train_bpe([args.path], vocab_size, pretokenizer="bytelevel", min_frequency=0)


def raw_gigabpe(out) -> dict:
    _, merges = out
    return {"unicode_pairs": [tuple(m) for m in merges]}


CHILDREN = {
    "hf_bbpe": ("hf_bbpe", train_hf_bbpe, raw_hf_bbpe),
    "rustbpe": ("rustbpe", train_rustbpe, raw_rustbpe),
    "hf_tokenizers": ("tokenizers", train_hf_tokenizers, raw_hf_tokenizers),
    "gigabpe": ("gigabpe", train_gigabpe, raw_gigabpe),
}


def run_child(args: argparse.Namespace) -> None:
    module, train, raw = CHILDREN[args.child]
    __import__(module)  # the library's import, before the clock starts
    base = rss_mb()
    cpu_start = cpu_seconds()
    start = time.perf_counter()
    out = train(args)
    wall = time.perf_counter() - start
    cpu = cpu_seconds() - cpu_start
    result = raw(out)
    with open(args.merges_out, "wb") as f:
        pickle.dump(result, f)
    # this process's peak since its exec (VmHWM is per address space), or a reaped worker's
    max_rss = max(status_mb("VmHWM"), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    print(json.dumps({"wall": wall, "cpu": cpu, "base_rss_mb": base, "max_rss_mb": max_rss}))


def merges_of(raw: dict) -> dict:
    """Merges as byte strings: the pairs where the library gives them, and the merged tokens."""
    if "unicode_pairs" in raw:
        from hf_bbpe.engine.chunking.byte_unicode import unicode_to_token

        raw = {"pairs": [(unicode_to_token(a), unicode_to_token(b)) for a, b in raw["unicode_pairs"]]}
    if "pairs" in raw:
        return {"pairs": raw["pairs"], "tokens": [a + b for a, b in raw["pairs"]]}
    return {"pairs": None, "tokens": raw["tokens"]}


def status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM, ...), in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    return status_mb("VmRSS")


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its reaped child processes."""
    return sum(
        r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


# ------------------------------------------------------------------------------ parent


def descendants(root: int) -> list[int]:
    """root and every process below it (scans /proc)."""
    parent_of = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            parent_of[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    tree, frontier = [root], {root}
    while frontier:
        frontier = {pid for pid, ppid in parent_of.items() if ppid in frontier}
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


def run_one(job: dict, args: argparse.Namespace, path: str, n_bytes: int, merges_out: str) -> dict:
    """One training in its own process: its child's timings, and its memory measured from outside."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", job["trainer"], "--path", path,
           "--pattern", job["pattern"], "--vocab-size", str(job["vocab_size"]), "--tie-break", job["tie_break"],
           "--distinct-bytes", str(n_bytes), "--hf-bbpe-input", args.hf_bbpe_input, "--merges-out", merges_out,
           "--split-pattern", split_pattern(job["pattern"]), "--onig-pattern", onig_pattern(job["pattern"])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak_pss = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_pss
        while not done.wait(0.1):
            peak_pss = max(peak_pss, sum(pss_mb(pid) for pid in descendants(proc.pid)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"{job['label']} failed with exit code {proc.returncode}: {' '.join(cmd)}")
    result = json.loads(out.strip().splitlines()[-1])
    result["tree_pss_mb"] = peak_pss
    result["peak_mb"] = max(result["max_rss_mb"], peak_pss)
    return result


def label(trainer: str, tie_break: str) -> str:
    return trainer if trainer != "hf_bbpe" or tie_break == "smallest_pair" else f"hf_bbpe[{tie_break}]"


def plan(args: argparse.Namespace, tie_breaks: list[str]) -> list[list[dict]]:
    """The jobs of each configuration (pattern x vocab size), in their first round's order."""
    configs = []
    for pattern, vocab_size in itertools.product(args.patterns, args.vocab_sizes):
        jobs = []
        for trainer in args.trainers:
            if trainer == "gigabpe" and pattern != "gpt2":
                continue  # gigabpe 0.1.0 has only ByteLevel's own regex (and whitespace splitting)
            for tie_break in tie_breaks if trainer == "hf_bbpe" else ["-"]:
                jobs.append({"trainer": trainer, "tie_break": tie_break, "pattern": pattern, "vocab_size": vocab_size,
                             "label": label(trainer, tie_break)})
        configs.append(jobs)
    return configs


def first_difference(a: list, b: list) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first difference at merge {i + 1}: {x!r} vs {y!r}"
    return f"one is a prefix of the other ({len(a)} vs {len(b)} merges)"


def check_merges(merges: dict[str, dict], huggingface_available: bool) -> list[dict]:
    """One configuration's round: each check's name, verdict, whether it passed (None: information
    only) and whether it is hf_bbpe's (a failed one fails the run) or the peers' own."""
    checks = []

    def compare(name: str, ours: str, theirs: str, key: str, required: bool) -> None:
        if ours in merges and theirs in merges:
            a, b = merges[ours][key], merges[theirs][key]
            verdict = f"identical ({len(a)} merges)" if a == b else "DIFFERENT: " + first_difference(a, b)
            checks.append({"check": name, "verdict": verdict, "passed": a == b, "required": required})

    compare("hf_bbpe == rustbpe", "hf_bbpe", "rustbpe", "tokens", True)
    compare("gigabpe == BpeTrainer (the peers read the same documents)", "gigabpe", "hf_tokenizers", "pairs", False)
    if huggingface_available:
        compare("hf_bbpe[huggingface] == BpeTrainer", "hf_bbpe[huggingface]", "hf_tokenizers", "pairs", True)
        compare("hf_bbpe[huggingface] == gigabpe", "hf_bbpe[huggingface]", "gigabpe", "pairs", True)
    elif "hf_tokenizers" in merges or "gigabpe" in merges:
        checks.append({"check": "hf_bbpe[huggingface] == BpeTrainer / gigabpe",
                       "verdict": "not available (hf_bbpe.engine.training.merge_loop.TIE_BREAKS has no 'huggingface')",
                       "passed": None, "required": False})
    if "hf_bbpe" in merges and "hf_tokenizers" in merges:
        ours, theirs = set(merges["hf_bbpe"]["tokens"]), set(merges["hf_tokenizers"]["tokens"])
        checks.append({"check": "hf_bbpe's tokens that BpeTrainer has too",
                       "verdict": f"{len(ours & theirs) / max(1, len(ours)):.2%} (information: the tie-breaks differ)",
                       "passed": None, "required": False})
    return checks


def versions() -> str:
    names = ("gigabpe", "rustbpe", "tokenizers")
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def summarize(args, configs, runs, checks, path, n_bytes) -> dict:
    """Print the results table, the ratios and the checks; return them for --json."""
    summary = {"corpus": args.corpus, "path": path, "bytes": os.path.getsize(path), "distinct_bytes": n_bytes,
               "rounds": args.rounds, "configs": []}
    print(f"\n## {args.corpus}" + (f" (first {args.limit_mb:g} MB)" if args.limit_mb else "")
          + f": {os.path.getsize(path) / MB:.1f} MB, documents = lines; median of {args.rounds} round(s)\n")
    print("| pattern | vocab | trainer | wall (s) | CPU (s) | peak (MB) | max RSS (MB) | tree PSS (MB) | base (MB) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for jobs in configs:
        config = {"pattern": jobs[0]["pattern"], "vocab_size": jobs[0]["vocab_size"], "trainers": {}, "ratios": {}}
        for job in jobs:
            rs = runs[(job["pattern"], job["vocab_size"], job["label"])]
            med = {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "peak_mb", "max_rss_mb",
                                                                     "tree_pss_mb", "base_rss_mb")}
            med["wall_min"] = min(r["wall"] for r in rs)
            config["trainers"][job["label"]] = med
            print(f"| {job['pattern']} | {job['vocab_size']:,} | {job['label']} | {med['wall']:.1f} | {med['cpu']:.1f} "
                  f"| {med['peak_mb']:.0f} | {med['max_rss_mb']:.0f} | {med['tree_pss_mb']:.0f} | {med['base_rss_mb']:.0f} |")
        summary["configs"].append(config)
    print()
    for config in summary["configs"]:
        t = config["trainers"]
        peers = {name: t[name] for name in PEERS if name in t}
        head = f"{config['pattern']} {config['vocab_size']:,}"
        if not peers:
            continue
        fastest = min(peers, key=lambda n: peers[n]["wall"])
        smallest = min(peers, key=lambda n: peers[n]["peak_mb"])
        for name in (n for n in t if n.startswith("hf_bbpe")):
            time_ratio = t[name]["wall"] / peers[fastest]["wall"]
            cpu_ratio = t[name]["cpu"] / min(p["cpu"] for p in peers.values())
            memory_ratio = t[name]["peak_mb"] / peers[smallest]["peak_mb"]
            config["ratios"][name] = {"time": time_ratio, "memory": memory_ratio, "fastest_peer": fastest,
                                      "smallest_peer": smallest, "cpu_vs_least_cpu_peer": cpu_ratio}
            print(f"{head}: {name} / fastest peer ({fastest}) time {time_ratio:.2f}x "
                  f"[target <= {TARGET_TIME}: {'met' if time_ratio <= TARGET_TIME else 'not met'}; "
                  f"CPU time / the least CPU of a peer {cpu_ratio:.2f}x], "
                  f"{name} / smallest peer ({smallest}) peak memory {memory_ratio:.2f}x "
                  f"[target <= {TARGET_MEMORY}: {'met' if memory_ratio <= TARGET_MEMORY else 'not met'}]")
    print()
    for (pattern, vocab_size), rounds in checks.items():
        config = next(c for c in summary["configs"] if (c["pattern"], c["vocab_size"]) == (pattern, vocab_size))
        config["checks"] = []
        for round_number, found in enumerate(rounds, 1):
            for check in found:
                if round_number == 1 or check["passed"] is False:
                    mark = {True: "ok", None: "--"}.get(check["passed"], "FAIL" if check["required"] else "differ")
                    print(f"{pattern} {vocab_size:,} round {round_number}: [{mark}] {check['check']}: {check['verdict']}")
                config["checks"].append({"round": round_number, **check})
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--patterns", default="gpt2,gpt4", help="comma-separated, from: " + ", ".join(PATTERNS))
    parser.add_argument("--vocab-sizes", default="32768,131072", help="comma-separated")
    parser.add_argument("--trainers", default=",".join(TRAINERS), help="comma-separated, from: " + ", ".join(TRAINERS))
    parser.add_argument("--tie-breaks", default=None,
                        help="hf_bbpe's, comma-separated (default: smallest_pair, and huggingface where it exists)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--limit-mb", type=float, default=None, help="train on the corpus's first N MB (whole lines)")
    parser.add_argument("--hf-bbpe-input", choices=("lines", "path"), default="lines",
                        help="give hf_bbpe the file's lines (a file object) or [path]")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--json", help="also write the results here, with the machine, load and date "
                                       "(scripts/render_benchmarks.py renders docs/benchmarks.md from them)")
    # the child's arguments
    parser.add_argument("--child", choices=TRAINERS, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--pattern", help=argparse.SUPPRESS)
    parser.add_argument("--vocab-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tie-break", help=argparse.SUPPRESS)
    parser.add_argument("--distinct-bytes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--merges-out", help=argparse.SUPPRESS)
    parser.add_argument("--split-pattern", help=argparse.SUPPRESS)
    parser.add_argument("--onig-pattern", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
        return

    from hf_bbpe.engine.training.merge_loop import TIE_BREAKS

    args.patterns = [p for p in args.patterns.split(",") if p]
    args.vocab_sizes = [int(v) for v in args.vocab_sizes.split(",") if v]
    args.trainers = [t for t in args.trainers.split(",") if t]
    for value, allowed, what in ((args.patterns, PATTERNS, "pattern"), (args.trainers, TRAINERS, "trainer")):
        if bad := [v for v in value if v not in allowed]:
            parser.error(f"unknown {what} {bad}; choose from {allowed}")
    has_huggingface = "huggingface" in TIE_BREAKS
    if args.tie_breaks:
        tie_breaks = [t for t in args.tie_breaks.split(",") if t]
        if bad := [t for t in tie_breaks if t not in TIE_BREAKS]:
            parser.error(f"hf_bbpe has no tie-break {bad}; it has {TIE_BREAKS}")
    else:
        tie_breaks = ["smallest_pair"] + (["huggingface"] if has_huggingface else [])

    started = machine()
    cache = cache_dir(args.cache_dir)
    path = prepare_corpus(args.corpus, args.limit_mb, cache)
    n_bytes = distinct_bytes(path, cache)
    configs = plan(args, tie_breaks)
    print(f"corpus {args.corpus} -> {path} ({os.path.getsize(path) / MB:.1f} MB, {n_bytes} distinct bytes)")
    print(f"{platform.node()}: {len(os.sched_getaffinity(0))} CPUs, load average {os.getloadavg()[0]:.2f} at start; "
          f"{versions()}; hf_bbpe tie-breaks {tie_breaks} (TIE_BREAKS {TIE_BREAKS})")
    print("The machine may be shared with other users: compare figures within one run only.\n", flush=True)

    runs: dict[tuple, list[dict]] = {}
    checks: dict[tuple, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_number in range(args.rounds):
            for jobs in configs:
                shift = round_number % len(jobs)
                merges = {}
                for job in jobs[shift:] + jobs[:shift]:
                    merges_out = os.path.join(tmp, f"{job['label']}.pkl")
                    r = run_one(job, args, path, n_bytes, merges_out)
                    with open(merges_out, "rb") as f:
                        merges[job["label"]] = merges_of(pickle.load(f))
                    os.remove(merges_out)
                    runs.setdefault((job["pattern"], job["vocab_size"], job["label"]), []).append(r)
                    print(f"round {round_number + 1} {job['pattern']} {job['vocab_size']:>7,} {job['label']:22s} "
                          f"{r['wall']:7.1f} s  CPU {r['cpu']:7.1f} s  peak {r['peak_mb']:6.0f} MB "
                          f"(max RSS {r['max_rss_mb']:.0f}, tree PSS {r['tree_pss_mb']:.0f}, base {r['base_rss_mb']:.0f})"
                          f"  {len(merges[job['label']]['tokens'])} merges  load {os.getloadavg()[0]:.2f}", flush=True)
                checks.setdefault((jobs[0]["pattern"], jobs[0]["vocab_size"]), []).append(
                    check_merges(merges, has_huggingface))
    summary = summarize(args, configs, runs, checks, path, n_bytes)
    if args.json:
        summary["runs"] = {" ".join(map(str, k)): v for k, v in runs.items()}
        summary["versions"] = versions()
        write_results(args.json, "bench_train", vars(args), summary, started)
    failed = any(c["passed"] is False and c["required"] for rounds in checks.values() for found in rounds for c in found)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
