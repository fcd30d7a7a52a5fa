"""Benchmarks of SuperBPE (Liu et al., "SuperBPE: Space travel for language models", COLM 2025):
the paper's released tokenizers in hf_bbpe against the ``tokenizers`` library that the paper runs
them with.

    python scripts/bench_superbpe.py [SECTION ...] [--corpus PATH] [--mb N] [--rounds R] [--threads T]

Sections (each a function registered with ``@section``; add new ones the same way, with their
own options in ``add_options``): ``encode`` (the default).

``encode``: the paper's t = 180K SuperBPE tokenizer (200K tokens; its first 179,757 merges are
plain BPE, the rest superwords, run with the stage-2 pattern as an isolated Split) and its
plain-BPE 200K baseline (the stage-1 pattern), both from the shared data folder, each loaded by
``conversion.load`` (which knows them by sha256) and by ``tokenizers`` as the shared README
builds them. On the corpus (default: the shared 49 MB mix of fortunes in nine languages, CPython's
sources and a Wikipedia article; ``--mb N`` takes every k-th document for about N MB), cut into
documents at blank lines, every system in this one process, for ``--rounds`` interleaved rounds
(the order rotates; every tokenizer is loaded afresh before each round and its caches are emptied
before each call form, hf_bbpe's with ``clear_cache()``, ``tokenizers``' with its BPE model's
``_clear_cache()``: every measurement is a first pass over text the caches have not seen, as in
a pretraining run; loading is not timed):

1. one call per document: hf_bbpe's ``encode_ordinary`` (one thread), ``tokenizers``' ``encode``;
2. the batch of all documents: hf_bbpe's ``encode_batch(num_threads=T)``, ``tokenizers``'
   ``encode_batch`` (its Rayon pool of ``RAYON_NUM_THREADS`` = T threads).

Every system's ids are checked against ``tokenizers``' on every document in the first round (exit
status 1 if hf_bbpe's differ). Throughput is MB of UTF-8 per second of wall time, best round,
and MB per CPU second of the process in that round (all its threads: on a shared machine, where
wall time includes waiting for a core, the better measure of the work a call does). The ratios
(hf_bbpe's SuperBPE over its plain BPE, hf_bbpe over ``tokenizers``) are what to compare.
"""

from __future__ import annotations

import argparse
import gc
import lzma
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.support.superbpe import paper_tokenizer  # noqa: E402  (the tests' reference: the paper's construction)

DATA = Path("/work/shared/data")
DEFAULT_CORPUS = DATA / "bench" / "mix-49mb.txt.xz"
SUPERBPE = DATA / "superbpe" / "olmo2_p99_truncate_10G_180K_extend_200K_mw4_colon"
BASELINE = DATA / "superbpe" / "olmo2_p99_truncate_pretok_10G_200K"

SECTIONS: dict[str, Callable[[argparse.Namespace], int]] = {}
"""Section name -> function(args) returning an exit status; run in the order given."""


def section(name: str) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Register a benchmark section under ``name``."""
    def register(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        SECTIONS[name] = fn
        return fn
    return register


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def read_documents(path: Path, mb: float | None) -> list[str]:
    """The corpus cut at blank lines; with ``mb``, every k-th document for about that many MB."""
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        docs = [doc for doc in handle.read().split("\n\n") if doc]
    if mb:
        total = sum(len(doc.encode("utf-8")) for doc in docs) / 1e6
        docs = docs[:: max(1, round(total / mb))]
    return docs


# ------------------------------------------------------------------------------------ encode


@section("encode")
def encode(args: argparse.Namespace) -> int:
    import conversion
    import tokenizers
    from hf_bbpe import patterns

    docs = read_documents(Path(args.corpus), args.mb)
    size = sum(len(doc.encode("utf-8")) for doc in docs) / 1e6
    print(f"encode: {len(docs):,} documents, {size:.1f} MB of UTF-8 ({args.corpus}); {args.threads} threads for "
          f"batches; window scanners: {'AVX-512' if patterns._native.wide_windows() else 'SSE2'}; "
          f"tokenizers {tokenizers.__version__}", flush=True)
    folders = {"superbpe": (SUPERBPE, patterns.SUPERBPE_STAGE2_SPLIT_PATTERN),
               "bpe": (BASELINE, patterns.SUPERBPE_STAGE1_SPLIT_PATTERN)}

    def load() -> dict[str, dict[str, Callable[[], list[list[int]]]]]:
        """system -> {call form -> a call over every document}, all loaded afresh."""
        systems = {}
        for vocab, (folder, pattern) in folders.items():
            ours = conversion.load(folder)
            theirs = paper_tokenizer(folder, pattern)
            systems[f"hf_bbpe {vocab}"] = {
                "per doc": lambda tok=ours: [tok.encode_ordinary(doc) for doc in docs],
                "batch": lambda tok=ours: tok.encode_batch(docs, num_threads=args.threads),
                "clear": ours.clear_cache}
            systems[f"tokenizers {vocab}"] = {
                "per doc": lambda tok=theirs: [tok.encode(doc, add_special_tokens=False).ids for doc in docs],
                "batch": lambda tok=theirs: [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)],
                "clear": theirs.model._clear_cache}
        return systems

    best: dict[tuple[str, str], tuple[float, float]] = {}  # (system, form) -> (seconds, cpu seconds)
    status = 0
    for round_ in range(args.rounds):
        systems = load()
        gc.collect()
        names = list(systems)
        order = names[round_ % len(names):] + names[: round_ % len(names)]
        reference: dict[str, list[list[int]]] = {}
        for name in order:
            for form in ("per doc", "batch"):
                call = systems[name][form]
                systems[name]["clear"]()  # every call form starts from empty caches
                cpu, start = cpu_seconds(), time.perf_counter()
                ids = call()
                seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
                if (name, form) not in best or seconds < best[name, form][0]:
                    best[name, form] = (seconds, cpu)
                if round_ == 0:
                    vocab = name.split()[-1]
                    expected = reference.setdefault(vocab, ids) if name.startswith("tokenizers") else None
                    if expected is None:
                        reference.setdefault(f"{vocab} ours {form}", ids)
                    elif ids != expected:
                        print(f"  {name} {form}: ids differ from another call form", flush=True)
        if round_ == 0:
            for vocab in folders:
                theirs = reference[vocab]
                for form in ("per doc", "batch"):
                    ours = reference[f"{vocab} ours {form}"]
                    differ = sum(a != b for a, b in zip(ours, theirs)) + abs(len(ours) - len(theirs))
                    print(f"  parity, {vocab} ({form}): {differ} of {len(docs):,} documents differ from tokenizers")
                    status |= differ > 0
        del systems
        print(f"  round {round_ + 1}/{args.rounds} done", flush=True)

    def mbps(name: str, form: str) -> float:
        return size / best[name, form][0]

    def per_cpu(name: str, form: str) -> float:
        return size / max(best[name, form][1], 1e-9)

    print(f"\nencode: MB/s of wall time (best of {args.rounds} rounds), and MB per CPU second of the process in "
          "that round (all threads)")
    print(f"{'':22}{'per doc':>24}{'batch, ' + str(args.threads) + ' threads':>26}")
    for name in dict.fromkeys(name for name, _ in best):
        cells = [f"{mbps(name, form):8.2f} ({per_cpu(name, form):6.2f}/cpu-s)" for form in ("per doc", "batch")]
        print(f"{name:22}{cells[0]:>24}{cells[1]:>26}")
    print("\nratios (wall; per CPU second in brackets)")

    def ratio(a: tuple[str, str], b: tuple[str, str]) -> str:
        return f"{mbps(*a) / mbps(*b):.2f} ({per_cpu(*a) / per_cpu(*b):.2f})"

    for form in ("per doc", "batch"):
        print(f"  hf_bbpe superbpe / hf_bbpe bpe, {form}: "
              f"{ratio(('hf_bbpe superbpe', form), ('hf_bbpe bpe', form))}  (target >= 0.5)")
    for form in ("per doc", "batch"):
        print(f"  hf_bbpe superbpe {form} / tokenizers superbpe batch: "
              f"{ratio(('hf_bbpe superbpe', form), ('tokenizers superbpe', 'batch'))}  (target >= 3)")
    print(f"  hf_bbpe bpe batch / tokenizers bpe batch: {ratio(('hf_bbpe bpe', 'batch'), ('tokenizers bpe', 'batch'))}")
    return status


# ------------------------------------------------------------------------------------ main


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sections", nargs="*", metavar="SECTION",
                        help=f"what to run, in order (default: encode; known: {', '.join(SECTIONS)})")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="text, or .xz text; documents at blank lines")
    parser.add_argument("--mb", type=float, default=None, help="about this many MB: every k-th document")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="threads of the batch calls")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_options(parser)
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # before tokenizers starts its pool
    unknown = [name for name in args.sections if name not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    status = 0
    for name in args.sections or ["encode"]:
        status |= SECTIONS[name](args)
    return status


if __name__ == "__main__":
    sys.exit(main())
