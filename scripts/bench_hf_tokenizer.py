"""Benchmark BBPETokenizer (the transformers wrapper) against its anchors, in one run.

    python scripts/bench_hf_tokenizer.py [CORPUS] [--sample-mb 8] [--rounds 3] [--tf457-python PATH] [--json OUT]

Uses GPT-2's vocabulary (tests/data/gpt2, loaded as a GPT-2-style folder) on CORPUS (``.xz`` is
decompressed; documents are separated by blank lines). The shared corpus is ordered by source
(fortunes, then Python, then Wikipedia), so the run takes every k-th document, about
``--sample-mb`` MB in all (0: every document; transformers 4.57's GPT2Tokenizer encodes some
0.2 MB/s, hence the sample). It measures, each on its own tokenizer
object after a warm-up pass over the first documents (so every chunk cache starts equally warm):

1. the engine: ``encode_ordinary(doc)`` for each document (the anchor);
2. ``BBPETokenizer(doc)["input_ids"]`` for each document, and ``BBPETokenizer(docs)`` in batches
   of 256: requirement 7 wants >= 0.5x the engine's throughput;
3. the fast twin (tokenizer.json in ``AutoTokenizer``, no remote code): per document, and on the
   same batches of 256 as ``BBPETokenizer(docs)`` (which one to use in a data pipeline: the ratios
   printed at the end);
4. in transformers 4.57's interpreter (``.venv-tf457``, made by scripts/setup.sh): its slow
   ``GPT2Tokenizer`` on the same vocab, and BBPETokenizer there too; requirement 7 wants
   BBPETokenizer to beat GPT2Tokenizer.

The systems of this interpreter run interleaved: ``--rounds`` rounds, each running every system
once in a rotated order, and each row is the median of its rounds (so a busy spell of a shared
machine falls on all of them alike). All contenders must give identical ids (checked by a hash
of every id). Throughput is UTF-8 megabytes per second of wall time, with CPU seconds beside it
(a shared machine makes wall time alone misleading; the fast twin's batches may use several
threads, whose CPU seconds add up). Exits with status 1 if ids differ or a requirement is missed.
``--json OUT`` also writes the rows with the machine, load and date (scripts/bench_results.py),
from which scripts/render_benchmarks.py renders docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = "/work/shared/data/bench/mix-49mb.txt.xz"
GPT2_FILES = REPO / "tests" / "data" / "gpt2"
WARMUP_DOCS = 500
BATCH = 256


def load_docs(corpus: str, sample_mb: float) -> list[str]:
    """Every k-th document of the corpus, about ``sample_mb`` MB of UTF-8 (all if 0)."""
    opener = lzma.open if corpus.endswith(".xz") else open
    with opener(corpus, "rt", encoding="utf-8") as handle:
        docs = [doc for doc in handle.read().split("\n\n") if doc]
    total = sum(len(doc.encode("utf-8")) for doc in docs)
    step = max(1, round(total / (sample_mb * 1e6))) if sample_mb else 1
    return docs[::step]


def gpt2_folder(directory: Path) -> Path:
    """OpenAI's GPT-2 files as a transformers GPT-2 folder (vocab.json + merges.txt)."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(GPT2_FILES / "encoder.json", directory / "vocab.json")
    shutil.copy(GPT2_FILES / "vocab.bpe", directory / "merges.txt")
    return directory


def measure(encode, docs: list[str], batched: bool = False) -> dict:
    """Time ``encode`` over ``docs`` after a warm-up; MB/s of wall time, CPU seconds, ids hash."""
    warm = docs[:WARMUP_DOCS]
    encode(warm) if batched else [encode(doc) for doc in warm]
    digest = hashlib.sha256()
    wall, cpu = time.perf_counter(), time.process_time()
    if batched:
        rows = []
        for start in range(0, len(docs), BATCH):
            rows += encode(docs[start:start + BATCH])
    else:
        rows = [encode(doc) for doc in docs]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    for row in rows:
        digest.update(json.dumps(row).encode())
    size = sum(len(doc.encode("utf-8")) for doc in docs)
    return {"mb_s": size / wall / 1e6, "cpu_mb_s": size / cpu / 1e6, "wall": wall, "cpu": cpu,
            "hash": digest.hexdigest()}


def run_here(folder: Path, docs: list[str], rounds: int) -> dict[str, dict]:
    """This interpreter's systems, interleaved over ``rounds`` rounds (each in its own tokenizer
    object: its own cache); each row the median of its rounds."""
    from transformers import AutoTokenizer

    from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

    engine = BBPETokenizer.from_pretrained(folder).engine
    hf = BBPETokenizer.from_pretrained(folder)
    hf_batch = BBPETokenizer.from_pretrained(folder)
    saved = folder.parent / "saved"
    hf.save_pretrained(saved)  # adds tokenizer.json, the fast twin
    fast = AutoTokenizer.from_pretrained(saved)
    fast_batch = AutoTokenizer.from_pretrained(saved)
    twin = f"fast twin {type(fast).__name__}"
    systems = {
        "engine encode_ordinary": (engine.encode_ordinary, False),
        "BBPETokenizer(doc)": (lambda doc: hf(doc)["input_ids"], False),
        f"BBPETokenizer(batch of {BATCH})": (lambda batch: hf_batch(batch)["input_ids"], True),
        f"{twin}(doc)": (lambda doc: fast(doc)["input_ids"], False),
        f"{twin}(batch of {BATCH})": (lambda batch: fast_batch(batch)["input_ids"], True),
    }
    runs: dict[str, list[dict]] = {name: [] for name in systems}
    names = list(systems)
    for round_ in range(rounds):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            encode, batched = systems[name]
            runs[name].append(measure(encode, docs, batched=batched))
    return {name: _median_row(rows) for name, rows in runs.items()}


def _median_row(rows: list[dict]) -> dict:
    """The median of each measure over rounds (one ids hash: they must all agree)."""
    def median(key: str) -> float:
        return statistics.median(row[key] for row in rows)

    hashes = {row["hash"] for row in rows}
    return {"mb_s": median("mb_s"), "cpu_mb_s": median("cpu_mb_s"), "wall": median("wall"), "cpu": median("cpu"),
            "hash": hashes.pop() if len(hashes) == 1 else "rounds differ"}


TF457_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from bench_hf_tokenizer import load_docs, measure
import transformers
from transformers import GPT2Tokenizer
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
folder, corpus, sample_mb = sys.argv[2], sys.argv[3], float(sys.argv[4])
docs = load_docs(corpus, sample_mb)
slow = GPT2Tokenizer.from_pretrained(folder)
hf = BBPETokenizer.from_pretrained(folder)
print(json.dumps({"version": transformers.__version__,
                  "GPT2Tokenizer(doc)": measure(lambda doc: slow(doc)["input_ids"], docs),
                  "BBPETokenizer(doc)": measure(lambda doc: hf(doc)["input_ids"], docs)}))
"""


def run_tf457(python: Path, folder: Path, corpus: str, sample_mb: float) -> dict:
    result = subprocess.run(
        [str(python), "-c", TF457_SCRIPT, str(Path(__file__).parent), str(folder), corpus, str(sample_mb)],
        capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"transformers 4.57 run failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--sample-mb", type=float, default=8.0,
                        help="every k-th document, about this many MB (0: the whole corpus)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of this interpreter's systems")
    parser.add_argument("--tf457-python", type=Path, default=REPO / ".venv-tf457" / "bin" / "python",
                        help="interpreter with transformers 4.57 and hf_bbpe (scripts/setup.sh makes it)")
    parser.add_argument("--json", help="also write the rows here, with the machine, load and date")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_results import machine, write_results

    started = machine()

    docs = load_docs(args.corpus, args.sample_mb)
    size = sum(len(doc.encode("utf-8")) for doc in docs)
    print(f"corpus: {args.corpus}, {len(docs)} documents, {size / 1e6:.1f} MB; GPT-2 vocabulary")
    with tempfile.TemporaryDirectory() as tmp:
        folder = gpt2_folder(Path(tmp) / "gpt2")
        import transformers

        rows = {f"{name} [transformers {transformers.__version__}]": row
                for name, row in run_here(folder, docs, max(1, args.rounds)).items()}
        tf457 = None
        if args.tf457_python.exists():
            tf457 = run_tf457(args.tf457_python, folder, args.corpus, args.sample_mb)
            version = tf457.pop("version")
            rows.update({f"{name} [transformers {version}]": row for name, row in tf457.items()})
        else:
            print(f"(no {args.tf457_python}: skipping the transformers 4.57 GPT2Tokenizer anchor)")

    width = max(map(len, rows))
    print(f"{'':<{width}}  {'MB/s wall':>10}  {'MB/s CPU':>9}  {'wall s':>7}  {'CPU s':>7}")
    for name, row in rows.items():
        print(f"{name:<{width}}  {row['mb_s']:10.2f}  {row['cpu_mb_s']:9.2f}  {row['wall']:7.2f}  {row['cpu']:7.2f}")
    hashes = {row["hash"] for row in rows.values()}
    failed = False
    if len(hashes) != 1:
        print("FAIL: the contenders' ids differ:", {name: row["hash"][:12] for name, row in rows.items()})
        failed = True

    def ratio(a: dict, b: dict) -> str:
        return f"{a['cpu_mb_s'] / b['cpu_mb_s']:.2f}x CPU ({a['mb_s'] / b['mb_s']:.2f}x wall)"

    # every contender is single-threaded but the fast twin, so CPU seconds are the fair measure
    # on a shared machine; wall time is printed beside them
    engine, single, batched, fast_single, fast_batched = list(rows.values())[:5]
    print(f"BBPETokenizer(doc) / engine: {ratio(single, engine)}; batched / engine: {ratio(batched, engine)}"
          "  (requirement: >= 0.5x)")
    print(f"BBPETokenizer / fast twin: per document {ratio(single, fast_single)}; "
          f"batches of {BATCH} {ratio(batched, fast_batched)}")
    failed |= single["cpu_mb_s"] < 0.5 * engine["cpu_mb_s"]
    if tf457 is not None:
        slow, ours = tf457["GPT2Tokenizer(doc)"], tf457["BBPETokenizer(doc)"]
        print(f"on 4.57, BBPETokenizer(doc) / GPT2Tokenizer(doc): {ratio(ours, slow)}; BBPETokenizer(doc) here / "
              f"4.57's GPT2Tokenizer(doc): {ratio(single, slow)}  (requirement: > 1x)")
        failed |= ours["cpu_mb_s"] <= slow["cpu_mb_s"]
    print("FAIL" if failed else "OK")
    if args.json:
        write_results(args.json, "bench_hf_tokenizer", {k: str(v) for k, v in vars(args).items()},
                      {"corpus": str(args.corpus), "documents": len(docs), "mb": size / 1e6, "batch": BATCH,
                       "rows": rows, "same_ids": len(hashes) == 1}, started)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
