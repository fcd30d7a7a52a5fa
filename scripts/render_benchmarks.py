"""Render docs/benchmarks.md's measured tables from the benchmarks' JSON (docs/bench-results/*.json,
written by ``scripts/bench_*.py --json``), with the CPU, the load and the date of each run, so that
no figure in that part of the page is typed by hand.

    python scripts/bench_train.py --patterns gpt4 --vocab-sizes 32768 \\
        --json docs/bench-results/bench_train-gpt4-32768.json
    python scripts/render_benchmarks.py           # rewrite the rendered part of docs/benchmarks.md
    python scripts/render_benchmarks.py --check   # exit 1 if the page differs from the JSON

Only the text between the BEGIN and END markers is rendered. tests/docs/test_benchmarks_page.py
runs the check in CI. A script without a renderer here is an error naming its file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "docs" / "bench-results"
BEGIN = "<!-- BEGIN RENDERED by scripts/render_benchmarks.py from docs/bench-results: do not edit below -->"
END = "<!-- END RENDERED -->"
MB = 1_000_000  # as bench_train prints MB


def run_line(record: dict[str, Any]) -> str:
    """Where and when: the date, CPU, CPUs, load average at the start and at the end, commit."""
    m = record["machine"]
    flags = f"; {', '.join(m['cpu_flags'])}" if m.get("cpu_flags") else ""
    commit = f", commit `{m['commit'][:7]}`" if m.get("commit") else ""
    return (f"Run {m['date'].replace('T', ' ').replace('+00:00', ' UTC')} on {m['cpu']} ({m['cpus']} CPUs{flags}), "
            f"load average {m['load_average'][0]:.2f} at the start and {record['load_average_end'][0]:.2f} at the "
            f"end{commit}, Python {m['python']}.")


def render_bench_train(record: dict[str, Any]) -> str:
    """bench_train: one table per configuration (trainer, wall, CPU, peak memory), the ratios and
    the merge checks."""
    r = record["results"]
    corpus = Path(r["corpus"]).name
    lines = []
    for config in r["configs"]:
        lines += [f"### Training: {config['pattern']}, {config['vocab_size']:,} tokens, {corpus} "
                  f"({r['bytes'] / MB:.1f} MB)", "",
                  f"{run_line(record)} {r['versions']}. Median of {r['rounds']} round(s); documents are lines.", "",
                  "| trainer | wall (s) | CPU (s) | peak memory (MB) |", "|---|---:|---:|---:|"]
        for name, t in config["trainers"].items():
            lines.append(f"| {name} | {t['wall']:.1f} | {t['cpu']:.1f} | {t['peak_mb']:.0f} |")
        lines.append("")
        for name, ratio in config["ratios"].items():
            lines.append(f"- {name}: {ratio['time']:.2f}x the wall time of the fastest peer ({ratio['fastest_peer']}), "
                         f"{ratio['cpu_vs_least_cpu_peer']:.2f}x the CPU time of the least, "
                         f"{ratio['memory']:.2f}x the peak memory of the smallest ({ratio['smallest_peer']}).")
        checks = [c for c in config.get("checks", []) if c["required"]]
        if checks:
            passed = sum(c["passed"] is True for c in checks)
            lines.append(f"- Merge checks: {passed} of {len(checks)} passed "
                         f"({'; '.join(sorted({c['check'] for c in checks}))}).")
        lines.append("")
    return "\n".join(lines)


def render_bench_load(record: dict[str, Any]) -> str:
    """bench_load: loading rank files, ours against tiktoken's Encoding, best of --repeat."""
    r = record["results"]
    recover = any("recover_wall_ms" in row for row in r["rows"])
    lines = ["### Loading rank files", "",
             f"{run_line(record)} tiktoken {r['tiktoken']}. Best of {r['rows'][0]['repeat'] if r['rows'] else 0} "
             "runs, alternating; ours builds the exact pair table of \"ranks\" mode, tiktoken its `Encoding`.", "",
             "| file | tokens | tiktoken wall (ms) | ours wall (ms) | ratio | tiktoken CPU (ms) | ours CPU (ms) | ratio |"
             + (" merge recovery, on first use (ms) |" if recover else ""),
             "|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if recover else "")]
    for row in r["rows"]:
        line = (f"| {row['file']} | {row['tokens']:,} | {row['tiktoken_wall_ms']:.0f} | {row['ours_wall_ms']:.0f} "
                f"| {row['ours_wall_ms'] / row['tiktoken_wall_ms']:.2f}x | {row['tiktoken_cpu_ms']:.0f} "
                f"| {row['ours_cpu_ms']:.0f} | {row['ours_cpu_ms'] / row['tiktoken_cpu_ms']:.2f}x |")
        if recover:
            line += f" {row['recover_wall_ms']:.0f} |" if "recover_wall_ms" in row else " |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def render_bench_count(record: dict[str, Any]) -> str:
    """bench_count: counting in C against Python's counting, and training's whole peak memory."""
    r = record["results"]
    names = {"python": "Python's counting (worker processes)", "c": "C counting (threads)",
             "train": f"train to {record['args']['vocab_size']:,} tokens (counting + merges)"}
    lines = [f"### Counting: {Path(r['corpus']).name}, {r['workers']} workers", "",
             f"{run_line(record)} Best of {r['rounds']} interleaved rounds (peak: the median); documents are "
             "lines. Peak: the process's peak RSS above its RSS before the call.", "",
             "| pattern | job | wall (s) | CPU (s) | MB per CPU second | peak (MB) | peak per distinct chunk (bytes) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for entry in r["patterns"]:
        for mode, m in entry["modes"].items():
            per_chunk = (f"{m['peak_mb'] * 1e6 / entry['distinct']:.0f}"
                         if entry["distinct"] and mode != "python" else "")
            lines.append(f"| {entry['pattern']} | {names.get(mode, mode)} | {m['wall']:.2f} | {m['cpu']:.2f} "
                         f"| {entry['mb'] / m['cpu']:.0f} | {m['peak_mb']:.0f} | {per_chunk} |")
    lines.append("")
    for entry in r["patterns"]:
        modes = entry["modes"]
        if "python" in modes and "c" in modes:
            lines.append(f"- {entry['pattern']}: {entry['distinct']:,} distinct chunks; C counting takes "
                         f"{modes['c']['cpu'] / modes['python']['cpu']:.2f}x the CPU time of Python's "
                         f"({modes['c']['wall'] / modes['python']['wall']:.2f}x the wall time).")
    return "\n".join(lines) + "\n"


def render_bench_surgery(record: dict[str, Any]) -> str:
    """bench_surgery: adding tokens to a checkpoint on disk, against transformers' load, resize, save."""
    r = record["results"]
    names = {"extend": "`surgery.extend_checkpoint` (on disk)",
             "hf": "transformers: `from_pretrained`, `resize_token_embeddings`, `save_pretrained`",
             "inmem": "`from_pretrained`, `surgery.add_tokens_and_resize`, `save_pretrained`"}
    ref = r["methods"]["extend"]
    lines = [f"### Model surgery: a {r['checkpoint_mb']:.0f} MB Llama checkpoint", "",
             f"{run_line(record)} {r['shards']} shard(s), {r['dtype']}, GPT-2's vocabulary; adds "
             f"{', '.join(f'`{t}`' for t in r['tokens'])} as special tokens. Each method in its own process; time "
             "and peak RSS growth around the operation only. `extend_checkpoint` fsyncs what it writes; "
             "`save_pretrained` does not, so its time leaves out the disk flush.", "",
             "| method | seconds | peak RSS growth (MB) | time / extend_checkpoint | memory / extend_checkpoint |",
             "|---|---:|---:|---:|---:|"]
    for mode, m in r["methods"].items():
        lines.append(f"| {names.get(mode, mode)} | {m['seconds']:.2f} | {m['rss_growth_mb']:.0f} "
                     f"| {m['seconds'] / ref['seconds']:.1f}x | {m['rss_growth_mb'] / max(ref['rss_growth_mb'], 1e-9):.1f}x |")
    return "\n".join(lines) + "\n"


def render_bench_merge_loop(record: dict[str, Any]) -> str:
    """bench_merge_loop: the merge loop alone, per tie-break: time and its own peak memory."""
    r = record["results"]
    lines = [f"### The merge loop: {Path(r['corpus']).name}, {r['pattern']} pattern, {r['vocab_size']:,} tokens", "",
             f"{run_line(record)} The chunks are counted once (documents end at blank lines); each rule "
             "then trains in a process of its own. Memory: the loop's own peak above the loaded counts.", "",
             "| tie-break | wall (s) | CPU (s) | the loop's peak (MB) | merges |", "|---|---:|---:|---:|---:|"]
    for row in r["rows"]:
        kernel = "" if row["kernel"].endswith("._merge_loop") else f" ({row['kernel']})"
        lines.append(f"| `{row['rule']}`{kernel} | {row['wall']:.2f} | {row['cpu']:.2f} | {row['loop_mb']:.1f} "
                     f"| {row['merges']:,} |")
    return "\n".join(lines) + "\n"


def render_bench_extension(record: dict[str, Any]) -> str:
    """bench_extension: GPT-2 extended per domain; bytes per token on held-out text, before and after."""
    r = record["results"]
    lines = ["### Vocabulary extension: bytes per token", "",
             f"{run_line(record)} GPT-2 extended on half of each domain's documents of "
             f"{Path(r['corpus']).name}; bytes per token (higher is better) on the other half, and on held-out "
             "general English that no extension sees.", "",
             "| domain | trained on (MB) | new merges | time (s) | held-out domain text | held-out general English |",
             "|---|---:|---:|---:|---:|---:|"]
    for row in r["rows"]:
        lines.append(f"| {row['domain']} | {row['trained_mb']:.1f} | {row['new_merges']:,} | {row['seconds']:.1f} "
                     f"| {row['domain_before']:.3f} -> {row['domain_after']:.3f} "
                     f"({row['domain_after'] / row['domain_before']:.2f}x) | {row['general_before']:.3f} -> "
                     f"{row['general_after']:.3f} ({row['general_after'] / row['general_before']:.3f}x) |")
    return "\n".join(lines) + "\n"


def render_bench_hf_tokenizer(record: dict[str, Any]) -> str:
    """bench_hf_tokenizer: BBPETokenizer against the engine, the fast class and GPT2Tokenizer."""
    r = record["results"]
    lines = ["### transformers: BBPETokenizer", "",
             f"{run_line(record)} GPT-2's vocabulary on {r['documents']:,} documents ({r['mb']:.1f} MB) of "
             f"{Path(r['corpus']).name}; batches of {r['batch']}; the median of interleaved rounds. "
             f"Every contender gave the same ids: {'yes' if r['same_ids'] else 'NO'}.", "",
             "| call | MB per CPU second | MB/s (wall) |", "|---|---:|---:|"]
    for name, row in r["rows"].items():
        lines.append(f"| {name} | {row['cpu_mb_s']:.2f} | {row['mb_s']:.2f} |")
    first = list(r["rows"].values())[:5]  # this interpreter's: engine, ours per document and batched, the fast class's
    if len(first) == 5:
        engine, single, batched, fast_single, fast_batched = (row["cpu_mb_s"] for row in first)
        lines += ["", f"- `BBPETokenizer` per document: {single / engine:.2f}x the engine's MB per CPU second "
                      f"(batched: {batched / engine:.2f}x); the script requires at least 0.5x per document.",
                  f"- `BBPETokenizer` against the fast class: {single / fast_single:.0f}x per document, "
                  f"{batched / fast_batched:.0f}x in batches."]
    return "\n".join(lines) + "\n"


def render_bench_encode(record: dict[str, Any]) -> str:
    """bench_encode: MB of UTF-8 per CPU second per call form; hf_bbpe against the best exact peer
    of the run (ids equal to tiktoken's on every document), as the typed encoding table reads."""
    r = record["results"]
    systems = r["systems"]
    peers = [n for n, s in systems.items() if n != "hf_bbpe" and s["ids_equal"]]
    scanners = "SSE2" if r["sse2"] else "AVX-512 where the CPU has it"
    lines = [f"### Encoding: {r['encoding']}, {scanners}", "",
             f"{run_line(record)} The first {r['mb']:.1f} MB of {Path(r['corpus']).name} ({r['documents']:,} "
             f"documents); best of {r['rounds']} interleaved rounds. MB of UTF-8 per CPU second; in the "
             "one-core columns every thread is pinned to one CPU. Each cell: hf_bbpe, then (hf_bbpe / the best "
             "exact peer, that peer and its figure). Exact peers in this run: "
             + ", ".join(f"{n} {systems[n]['version']}" for n in peers) + ".", "",
             "| call | hf_bbpe | best exact peer |", "|---|---:|---|"]
    for column, info in r["columns"].items():
        ours = systems.get("hf_bbpe", {}).get("least_cpu", {}).get(column)
        if not ours:
            continue
        rates = {n: info["mb"] / systems[n]["least_cpu"][column] for n in peers if systems[n]["least_cpu"].get(column)}
        mine = info["mb"] / ours
        if rates:
            top = max(rates, key=rates.get)
            cell = f"{mine / rates[top]:.2f}x {top} {rates[top]:.0f}"
        else:
            cell = "no exact peer ran"
        lines.append(f"| {info['label']} | {mine:.0f} | {cell} |")
    return "\n".join(lines) + "\n"


def render_bench_decode(record: dict[str, Any]) -> str:
    """bench_decode: MB of text per second (wall) per call form, every system; hf_bbpe's engine and
    BBPETokenizer against the best peer of each column whose output equals tiktoken's."""
    r = record["results"]
    systems, columns = r["systems"], r["columns"]
    shown = [c for c in columns if any(c in s["best_wall"] for s in systems.values())]
    lines = [f"### Decoding: {r['encoding']}", "",
             f"{run_line(record)} The first {r['mb']:.1f} MB of {Path(r['corpus']).name} ({r['documents']:,} "
             f"documents, {r['ids']:,} ids), encoded by tiktoken; best of {r['rounds']} interleaved rounds. MB of "
             "text per second (wall); single-thread columns pinned to one CPU. Every output was checked against "
             "tiktoken's on every document (a system that differs is marked and is no peer)."
             + (f" Memory: {r['memory']}." if r.get("memory") else "")
             + "".join(f" Not run: {note}." for note in r.get("skipped", [])), "",
             "| system | " + " | ".join(columns[c]["label"] for c in shown) + " |",
             "|---|" + "---:|" * len(shown)]
    for name, s in systems.items():
        cells = [f"{columns[c]['mb'] / s['best_wall'][c]:.1f}" if c in s["best_wall"] else "-" for c in shown]
        mark = "" if s["output_equal"] else " (output DIFFERS)"
        lines.append(f"| {name} {s['version']}{mark} | " + " | ".join(cells) + " |")
    lines.append("")
    for column, ratio in r["ratios"].items():
        ours_cpu, peer_cpu = systems[ratio["ours"]]["cpu"].get(column), systems[ratio["peer"]]["cpu"].get(column)
        by_cpu = f"; by CPU seconds {peer_cpu / ours_cpu:.2f}x" if ours_cpu and peer_cpu else ""
        lines.append(f"- {columns[column]['label']}: {ratio['ours']} {ratio['ratio']:.2f}x {ratio['peer']} "
                     f"({ratio['mb_s']:.1f} vs {ratio['peer_mb_s']:.1f} MB/s{by_cpu}).")
    return "\n".join(lines) + "\n"


def render_bench_parity(record: dict[str, Any]) -> str:
    """bench_parity: plain and parity-aware BPE per size: held-out bytes per token per language, Gini,
    global bytes per token, the tokens of parallel held-out messages, and the cost against
    ParityBpeTrainer, for each way of balancing."""
    r = record["results"]
    names, parallel = r["languages"], r.get("parallel")
    label = {"plain_bpe": "plain BPE", "hf_bbpe_parity": "parity-aware, ratios (hf_bbpe)",
             "parity_bpe_trainer": "ParityBpeTrainer, ratios", "hf_bbpe_parity_dev": "parity-aware, dev set (hf_bbpe)",
             "parity_bpe_trainer_dev": "ParityBpeTrainer, dev set"}
    corpus = Path(r["corpus"]).name + ("" if r.get("mb") is None else f", first {r['mb']} MB")
    balance = (f"Balanced by target ratios ({r['ratio']}) and by a parallel dev set ({parallel['dev']} of the "
               f"{parallel['messages']} messages of {parallel['source']} that every language translates; the other "
               f"{parallel['held_out']} are the parallel held-out set)." if parallel else
               f"Balanced by target ratios ({r['ratio']}: no parallel dev set installs here).")
    lines = []
    for size in r["sizes"]:
        lines += [f"### Parity-aware BPE: {size['vocab_size']:,} tokens, fortunes of {corpus}", "",
                  f"{run_line(record)} {balance} Held-out bytes per token per language (higher is better), their "
                  "Gini across languages (lower is fairer), global bytes per token, and each trainer's time and peak "
                  "memory in a process of its own.",
                  "", "| trainer | " + " | ".join(names) + " | Gini | global | wall (s) | peak (MB) |",
                  "|---|" + "---:|" * (len(names) + 4)]
        for key, t in size["trainers"].items():
            cells = " | ".join(f"{t['languages'][n]['bytes_per_token']:.2f}" for n in names)
            lines.append(f"| {label[key]} | {cells} | {t['gini']:.4f} | {t['bytes_per_token']:.3f} | {t['wall']:.1f} "
                         f"| {t['peak_mb']:.0f} |")
        if parallel:
            lines += ["", f"Tokens for the {parallel['held_out']} parallel held-out messages (the same content in "
                          "each language; fewer is better, and equal is fair):", "",
                      "| trainer | " + " | ".join(names) + " | Gini |", "|---|" + "---:|" * (len(names) + 1)]
            for key, t in size["trainers"].items():
                if key.startswith("parity_bpe_trainer"):
                    continue
                cells = " | ".join(f"{t['parallel']['tokens'][n]:,}" for n in names)
                lines.append(f"| {label[key]} | {cells} | {t['parallel']['gini']:.4f} |")
        lines.append("")
        for how, versus in size["balances"].items():
            lines.append(f"- {'Dev set' if how == 'dev' else 'Ratios'}: merges identical to ParityBpeTrainer's: "
                         f"{'yes' if versus['identical_merges'] else 'NO'}; hf_bbpe / ParityBpeTrainer: time "
                         f"{versus['time_ratio']:.2f}x, peak memory {versus['memory_ratio']:.2f}x.")
        lines.append("")
    return "\n".join(lines)


RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {"bench_encode": render_bench_encode,
                                                         "bench_decode": render_bench_decode,
                                                         "bench_extension": render_bench_extension,
                                                         "bench_hf_tokenizer": render_bench_hf_tokenizer,
                                                         "bench_merge_loop": render_bench_merge_loop,
                                                         "bench_parity": render_bench_parity,
                                                         "bench_surgery": render_bench_surgery,
    "bench_count": render_bench_count, "bench_load": render_bench_load, "bench_train": render_bench_train}


def rendered() -> str:
    """Every JSON file's section, in file-name order."""
    parts = []
    for path in sorted(RESULTS.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        renderer = RENDERERS.get(record.get("script"))
        if renderer is None:
            raise SystemExit(f"{path}: no renderer for script {record.get('script')!r} in scripts/render_benchmarks.py")
        parts.append(renderer(record) + f"\n(From `docs/bench-results/{path.name}`.)\n")
    return "\n".join(parts) if parts else "No run recorded yet.\n"


def page_with(text: str, body: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{PAGE}: the markers {BEGIN!r} and {END!r} are missing")
    head, rest = text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n\n{body}\n{END}{rest.split(END, 1)[1]}"


def main() -> int:
    text = PAGE.read_text(encoding="utf-8")
    new = page_with(text, rendered())
    if sys.argv[1:] == ["--check"]:
        if new != text:
            print(f"{PAGE} differs from {RESULTS}: run python scripts/render_benchmarks.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        sys.path.insert(0, str(ROOT))
        from hf_bbpe.engine.files.atomic_write import write_text_atomic
        write_text_atomic(PAGE, new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
