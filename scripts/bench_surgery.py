#!/usr/bin/env python
"""Benchmark surgery.extend_checkpoint against the usual load + resize + save, in the same run.

Builds a Llama checkpoint of a few hundred MB (GPT-2 vocabulary from tests/data, untied head),
then runs each method in its own subprocess so that peak RSS (ru_maxrss) is clean:

* ``extend``: ``surgery.extend_checkpoint`` (reads and rewrites only the embedding and head);
* ``hf``: ``from_pretrained`` + ``add_special_tokens`` + ``resize_token_embeddings`` (its default
  ``mean_resizing=True``) + ``save_pretrained``;
* ``inmem``: ``from_pretrained`` + ``surgery.add_tokens_and_resize`` + ``save_pretrained``.

Time and peak-RSS growth are measured around the operation only (after imports and loading the
tokenizer; the high-water mark is reset there), and reported with ratios against ``extend``.
``extend`` fsyncs what it writes (it renames a finished folder into place); ``save_pretrained``
does not, so its time excludes the disk flush. The default checkpoint is sharded (100 MB shards)
with the embedding and head about a third of it; ``--shard-size 10GB`` gives one file, where
``extend`` has to rewrite everything.

    python scripts/bench_surgery.py [--hidden 256 --layers 16 --intermediate 4096 --shard-size 100MB] [--json OUT]

``--json OUT`` also writes the figures with the machine, load and date (scripts/bench_results.py),
from which scripts/render_benchmarks.py renders docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GPT2_DATA = REPO / "tests" / "data" / "gpt2"
TOKENS = ["<|im_start|>", "<|im_end|>", "<|pad|>"]


def build_checkpoint(folder: Path, hidden: int, layers: int, intermediate: int, dtype: str, shard_size: str) -> int:
    import torch
    from transformers import GPT2TokenizerFast, LlamaConfig, LlamaForCausalLM

    tok_dir = folder / "tok"
    tok_dir.mkdir(parents=True)
    shutil.copy(GPT2_DATA / "encoder.json", tok_dir / "vocab.json")
    shutil.copy(GPT2_DATA / "vocab.bpe", tok_dir / "merges.txt")
    tokenizer = GPT2TokenizerFast.from_pretrained(str(tok_dir))
    config = LlamaConfig(
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        num_key_value_heads=max(1, hidden // 64),
        vocab_size=len(tokenizer),
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    with torch.no_grad():
        model = LlamaForCausalLM(config).to(getattr(torch, dtype))
    ckpt = folder / "ckpt"
    model.save_pretrained(ckpt, max_shard_size=shard_size)
    tokenizer.save_pretrained(ckpt)
    return sum(p.stat().st_size for p in ckpt.glob("*.safetensors"))


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def reset_peak_rss() -> int:
    """Reset the peak-RSS high-water mark (Linux) and return the current RSS in KiB.

    ru_maxrss never goes down, so an earlier transient peak (loading the tokenizer) would hide the
    operation's own; writing 5 to /proc/self/clear_refs resets VmHWM, the same counter.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_kib("VmRSS")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def peak_rss() -> int:
    try:
        return _status_kib("VmHWM")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(mode: str, ckpt: str, out: str) -> None:
    """Run one method; print {"seconds", "rss_growth_mb", "rss_base_mb"} as JSON."""
    import transformers.models.llama.modeling_llama  # noqa: F401  (imported before the baseline)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hf_bbpe import surgery

    tokenizer = AutoTokenizer.from_pretrained(ckpt)
    base = reset_peak_rss()
    start = time.perf_counter()
    if mode == "extend":
        surgery.extend_checkpoint(ckpt, out, tokenizer, TOKENS, special=True, init="mean")
    else:
        model = AutoModelForCausalLM.from_pretrained(ckpt)
        if mode == "hf":
            tokenizer.add_special_tokens({"additional_special_tokens": TOKENS})
            model.resize_token_embeddings(len(tokenizer))
        else:
            surgery.add_tokens_and_resize(model, tokenizer, TOKENS, special=True, init="mean")
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    seconds = time.perf_counter() - start
    peak = peak_rss()
    print(json.dumps({"seconds": seconds, "rss_growth_mb": (peak - base) / 1024, "rss_base_mb": base / 1024}))


def run(mode: str, ckpt: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(ckpt), str(out)], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--intermediate", type=int, default=4096)
    parser.add_argument("--shard-size", default="100MB", help="max_shard_size of the checkpoint (default 100MB)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--workdir", type=Path, help="where to build (default: a temp folder, removed)")
    parser.add_argument("--json", help="also write the figures here, with the machine, load and date")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "CKPT", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_results import machine, write_results

    started = machine()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_surgery."))
    try:
        size = build_checkpoint(work, args.hidden, args.layers, args.intermediate, args.dtype, args.shard_size)
        vocab_rows = 50257
        bytes_per = {"float32": 4, "bfloat16": 2, "float16": 2}[args.dtype]
        matrices = 2 * vocab_rows * args.hidden * bytes_per
        shards = len(list((work / "ckpt").glob("*.safetensors")))
        print(f"checkpoint: {size / 1e6:.0f} MB in {shards} shard(s) ({args.dtype})")
        print(f"embedding + head: {matrices / 1e6:.0f} MB")
        results = {mode: run(mode, work / "ckpt", work / f"out-{mode}") for mode in ("extend", "hf", "inmem")}
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    ref = results["extend"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (times are noisy on a busy machine)")
    print(f"{'method':<8} {'seconds':>8} {'peak RSS growth MB':>19} {'time / extend':>14} {'RSS / extend':>13}")
    for mode, r in results.items():
        print(
            f"{mode:<8} {r['seconds']:>8.2f} {r['rss_growth_mb']:>19.0f} "
            f"{r['seconds'] / ref['seconds']:>13.1f}x {r['rss_growth_mb'] / max(ref['rss_growth_mb'], 1e-9):>12.1f}x"
        )
    if args.json:
        write_results(args.json, "bench_surgery", vars(args), {"checkpoint_mb": size / 1e6, "shards": shards,
                                                               "dtype": args.dtype, "tokens": TOKENS, "methods": results}, started)


if __name__ == "__main__":
    main()
