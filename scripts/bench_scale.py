"""Benchmark hf_bbpe.distributed: chunk counting and encoding on Ray, against one machine.

    python scripts/bench_scale.py [CORPUS] [--limit-mb N] [--vocab-size 32768] [--rounds 2]
                                  [--sections counting,encode-corpus]

CORPUS (default: the shared 49 MB corpus, split into documents at blank lines) is first written
as a parquet dataset (32 files), which Ray reads as a user's job would. Each measurement runs in
its own subprocess, so that the driver's memory is its own, and the arms of a section run one
after the other in each of ``--rounds`` rounds (interleaved, so that a change in the machine's
load hits every arm alike; compare the ratios within a round):

* ``local N``: ``hf_bbpe.engine.training.counting_reference.count_chunks`` on the document list with N processes,
  then (after training) ``batch_encoding.encode_batch_flat`` of the documents with N workers;
* ``ray N``: a local Ray cluster of N CPUs (``ray.init(num_cpus=N)``; the cluster's start is not
  timed): ``hf_bbpe.distributed.count_chunks`` on ``read_parquet``, then ``train_from_counts``
  to ``--vocab-size`` on the driver, then ``encode_dataset`` with N actors (on a cluster of N + 1 CPUs: the
  actors hold N, the reading tasks need one) over the whole dataset (the cluster's restart
  included), then a warm ``TextEncoderPool`` of N actors (``encode-corpus --ray``'s encoder)
  over the documents in lists of about 16 MiB, each submitted while the last is encoded;
* driver memory: the driver's peak RSS (VmHWM, reset before counting) above its RSS before
  counting, while it receives the counts and while it trains, divided by the distinct chunks.

* ``encode-corpus``: the real command (``hf_bbpe.cli.main``, in a subprocess of its own) on the
  parquet files, with a tokenizer trained on the whole corpus to ``--vocab-size`` (uint16 shards
  of 16 MiB of text each): one process (``--workers 1``), every core, and a Ray cluster that the
  command starts (``--ray local``) with 1 and 2 actors. The time is the whole command's, start-up
  included (the tokenizer; for Ray, the cluster and its actors: the ``TextEncoderPool`` line of
  the counting section gives Ray's rate past start-up); the driver's peak RSS is the command's
  process. Every folder must be byte-identical.

Throughput is MB of UTF-8 text per second of wall time. The counts of every run are checked to
equal the single-process counts, and the merges trained from the Ray counts to equal the merges
trained from those.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import DEFAULT_CORPUS, rss_mb, status_mb  # noqa: E402

_FILES = 32
_BLOCK_CHARS = 1 << 22


def load_documents(corpus: str, limit_mb: float | None) -> list[str]:
    """``text.split("\\n\\n")`` of the corpus (its first ``limit_mb`` million characters if given).

    Read in blocks, so that loading never holds the whole text beside its documents: the peak
    memory measured later is then the job's, not the loader's.
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


def peak_rss_mb() -> float:
    return status_mb("VmHWM")


def reset_peak_rss() -> None:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux clear_refs)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def write_parquet(documents: list[str], folder: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    per_file = -(-len(documents) // _FILES)
    for k in range(_FILES):
        part = documents[k * per_file : (k + 1) * per_file]
        pq.write_table(pa.table({"text": part, "position": range(k * per_file, k * per_file + len(part))}),
                       os.path.join(folder, f"part-{k:03d}.parquet"))


def run_local(args: argparse.Namespace) -> dict:
    import pyarrow.parquet as pq

    from hf_bbpe import RegexTokenizer
    from hf_bbpe.engine.encoding.batches import encode_batch_flat
    from hf_bbpe.engine.training.counting_reference import count_chunks

    documents = pq.read_table(args.parquet, columns=["text"]).column("text").to_pylist()
    start = time.perf_counter()
    counts = count_chunks(documents, RegexTokenizer("gpt4").pattern, num_workers=args.workers, progress=False)
    seconds = time.perf_counter() - start
    tok = RegexTokenizer("gpt4")
    tok.train_from_counts(counts, args.vocab_size)
    if not os.path.exists(args.reference):
        with open(args.reference, "w", encoding="utf-8") as f:
            json.dump({"distinct": len(counts), "total": sum(counts.values()), "merges": list(tok.merges)}, f)
    start = time.perf_counter()
    encode_batch_flat(tok, documents, num_workers=args.workers, allowed_special="none", disallowed_special=())
    return {"count_s": seconds, "encode_s": time.perf_counter() - start}


def run_ray(args: argparse.Namespace) -> dict:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    import ray

    from hf_bbpe import RegexTokenizer
    from hf_bbpe.distributed import TextEncoderPool, count_chunks, encode_dataset

    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    ds = ray.data.read_parquet(args.parquet)
    ds.count()  # reads the metadata once, before the timing
    before = rss_mb()
    reset_peak_rss()
    start = time.perf_counter()
    counts = count_chunks(ds, "gpt4", text_column="text")
    count_s = time.perf_counter() - start
    count_peak = peak_rss_mb() - before
    tok = RegexTokenizer("gpt4")
    start = time.perf_counter()
    tok.train_from_counts(counts, args.vocab_size)
    train_s = time.perf_counter() - start
    train_peak = peak_rss_mb() - before
    with open(args.reference, encoding="utf-8") as f:
        reference = json.load(f)
    assert len(counts) == reference["distinct"] and sum(counts.values()) == reference["total"]
    assert [list(pair) for pair in tok.merges] == reference["merges"], "merges differ from one machine's"
    distinct = len(counts)
    del counts
    tok.register_special_tokens({"<|endoftext|>": args.vocab_size})
    start = time.perf_counter()
    ray.shutdown()
    # N encoding actors hold N CPUs; one more CPU reads the parquet files for them
    ray.init(num_cpus=args.workers + 1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    tokens = encode_dataset(ray.data.read_parquet(args.parquet), tok, add_eos=True, num_actors=args.workers)
    n_tokens = sum(pc.sum(pc.list_value_length(batch.column("input_ids"))).as_py() or 0
                   for batch in tokens.iter_batches(batch_format="pyarrow"))
    encode_s = time.perf_counter() - start
    # encode-corpus's encoder past start-up: a warm pool of N actors, 16 MiB lists submitted one ahead
    documents = pq.read_table(args.parquet, columns=["text"]).column("text").to_pylist()
    with TextEncoderPool(tok, num_actors=args.workers) as pool:
        pool.encode(["warm-up"] * args.workers * 2)
        start = time.perf_counter()
        pending = None
        for k in range(0, len(documents), 40_000):  # about 16 MiB of this corpus's text
            job = pool.submit(documents[k : k + 40_000])
            if pending is not None:
                pending()
            pending = job
        pending()
        pool_s = time.perf_counter() - start
    ray.shutdown()
    return {"count_s": count_s, "train_s": train_s, "encode_s": encode_s, "tokens": n_tokens, "distinct": distinct,
            "driver_count_mb": count_peak, "driver_train_mb": train_peak, "pool_s": pool_s}


def run_cli(args: argparse.Namespace) -> dict:
    """The real ``hf-bbpe encode-corpus`` in this process (``--cli-args``), then its peak RSS."""
    from hf_bbpe.cli.main import main as cli_main

    start = time.perf_counter()
    status = cli_main(json.loads(args.cli_args))
    seconds = time.perf_counter() - start
    assert status == 0, f"encode-corpus exited with {status}"
    return {"seconds": seconds, "peak_mb": peak_rss_mb()}


def child(args: argparse.Namespace) -> None:
    result = {"local": run_local, "ray": run_ray, "cli": run_cli}[args.mode](args)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--limit-mb", type=float, default=None)
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--sections", default="counting,encode-corpus",
                        help="comma-separated, from: counting (with encode_dataset), encode-corpus")
    parser.add_argument("--rounds", type=int, default=2,
                        help="times each arm runs; the arms of a round run one after the other (interleaved)")
    parser.add_argument("--mode", choices=("local", "ray", "cli"), help=argparse.SUPPRESS)
    parser.add_argument("--cli-args", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--parquet", help=argparse.SUPPRESS)
    parser.add_argument("--reference", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        child(args)
        return
    documents = load_documents(args.corpus, args.limit_mb)
    megabytes = sum(len(doc.encode("utf-8")) for doc in documents) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        parquet = os.path.join(tmp, "corpus")
        os.mkdir(parquet)
        write_parquet(documents, parquet)
        del documents
        reference = os.path.join(tmp, "reference.json")
        sections = args.sections.split(",")
        print(f"corpus: {args.corpus}, {megabytes:.1f} MB of text, GPT-4 pattern, vocab {args.vocab_size}")
        if "counting" in sections:
            bench_counting(args, parquet, reference, megabytes)
        if "encode-corpus" in sections:
            bench_encode_corpus(args, tmp, parquet, reference, megabytes)


def bench_counting(args: argparse.Namespace, parquet: str, reference: str, megabytes: float) -> None:
    """Counting (and encoding) locally and on Ray, the arms interleaved over ``--rounds``; the
    first run writes the reference merges. Ratios are taken within a round."""
    ratios: dict[str, list[float]] = {}
    for round_ in range(1, args.rounds + 1):
        rates = {}
        for mode, workers in (("local", 1), ("local", 2), ("ray", 1), ("ray", 2)):
            r = run_child(args, mode, workers, parquet, reference)
            rates[mode, workers] = (megabytes / r["count_s"], megabytes / r["encode_s"])
            line = (f"[round {round_}] {mode:5} {workers} worker(s): counting {rates[mode, workers][0]:5.2f} MB/s "
                    f"({r['count_s']:.1f} s)")
            if mode == "local":
                rates[mode, workers] += (rates[mode, workers][1],)  # what the Ray encoders compare with
                line += f"; encoding (encode_batch_flat) {rates[mode, workers][1]:5.2f} MB/s"
            else:
                rates[mode, workers] += (megabytes / r["pool_s"],)
                line += (
                    f"; encode_dataset {rates[mode, workers][1]:5.2f} MB/s ({r['tokens']:,} tokens, cluster start "
                    f"included); TextEncoderPool past start-up {rates[mode, workers][2]:5.2f} MB/s; "
                    f"training on the driver {r['train_s']:.1f} s; {r['distinct']:,} distinct chunks; driver peak "
                    f"+{r['driver_count_mb']:.0f} MB receiving counts ({r['driver_count_mb'] * 1e6 / r['distinct']:.0f} "
                    f"B/chunk), +{r['driver_train_mb']:.0f} MB training ({r['driver_train_mb'] * 1e6 / r['distinct']:.0f} B/chunk)"
                )
            print(line, flush=True)
        for name, (a, b, k) in {
            "counting: Ray 1 / local 1": (("ray", 1), ("local", 1), 0),
            "counting: Ray 2 / Ray 1": (("ray", 2), ("ray", 1), 0),
            "counting: local 2 / local 1": (("local", 2), ("local", 1), 0),
            "encoding: encode_dataset 1 actor / local 1": (("ray", 1), ("local", 1), 1),
            "encoding: encode_dataset 2 actors / 1 actor": (("ray", 2), ("ray", 1), 1),
            "encoding: local 2 / local 1": (("local", 2), ("local", 1), 1),
            "encoding: TextEncoderPool 1 actor / local 1": (("ray", 1), ("local", 1), 2),
            "encoding: TextEncoderPool 2 actors / 1 actor": (("ray", 2), ("ray", 1), 2),
        }.items():
            ratios.setdefault(name, []).append(rates[a][k] / rates[b][k])
    for name, values in ratios.items():
        print(f"ratio {name}: " + ", ".join(f"{v:.2f}" for v in values), flush=True)


def run_child(args: argparse.Namespace, mode: str, workers: int, parquet: str, reference: str,
              cli_args: list[str] | None = None) -> dict:
    command = [sys.executable, __file__, "--mode", mode, "--workers", str(workers), "--parquet", parquet,
               "--reference", reference, "--vocab-size", str(args.vocab_size)]
    if cli_args is not None:
        command += ["--cli-args", json.dumps(cli_args)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=3600).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_encode_corpus(args: argparse.Namespace, tmp: str, parquet: str, reference: str, megabytes: float) -> None:
    """``hf-bbpe encode-corpus`` here (1 process, every core) and on Ray (1 and 2 actors), the arms
    interleaved over ``--rounds``; every folder must be byte-identical."""
    from hf_bbpe import Tokenizer
    from hf_bbpe.token_shards import open_token_shards

    if not os.path.exists(reference):
        run_child(args, "local", 2, parquet, reference)  # counts and trains the tokenizer
    with open(reference, encoding="utf-8") as f:
        pairs = json.load(f)["merges"]
    tok = Tokenizer.from_merges({tuple(pair): 256 + i for i, pair in enumerate(pairs)}, pattern="gpt4",
                                special_tokens={"<|endoftext|>": 256 + len(pairs)})
    tok.save(os.path.join(tmp, "tokenizer"))
    inputs = sorted(os.path.join(parquet, name) for name in os.listdir(parquet))
    arms = (("1 process", ["--workers", "1"]), ("all cores", []), ("Ray, 1 actor", ["--ray", "local", "--workers", "1"]),
            ("Ray, 2 actors", ["--ray", "local", "--workers", "2"]))
    first: dict[str, bytes] | None = None
    rates: dict[str, list[float]] = {}
    for round_ in range(1, args.rounds + 1):
        for label, extra in arms:
            out = os.path.join(tmp, "shards")
            command = ["encode-corpus", *inputs, "--tokenizer", os.path.join(tmp, "tokenizer.model"), "--out", out,
                       "--shard-mb", "16", "--no-progress", "--quiet", *extra]
            r = run_child(args, "cli", 0, parquet, reference, cli_args=command)
            tokens = sum(len(shard.tokens) for shard in open_token_shards(out))
            contents = {name: open(os.path.join(out, name), "rb").read() for name in sorted(os.listdir(out))}
            first = first or contents
            assert contents == first, f"encode-corpus ({label}) wrote other bytes than the first run"
            subprocess.run(["rm", "-rf", out], check=True)
            rates.setdefault(label, []).append(megabytes / r["seconds"])
            print(f"[round {round_}] encode-corpus, {label:13}: {rates[label][-1]:5.2f} MB/s ({r['seconds']:.1f} s, "
                  f"{tokens:,} tokens with EOS, start-up included); driver peak RSS {r['peak_mb']:.0f} MB", flush=True)
    print("encode-corpus: every folder byte-identical", flush=True)
    for label, values in rates.items():
        print(f"ratio encode-corpus {label} / 1 process: "
              + ", ".join(f"{v / b:.2f}" for v, b in zip(values, rates["1 process"])), flush=True)


if __name__ == "__main__":
    main()
