"""Benchmarks of SuperBPE (Liu et al., "SuperBPE: Space travel for language models", COLM 2025):
the paper's released tokenizers in hf_bbpe against the ``tokenizers`` library that the paper runs
them with.

    python scripts/bench_superbpe.py [SECTION ...] [--corpus PATH] [--mb N] [--rounds R] [--threads T] [...]

Sections (each a function registered with ``@section``; add new ones the same way, with their
own options in ``add_options``): ``encode`` (the default), and the training sections
``train_speed``, ``bytes_per_token`` and ``model`` (see their docstrings), which train plain BPE
and SuperBPE here with ``Tokenizer.train(..., superwords=SuperwordConfig(...))``.

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
import json
import lzma
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
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
    from hf_bbpe.engine.chunking import patterns

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


# ----------------------------------------------------------------------- training (issue 30)
# Sections train_speed, bytes_per_token and model: SuperBPE trained here (Tokenizer.train with
# superwords=SuperwordConfig(...)) against plain BPE at the same vocabulary size.

BIG_CORPUS = Path("/tmp/hf_bbpe_train_corpus/corpus.txt")  # scripts/make_train_corpus.py's 1.1 GB corpus
CODE_PACKAGES = ("linux-source-6.1", "golang-1.19-src", "openjdk-17-source", "rust-src")
DOC_PACKAGES = ("python3.11-doc",)
MULTILINGUAL_PACKAGES = tuple(f"manpages-{lang}" for lang in
                              ("de", "fr", "ru", "pl", "es", "it", "nl", "pt-br", "uk", "ro", "cs", "ja", "zh"))
BLOCK_BYTES = 1 << 16  # the big corpus is read in blocks of about this size, cut at line ends


@section("train_speed")
def train_speed(args: argparse.Namespace) -> int:
    """Stage 1 (counting with the stage-1 pattern, merges to the transition) against stage 2
    (counting with the stage-2 pattern as an isolated Split, the chunks segmented by the stage-1
    merges, the superword merges: continued_merges's two steps) on the same corpus file: MB of corpus per second of wall time
    and per CPU second, best of --rounds, each round a fresh tokenizer."""
    from hf_bbpe import RegexTokenizer, SuperwordConfig
    from hf_bbpe.engine.training import api as training
    from hf_bbpe.engine.training.counting import ChunkCounts
    from hf_bbpe.engine.training.options import TrainingOptions

    path = Path(args.corpus)
    if path.suffix == ".xz":  # the counting threads read the file itself: decompress it once
        plain = Path(args.cache_dir) / (path.stem + ".plain")
        if not plain.exists():
            plain.parent.mkdir(parents=True, exist_ok=True)
            with lzma.open(path, "rb") as src, open(plain, "wb") as dst:
                dst.write(src.read())
        path = plain
    size = path.stat().st_size / 1e6
    vocab, transition = args.vocab_sizes[0], args.transitions[0]
    config = SuperwordConfig(transition=transition)
    stage1 = config.stage1_vocab_size(vocab)
    print(f"train_speed: {path} ({size:.1f} MB, documents are lines), vocab {vocab}, transition {stage1}, "
          f"{args.threads} threads", flush=True)
    best: dict[str, tuple[float, float]] = {}

    def timed(name: str, fn: Callable[[], object]) -> object:
        cpu, start = cpu_seconds(), time.perf_counter()
        out = fn()
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        if name not in best or seconds < best[name][0]:
            best[name] = (seconds, cpu)
        return out

    counted: dict[str, int] = {}
    options = TrainingOptions(num_workers=args.threads, progress=False)
    for _ in range(args.rounds):
        tok = RegexTokenizer("superbpe_stage1")
        counts = timed("stage 1: count", lambda: training.chunk_counts(tok, None, [str(path)], options))
        counted["stage 1"] = len(counts)
        timed("stage 1: merges", lambda: training.train_tokenizer_from_counts(tok, counts, stage1, options,
                                                                               consume=True))
        config.set_chunking(tok)
        counts = timed("stage 2: count", lambda: training.chunk_counts(tok, None, [str(path)], options))
        counted["stage 2"] = len(counts)
        assert isinstance(counts, ChunkCounts)  # the C counter with the stage-2 scanner
        # (training.continued_merges's two steps, timed apart)
        words = timed("stage 2: segment", lambda: training.segmented_chunks(tok, counts, args.threads))
        del counts
        timed("stage 2: merges", lambda: training.learn(
            tok, words, None, vocab - 256 - len(tok.merges), options, unique_bytes=True,
            consume=True, token_filter=config.allows))
        del words, tok
        gc.collect()
    for stage in ("stage 1", "stage 2"):
        parts = [name for name in best if name.startswith(stage)]
        best[stage] = (sum(best[p][0] for p in parts), sum(best[p][1] for p in parts))
    print(f"\ntrain_speed: MB of corpus per second of wall time (per CPU second of the process, all threads); "
          f"best of {args.rounds}")
    for name, (seconds, cpu) in best.items():
        print(f"  {name:28} {size / seconds:7.1f} MB/s  ({size / max(cpu, 1e-9):7.1f} MB/cpu-s)  "
              f"{seconds:6.2f} s wall, {cpu:6.2f} s CPU")
    print(f"  distinct chunks: stage 1 {counted['stage 1']:,}, stage 2 {counted['stage 2']:,}")
    ratio = best["stage 1"][1] / best["stage 2"][1]
    print(f"  stage 2 per MB against stage 1 (CPU): {ratio:.2f}x the speed (target >= 1)")
    return 0


@dataclass
class Domains:
    """Training documents, and held-out documents by domain (disjoint from them)."""

    train: list[str]
    held_out: dict[str, list[str]]


def big_corpus_blocks(path: Path) -> dict[str, list[tuple[int, int]]]:
    """``{package: [(start, end), ...]}``: the big corpus cut into blocks of about BLOCK_BYTES at
    line ends, package by package (its manifest.json gives each package's bytes, in order)."""
    manifest = json.loads((path.parent / "manifest.json").read_text(encoding="utf-8"))
    out: dict[str, list[tuple[int, int]]] = {}
    with open(path, "rb") as handle:
        at = 0
        for source in manifest["sources"]:
            end, blocks, start = at + source["bytes"], [], at
            while start < end:
                handle.seek(min(start + BLOCK_BYTES, end))
                handle.readline()  # to the next line end
                stop = min(handle.tell(), end) if start + BLOCK_BYTES < end else end
                blocks.append((start, stop))
                start = stop
            out[source["package"]] = blocks
            at = end
    return out


def read_block(handle, block: tuple[int, int]) -> str:
    handle.seek(block[0])
    return handle.read(block[1] - block[0]).decode("utf-8")


def domains(args: argparse.Namespace) -> Domains:
    """The training text and the held-out domains (the same every run).

    * the shared 49 MB mix (``--corpus``), documents at blank lines: even-numbered documents are
      training text, odd-numbered ones held out, sorted by bench_extension_model.language into
      English prose (fortunes and the Wikipedia article), code (CPython) and multilingual text
      (fortunes in German, Russian, Chinese...);
    * the 1.1 GB corpus of scripts/make_train_corpus.py (``--big-corpus``, if present), in blocks
      of 64 KB: every tenth block held out (Linux, Go, Java and Rust as code, the Python docs as
      English technical documentation, HTML and reST, man pages in thirteen languages as
      multilingual), the others sampled evenly for training, up to ``--train-mb`` in all.
    """
    from scripts.bench_extension_model import language

    docs = read_documents(Path(args.corpus), None)
    train = docs[::2]
    held: dict[str, list[str]] = {"English prose": [], "English docs": [], "code": [], "multilingual": []}
    kinds = {"en": "English prose", "code": "code", "de": "multilingual", "ru": "multilingual", "zh": "multilingual"}
    for doc in docs[1::2]:
        kind = kinds.get(language(doc))
        if kind:
            held[kind].append(doc)
    big = Path(args.big_corpus)
    if big.exists():
        blocks = big_corpus_blocks(big)
        total = sum(end - start for package in blocks.values() for start, end in package)
        have = sum(len(doc.encode("utf-8")) for doc in train)
        keep_every = max(1, round(total * 0.9 / max(1.0, args.train_mb * 1e6 - have)))
        with open(big, "rb") as handle:
            for package, package_blocks in blocks.items():
                kind = ("code" if package in CODE_PACKAGES else "English docs" if package in DOC_PACKAGES
                        else "multilingual" if package in MULTILINGUAL_PACKAGES else None)
                for k, block in enumerate(package_blocks):
                    if k % 10 == 9:
                        if kind:
                            held[kind].append(read_block(handle, block))
                    elif k % keep_every == 0:
                        train.append(read_block(handle, block))
    cap = args.held_out_mb * 1e6
    for kind, kind_docs in held.items():
        size = sum(len(doc.encode("utf-8")) for doc in kind_docs)
        held[kind] = kind_docs[:: max(1, round(size / cap))] if size > cap else kind_docs
    return Domains(train, {kind: docs for kind, docs in held.items() if docs})


def trained_tokenizers(args: argparse.Namespace, data: Domains, vocab_sizes: list[int]) -> dict[str, object]:
    """``{name: Tokenizer}``: plain BPE and SuperBPE at each transition, for each vocabulary size,
    the stage-1 pattern throughout (the paper's baseline), trained on ``data.train`` and cached
    in ``--cache-dir`` (as .model files, keyed by the training text's digest and the settings)."""
    import hashlib

    from hf_bbpe import RegexTokenizer, SuperwordConfig, Tokenizer

    digest = hashlib.sha256("\x00".join(data.train).encode("utf-8")).hexdigest()[:12]
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for vocab in vocab_sizes:
        for transition in [None, *args.transitions]:
            config = None if transition is None else SuperwordConfig(transition=transition)
            name = f"{vocab // 1024}K " + ("BPE" if config is None else f"SuperBPE t={config.stage1_vocab_size(vocab)}")
            path = cache / f"{digest}-{vocab}-{'bpe' if config is None else config.stage1_vocab_size(vocab)}.model"
            if path.exists():
                out[name] = Tokenizer.from_file(path)
                continue
            tok = RegexTokenizer("superbpe_stage1")
            cpu, start = cpu_seconds(), time.perf_counter()
            tok.train(data.train, vocab, superwords=config, num_workers=args.threads, progress=False)
            print(f"  trained {name} in {time.perf_counter() - start:.0f} s ({cpu_seconds() - cpu:.0f} CPU s)",
                  flush=True)
            tok.save(path.with_suffix(""))
            out[name] = tok
    return out


@section("bytes_per_token")
def bytes_per_token(args: argparse.Namespace) -> int:
    """Bytes per token of plain BPE and SuperBPE at equal vocabulary size on each held-out
    domain (and the paper's two released 200K tokenizers, trained on 10 GB of OLMo2 web text,
    for scale), as a markdown table."""
    from hf_bbpe.engine.training.superwords import count_superwords

    data = domains(args)
    train_mb = sum(len(doc.encode("utf-8")) for doc in data.train) / 1e6
    sizes = {kind: sum(len(doc.encode("utf-8")) for doc in docs) for kind, docs in data.held_out.items()}
    print(f"bytes_per_token: training text {train_mb:.0f} MB ({len(data.train):,} documents); held out: "
          + ", ".join(f"{kind} {size / 1e6:.1f} MB" for kind, size in sizes.items()), flush=True)
    toks = trained_tokenizers(args, data, args.vocab_sizes)
    rows: dict[str, dict[str, float]] = {}
    superwords: dict[str, int] = {}
    for name, tok in toks.items():
        rows[name] = {kind: sizes[kind] / sum(len(tok.encode_ordinary(doc)) for doc in docs)
                      for kind, docs in data.held_out.items()}
        superwords[name] = count_superwords(tok)
    if args.paper:
        from hf_bbpe.engine.chunking import patterns

        for name, folder, pattern in (("paper 200K BPE", BASELINE, patterns.SUPERBPE_STAGE1_SPLIT_PATTERN),
                                      ("paper 200K SuperBPE t=180K", SUPERBPE, patterns.SUPERBPE_STAGE2_SPLIT_PATTERN)):
            tok = paper_tokenizer(folder, pattern)
            rows[name] = {kind: sizes[kind] / sum(len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False))
                          for kind, docs in data.held_out.items()}
    kinds = list(data.held_out)
    print("\n| tokenizer | tokens spanning words | " + " | ".join(kinds) + " |")
    print("|---|---:|" + "---:|" * len(kinds))
    for name, row in rows.items():
        base = rows.get(name.split(" ")[0] + " BPE") or rows.get("paper 200K BPE")
        cells = [f"{row[k]:.2f}" + ("" if row is base else f" ({row[k] / base[k] - 1:+.0%})") for k in kinds]
        print(f"| {name} | {superwords.get(name, '')} | " + " | ".join(cells) + " |")
    print("\n(bytes of UTF-8 per token on the held-out text; in brackets, against plain BPE of the same vocabulary "
          "size)")
    return 0


@section("model")
def model(args: argparse.Namespace) -> int:
    """A tiny GPT-2 (transformers, from a config) trained from scratch on each tokenizer of
    ``--model-vocab``'s size, with equal compute: the same model (the vocabulary is the same size,
    so the same parameters), the same number of steps of the same number of tokens (equal FLOPs;
    SuperBPE's tokens hold more bytes, so its model reads more text), the same training documents
    in the same order for a seed (shuffled by it). Each model is scored in bits per byte on the
    held-out domains after --model-steps steps, and (SuperBPE's) also at the step where it had
    read as many bytes as plain BPE's in all its steps (equal bytes seen, less compute). Several
    seeds; mean ± sample standard deviation, and the difference to plain BPE paired by seed. The
    helpers (the LM head fused with its loss, scoring, the training loop) are
    bench_extension_model.py's."""
    import random
    import statistics

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from scripts import bench_extension_model as bem

    torch.set_num_threads(1)
    if args.bf16 is None:
        args.bf16 = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    data = domains(args)
    toks = {name: tok for name, tok in trained_tokenizers(args, data, [args.model_vocab]).items()}
    names = list(toks)
    eot = args.model_vocab  # <|endoftext|>, the same id for every tokenizer
    for tok in toks.values():
        tok.register_special_tokens({"<|endoftext|>": eot})
    opts = argparse.Namespace(layers=args.layers, width=args.width, seq_len=args.seq_len, untied=False,
                              tokens_per_step=args.tokens_per_step, bf16=args.bf16)
    held = {kind: [c for doc in docs for c in bem.chunks(doc, args.seq_len - 1)] for kind, docs in data.held_out.items()}
    held = {kind: pieces[:: max(1, len(pieces) * (args.seq_len // 2) // args.eval_bytes)] for kind, pieces in held.items()}
    for kind, pieces in held.items():
        while pieces and bem.n_bytes(pieces) > args.eval_bytes:
            pieces.pop()
    segments = [c for doc in data.train for c in bem.chunks(doc, 2048)]
    steps = args.model_steps
    total_tokens = steps * args.tokens_per_step
    print(f"model: {len(names)} tokenizers of {args.model_vocab} tokens, {args.seeds} seeds, GPT-2 {args.layers} "
          f"layers x {args.width}, {steps} steps of {args.tokens_per_step} tokens (context {args.seq_len}); held out "
          + ", ".join(f"{kind} {bem.n_bytes(p) / 1e3:.0f} KB" for kind, p in held.items()), flush=True)
    results: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    seen: dict[str, list[int]] = {name: [] for name in names}
    for seed in range(args.seeds):
        order = list(segments)
        random.Random(seed).shuffle(order)
        streams = {name: bem.token_stream(tok, order, eot, total_tokens) for name, tok in toks.items()}
        cumulative = {name: bem.token_bytes(toks[name], stream) for name, stream in streams.items()}
        target = int(cumulative[names[0]][-1])  # plain BPE's bytes in all its steps
        for name in names:
            tok = toks[name]
            held_out = {kind: bem.encode_held_out(tok, pieces, eot, args.seq_len, 8 * args.seq_len)
                        for kind, pieces in held.items()}
            per_step = cumulative[name][args.tokens_per_step - 1 :: args.tokens_per_step]
            equal_bytes = min(steps, int((per_step < target).sum()) + 1)
            torch.manual_seed(seed)  # the same initial weights for every tokenizer of a seed
            net = GPT2LMHeadModel(GPT2Config(
                n_layer=args.layers, n_embd=args.width, n_head=max(1, args.width // 32), n_positions=args.seq_len,
                vocab_size=args.model_vocab + 1, bos_token_id=eot, eos_token_id=eot, tie_word_embeddings=True,
                resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))

            def score() -> dict[str, float]:
                return {kind: bem.bits_per_byte(net, h) for kind, h in held_out.items()}

            cpu = cpu_seconds()
            at, _ = bem.train_steps(net, streams[name], steps, opts, args.model_lr, warmup=max(1, steps // 20),
                                    evaluate_at={equal_bytes: score, steps: score})
            seen[name].append(int(cumulative[name][-1]))
            for kind in held:
                results[name].setdefault(f"{kind}", []).append(at[steps][kind])
                results[name].setdefault(f"{kind} @ equal bytes", []).append(at[equal_bytes][kind])
            print(f"  seed {seed} {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in at[steps].items())
                  + f" bpb; equal bytes at step {equal_bytes}; {cpu_seconds() - cpu:.0f} CPU s", flush=True)
    base = names[0]
    print(f"\nbits per byte on held-out text after {steps} steps (equal FLOPs), mean ± sd over {args.seeds} seeds; "
          "in brackets the paired difference to plain BPE")
    kinds = list(held)
    print("| tokenizer | bytes seen | " + " | ".join(kinds) + " |")
    print("|---|---:|" + "---:|" * len(kinds))
    for name in names:
        cells = []
        for kind in kinds:
            cell = bem.summary(results[name][kind])
            if name != base:
                cell += " (" + bem.summary([a - b for a, b in zip(results[name][kind], results[base][kind])],
                                           signed=True) + ")"
            cells.append(cell)
        print(f"| {name} | {statistics.mean(seen[name]) / 1e6:.2f} MB | " + " | ".join(cells) + " |")
    print("\nSuperBPE at equal bytes seen (the step where it had read plain BPE's bytes; less compute):")
    for name in names[1:]:
        cells = [bem.summary(results[name][f"{kind} @ equal bytes"]) + " (" + bem.summary(
            [a - b for a, b in zip(results[name][f"{kind} @ equal bytes"], results[base][kind])], signed=True) + ")"
                 for kind in kinds]
        print(f"| {name} | {statistics.mean(seen[base]) / 1e6:.2f} MB | " + " | ".join(cells) + " |")
    return 0


# ------------------------------------------------------------------------------------ main


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sections", nargs="*", metavar="SECTION",
                        help=f"what to run, in order (default: encode; known: {', '.join(SECTIONS)})")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="text, or .xz text; documents at blank lines")
    parser.add_argument("--mb", type=float, default=None, help="about this many MB: every k-th document")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="threads of the batch calls")
    # training sections (train_speed, bytes_per_token, model)
    parser.add_argument("--big-corpus", default=str(BIG_CORPUS),
                        help="scripts/make_train_corpus.py's corpus.txt (with its manifest.json), if present")
    parser.add_argument("--train-mb", type=float, default=100, help="training text, MB (the mix's half, then the big "
                        "corpus sampled)")
    parser.add_argument("--held-out-mb", type=float, default=2, help="held-out text per domain, MB at most")
    parser.add_argument("--vocab-sizes", type=lambda t: [int(v) for v in t.split(",")], default=[32768, 131072])
    parser.add_argument("--transitions", type=lambda t: [float(v) if "." in v else int(v) for v in t.split(",")],
                        default=[0.5, 0.9], help="SuperBPE's transition points: shares of the vocabulary or sizes")
    parser.add_argument("--paper", action=argparse.BooleanOptionalAction, default=True,
                        help="bytes_per_token: also the paper's released 200K tokenizers")
    parser.add_argument("--cache-dir", default="/tmp/hf_bbpe_bench_superbpe", help="trained tokenizers are kept here")
    parser.add_argument("--model-vocab", type=int, default=32768, help="model: the vocabulary size compared")
    parser.add_argument("--model-steps", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--width", type=int, default=96)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--tokens-per-step", type=int, default=2048)
    parser.add_argument("--model-lr", type=float, default=2e-3)
    parser.add_argument("--eval-bytes", type=int, default=60_000, help="model: held-out bytes scored per domain")
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None,
                        help="model: train under bfloat16 autocast (default where the CPU has bf16 instructions)")


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
