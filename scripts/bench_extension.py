"""What vocabulary extension buys: GPT-2's vocab extended with code and with non-English text.

For each domain, the corpus's documents of that domain are split in two halves (even and odd
documents): GPT-2 is extended on one half, and bytes per token are measured on the other
(held-out domain text) and on held-out general English text (the Wikipedia article at the end
of the corpus, which no extension sees), before and after. Extension must not make general text
worse: every old merge is kept and new merges only apply on top of them.

    python scripts/bench_extension.py [--corpus mix-49mb.txt.xz] [--gpt2-dir DIR] [--new-merges 4000] [--json OUT]

``--json OUT`` also writes the rows with the machine, load and date (scripts/bench_results.py),
from which scripts/render_benchmarks.py renders docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import lzma
import sys
import time
from pathlib import Path

import conversion
from hf_bbpe import Tokenizer

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
CODE_HINTS = ("def ", "import ", "return ", "self.", "class ")


def read_corpus(path: Path) -> str:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return handle.read()


def split_domains(text: str) -> dict[str, list[str]]:
    """Documents by domain: Python code, Russian + Chinese fortunes, general English prose."""
    article = text.find("Taylor Alison Swift")
    domains: dict[str, list[str]] = {"code": [], "non-English": []}
    for doc in text[:article].split("\n\n"):
        letters = sum(ch.isalpha() for ch in doc) or 1
        foreign = sum(1 for ch in doc if "\u0400" <= ch <= "\u04ff" or "\u4e00" <= ch <= "\u9fff")
        if foreign / letters > 0.3:
            domains["non-English"].append(doc)
        elif "%" not in doc and sum(hint in doc for hint in CODE_HINTS) >= 2:
            domains["code"].append(doc)
    domains["general"] = text[article:].split("\n\n")
    return domains


def bytes_per_token(tok: Tokenizer, docs: list[str]) -> float:
    text = "\n\n".join(docs)
    return len(text.encode("utf-8")) / len(tok.encode_ordinary(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=SHARED / "bench" / "mix-49mb.txt.xz")
    parser.add_argument("--gpt2-dir", type=Path, default=SHARED / "gpt2", help="holds encoder.json and vocab.bpe")
    parser.add_argument("--new-merges", type=int, default=4000)
    parser.add_argument("--max-train-mb", type=float, default=8.0, help="cap on each domain's training text")
    parser.add_argument("--json", help="also write the rows here, with the machine, load and date")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_results import machine, write_results

    started, records = machine(), []

    gpt2 = conversion.from_gpt2_files(args.gpt2_dir / "encoder.json", args.gpt2_dir / "vocab.bpe")
    domains = split_domains(read_corpus(args.corpus))
    general = domains["general"]
    rows = []
    for domain in ("code", "non-English"):
        docs = domains[domain]
        train, held_out = docs[::2], docs[1::2]
        budget, kept = args.max_train_mb * 1e6, []
        for doc in train:
            budget -= len(doc)
            if budget < 0:
                break
            kept.append(doc)
        start = time.perf_counter()
        extended = gpt2.extend(kept, args.new_merges, progress=False)
        seconds = time.perf_counter() - start
        added = len(extended.merges) - len(gpt2.merges)
        before_domain, after_domain = bytes_per_token(gpt2, held_out), bytes_per_token(extended, held_out)
        before_general, after_general = bytes_per_token(gpt2, general), bytes_per_token(extended, general)
        records.append({"domain": domain, "trained_mb": sum(map(len, kept)) / 1e6, "new_merges": added,
                        "seconds": seconds, "domain_before": before_domain, "domain_after": after_domain,
                        "general_before": before_general, "general_after": after_general})
        rows.append(
            f"| {domain} | {sum(map(len, kept)) / 1e6:.1f} MB | {added} | {seconds:.1f} s | "
            f"{before_domain:.3f} -> {after_domain:.3f} ({after_domain / before_domain:.2f}x) | "
            f"{before_general:.3f} -> {after_general:.3f} ({after_general / before_general:.3f}x) |"
        )
        assert after_general >= before_general, "extension made general text worse"
    print("GPT-2 vocabulary extended; bytes per token on held-out text (higher is better)\n")
    print("| domain | trained on | new merges | time | held-out domain text | held-out general English |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.json:
        write_results(args.json, "bench_extension", {k: str(v) for k, v in vars(args).items()},
                      {"corpus": str(args.corpus), "rows": records}, started)


if __name__ == "__main__":
    main()
