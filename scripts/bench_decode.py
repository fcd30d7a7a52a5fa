"""Benchmark decoding with cl100k_base (or o200k_base): hf_bbpe against tiktoken and the native peers.

    python scripts/bench_decode.py [CORPUS] [--encoding cl100k_base] [--mb 12] [--rounds 3] [--threads 2]
                                   [--stream-mb 2] [--skip NAME ...] [--json FILE]

The corpus (the shared 49 MB mix by default; its first ``--mb`` MB, cut into documents at blank
lines) is encoded once by tiktoken; every system then decodes the same ids. Figures are MB of
UTF-8 text per second of wall time, best of ``--rounds`` interleaved rounds (the order of the
systems turns each round); the single-thread columns run with the process pinned to one CPU,
the batch columns on every CPU (``--threads`` threads where a system takes a number). Freed
memory is kept mapped for reuse, for every system alike, so that the figures are the decoders' and
not the page faults of a fresh 48 MB str (``--page-faults`` keeps glibc's defaults; see
``keep_freed_memory``). Columns:

- ``long``: one list of every id of the corpus (about 4 million for 12 MB of cl100k) to one str;
- ``long_numpy``: the same ids as a uint32 numpy array (what ``encode_to_numpy`` returns), for
  the systems that take one without a list;
- ``doc``: one call per document, ids in a list;
- ``batch``: one batch call over every document (tiktoken's and hf_bbpe's on ``--threads``
  threads; ``tokenizers``', fastokens' and snaptokens' as they run it); ``batch_1``: hf_bbpe's on 1 thread;
- ``stream``: a stream per document, fed one id at a time (``tokenizers``' ``DecodeStream``,
  splintr's ``streaming_decoder``, hf_bbpe's ``decode_stream``), over the documents of the first
  ``--stream-mb`` MB;
- transformers: ``BBPETokenizer`` against ``PreTrainedTokenizerFast`` loading the same saved
  folder: ``decode`` of the one long list, ``decode`` per document, ``batch_decode``.

Systems: tiktoken (``decode``, ``decode_batch``), ``tokenizers`` (``decode``, ``decode_batch``,
``DecodeStream``; the tokenizer.json that transformers' TikTokenConverter writes from the rank
file), fastokens (``from_tiktoken``), snaptokens (that tokenizer.json), splintr-rs
(``decode_lossy``, ``decode_batch_lossy``, ``streaming_decoder``) when it is installed (a peer
that does not import or load is skipped and said so), hf_bbpe's engine, and the
two transformers classes. Every output of every system is checked against tiktoken's on every
document (and the long text): a peer that differs is reported and left out of the ratios, and the
script exits with status 1 if hf_bbpe's output differs. The table gives each system's MB/s and,
for hf_bbpe's engine and ``BBPETokenizer``, the ratio to the best exact peer of each column.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import lzma
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_encode import (  # noqa: E402  (one implementation of what the bench scripts share)
    DEFAULT_CORPUS,
    _version,
    cpu_model,
    load_average,
    pin_process,
    rank_file,
    timed,
    tokenizer_json,
)

import numpy as np  # noqa: E402
import tiktoken  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

ENCODINGS = ("cl100k_base", "o200k_base")
SYSTEMS = ("tiktoken", "hf_bbpe", "tokenizers", "fastokens", "snaptokens", "splintr", "BBPETokenizer",
           "PreTrainedTokenizerFast")
OURS = ("hf_bbpe", "BBPETokenizer")  # the rows that get ratios; the rest are peers
ONE_CORE = ("long", "long_numpy", "doc", "batch_1", "stream", "tf_long", "tf_doc")
SPLINTR_PATTERNS = {"cl100k_base": "CL100K_BASE_PATTERN", "o200k_base": "O200K_BASE_PATTERN"}


def load_systems(encoding: str, ranks_file: str, threads: int, skip: set[str], workdir: str) -> tuple[dict, list[str]]:
    """name -> {column: fn, "version": str}; notes on the systems skipped. Each fn takes the column's
    input: the long id list (``long``), a uint32 array (``long_numpy``), the documents' id lists
    (the others); ``doc`` and ``tf_doc`` take one document's ids."""
    from conversion.presets import PRESETS

    pattern = PRESETS[encoding].pattern
    systems, skipped = {}, []

    def add(name, loader):
        if name in skip:
            skipped.append(f"{name}: --skip")
            return
        try:
            systems[name] = loader()
        except Exception as exc:  # a peer that is not installed or does not load here is skipped, and said so
            skipped.append(f"{name}: {type(exc).__name__}: {exc}")

    def load_tiktoken():
        enc = tiktoken.Encoding(encoding, pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(ranks_file),
                                special_tokens={})
        return {"version": tiktoken.__version__, "encoding": enc, "long": enc.decode, "doc": enc.decode,
                "batch": lambda batch: enc.decode_batch(batch, num_threads=threads)}

    def load_hf_bbpe():
        import conversion

        tok = conversion.from_tiktoken(ranks_file, pattern=pattern)
        system = {"version": "this tree", "long": tok.decode, "long_numpy": tok.decode, "doc": tok.decode,
                  "engine": tok}
        if hasattr(tok, "decode_batch"):
            system["batch"] = lambda batch: tok.decode_batch(batch, num_threads=threads)
            system["batch_1"] = lambda batch: tok.decode_batch(batch, num_threads=1)
        if hasattr(tok, "decode_stream"):
            system["stream"] = lambda batch: [stream_text(tok.decode_stream(), ids) for ids in batch]
        return system

    def load_tokenizers():
        import tokenizers
        from tokenizers.decoders import DecodeStream

        tok = tokenizers.Tokenizer.from_file(tokenizer_json(encoding, ranks_file, pattern, workdir))

        def streams(batch):
            out = []
            for ids in batch:
                stream, parts = DecodeStream(skip_special_tokens=False), []
                for idx in ids:
                    text = stream.step(tok, idx)
                    if text is not None:
                        parts.append(text)
                out.append("".join(parts))
            return out

        return {"version": tokenizers.__version__, "long": tok.decode, "doc": tok.decode, "batch": tok.decode_batch,
                "stream": streams}

    def load_fastokens():
        import fastokens

        tok = fastokens.Tokenizer.from_tiktoken(ranks_file, encoding=encoding)
        return {"version": _version("fastokens"), "long": tok.decode, "doc": tok.decode, "batch": tok.decode_batch}

    def load_snaptokens():
        import snaptokens

        tok = snaptokens.Tokenizer.from_file(tokenizer_json(encoding, ranks_file, pattern, workdir))
        return {"version": _version("snaptokens"), "long": tok.decode, "doc": tok.decode, "batch": tok.decode_batch}

    def load_splintr():
        import splintr

        tok = splintr.Tokenizer(ranks_file, getattr(splintr, SPLINTR_PATTERNS[encoding]))

        def streams(batch):
            out = []
            for ids in batch:
                stream, parts = tok.streaming_decoder(), []
                for idx in ids:
                    text = stream.add_token(idx)
                    if text is not None:
                        parts.append(text)
                out.append("".join(parts) + (stream.flush() or ""))
            return out

        # the lossy calls: invalid UTF-8 becomes U+FFFD, as tiktoken's decode (errors="replace") and ours do
        return {"version": _version("splintr-rs"), "long": tok.decode_lossy, "doc": tok.decode_lossy,
                "batch": tok.decode_batch_lossy, "stream": streams}

    loaders = {"tiktoken": load_tiktoken, "hf_bbpe": load_hf_bbpe, "tokenizers": load_tokenizers,
               "fastokens": load_fastokens, "snaptokens": load_snaptokens, "splintr": load_splintr}
    for name, loader in loaders.items():
        add(name, loader)
    if "hf_bbpe" in systems:
        folder = os.path.join(workdir, f"{encoding}-folder")
        add("BBPETokenizer", lambda: load_transformers(systems["hf_bbpe"]["engine"], folder, fast=False))
        add("PreTrainedTokenizerFast", lambda: load_transformers(None, folder, fast=True))
    else:
        skipped.append("BBPETokenizer, PreTrainedTokenizerFast: hf_bbpe did not load")
    return systems, skipped


def load_transformers(engine, folder: str, fast: bool) -> dict:
    """BBPETokenizer over the engine (saved into ``folder`` first), or the fast class loading that folder."""
    import transformers

    from hf_bbpe import BBPETokenizer

    if fast:
        tok = transformers.PreTrainedTokenizerFast.from_pretrained(folder)
    else:
        tok = BBPETokenizer.from_engine(engine)
        if not os.path.exists(folder):
            tok.save_pretrained(folder)
    return {"version": transformers.__version__, "tf_long": tok.decode, "tf_doc": tok.decode,
            "tf_batch": tok.batch_decode}


def stream_text(stream, ids) -> str:
    """The text of a stream fed one id at a time (and flushed, where the stream has a flush)."""
    parts = []
    for idx in ids:
        text = stream.step(idx)
        if text is not None:
            parts.append(text)
    end = stream.flush() if hasattr(stream, "flush") else None
    if end:
        parts.append(end)
    return "".join(parts)


def keep_freed_memory() -> str:
    """Have glibc keep freed memory mapped and reuse it, for every system alike; what the report says
    of it. The long column's str is up to 48 MB (4 bytes a character once one is above U+FFFF), which
    glibc maps afresh for each call and unmaps when it is freed, so each call pays 12,000 page faults
    (24 ms on the 2-CPU VM of these figures: as long as hf_bbpe's whole decode), and whether a round
    paid them depended on what ran before it (one system measured 0 and 17,700 faults in two rounds).
    With glibc's mmap and trim thresholds at 1 GiB the figures are the decoders'. ``--page-faults``
    keeps glibc's defaults."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        kept = libc.mallopt(-1, 1 << 30) == 1 and libc.mallopt(-3, 1 << 30) == 1  # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        kept = False
    return ("freed memory kept mapped for reuse (glibc's mmap and trim thresholds at 1 GiB)" if kept
            else "glibc's defaults could not be changed: page faults of large outputs included")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--encoding", choices=ENCODINGS, default="cl100k_base")
    parser.add_argument("--mb", type=float, default=12, help="MB of the corpus to use (from its start)")
    parser.add_argument("--stream-mb", type=float, default=2, help="MB of documents the stream columns decode")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip", nargs="*", default=[], help="systems not to run")
    parser.add_argument("--page-faults", action="store_true",
                        help="keep glibc's malloc thresholds, so that large outputs are mapped afresh each call "
                             "(see keep_freed_memory)")
    parser.add_argument("--json", help="also write the figures here, with the machine, load and date "
                                       "(scripts/render_benchmarks.py renders docs/benchmarks.md from them)")
    args = parser.parse_args()
    from bench_results import machine

    memory = ("glibc's defaults: large outputs mapped afresh each call, their page faults included"
              if args.page_faults else keep_freed_memory())

    started = machine()
    opener = lzma.open if args.corpus.endswith(".xz") else open
    with opener(args.corpus, "rb") as f:
        text = f.read(int(args.mb * 1e6)).decode("utf-8", "ignore")
    documents = [d for d in text.split("\n\n") if d]
    all_cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else {0}
    one_cpu = {min(all_cpus)}
    print(f"corpus {args.corpus}: first {len(text.encode()) / 1e6:.1f} MB, {len(documents)} documents; "
          f"CPUs: {len(all_cpus)} (shared machine: compare figures within this run only); {load_average()}; "
          f"CPU: {cpu_model()}; memory: {memory}")
    workdir = tempfile.mkdtemp(prefix="bench_decode_")
    atexit.register(shutil.rmtree, workdir, True)
    ranks_file = rank_file(args.encoding, workdir)
    systems, skipped = load_systems(args.encoding, ranks_file, args.threads, set(args.skip), workdir)
    for note in skipped:
        print("skipped", note)
    if "tiktoken" not in systems:
        raise SystemExit("tiktoken did not load: it is the reference")

    reference = systems["tiktoken"]["encoding"]
    doc_ids = reference.encode_ordinary_batch(documents, num_threads=args.threads)
    long_ids = [idx for ids in doc_ids for idx in ids]
    long_array = np.array(long_ids, dtype=np.uint32)
    expected_docs = reference.decode_batch(doc_ids, num_threads=args.threads)
    expected_long = reference.decode(long_ids)
    stream_docs, size = [], 0
    for ids, doc in zip(doc_ids, expected_docs):
        if size >= args.stream_mb * 1e6:
            break
        stream_docs.append(ids)
        size += len(doc.encode("utf-8"))
    gc.collect()
    gc.freeze()  # the reference ids are no system's: out of the collector's sight
    doc_mb = sum(len(d.encode("utf-8")) for d in expected_docs) / 1e6
    long_mb = len(expected_long.encode("utf-8")) / 1e6
    stream_mb = size / 1e6
    print(f"{len(long_ids):,} ids; streams over {len(stream_docs)} documents ({stream_mb:.1f} MB)")

    columns = {"long": ("one list of every id", long_mb), "long_numpy": ("the same, uint32 numpy array", long_mb),
               "doc": ("one call per document", doc_mb), "batch": (f"batch, {args.threads} threads", doc_mb),
               "batch_1": ("batch, 1 thread", doc_mb), "stream": ("stream per document, one id a step", stream_mb),
               "tf_long": ("transformers decode, one list", long_mb),
               "tf_doc": ("transformers decode per document", doc_mb),
               "tf_batch": ("transformers batch_decode", doc_mb)}
    inputs = {"long": long_ids, "long_numpy": long_array, "batch": doc_ids, "batch_1": doc_ids,
              "stream": stream_docs, "tf_long": long_ids, "tf_batch": doc_ids}

    best: dict[tuple[str, str], tuple[float, float]] = {}
    equal = {name: True for name in systems}
    for round_ in range(args.rounds):
        names = list(systems)
        order = names[round_ % len(names):] + names[: round_ % len(names)]
        for column in columns:
            for name in order:
                fn = systems[name].get(column)
                if fn is None:
                    continue
                pin_process(one_cpu if column in ONE_CORE else all_cpus)
                if column in ("doc", "tf_doc"):
                    out, wall, cpu = timed(lambda: [fn(ids) for ids in doc_ids])
                else:
                    out, wall, cpu = timed(fn, inputs[column])
                if round_ == 0:  # every output of every system against tiktoken's
                    want = expected_long if column.endswith("long") or column == "long_numpy" \
                        else expected_docs[: len(stream_docs)] if column == "stream" else expected_docs
                    if out != want:
                        equal[name] = False
                        print(f"OUTPUT DIFFERS: {name} {column}")
                del out
                if (name, column) not in best or wall < best[(name, column)][0]:
                    best[(name, column)] = (wall, cpu)
        pin_process(all_cpus)
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)

    peers = [n for n in systems if n not in OURS and equal[n]]
    ratios = report(systems, columns, best, peers, args.rounds)
    print(f"at the end: {load_average()}")
    if args.json:
        from bench_results import write_results

        write_results(args.json, "bench_decode", {k: str(v) for k, v in vars(args).items()}, {
            "corpus": args.corpus, "encoding": args.encoding, "mb": long_mb, "documents": len(documents),
            "ids": len(long_ids), "rounds": args.rounds, "threads": args.threads, "memory": memory,
            "columns": {c: {"label": label, "mb": mb} for c, (label, mb) in columns.items()},
            "ratios": ratios, "skipped": skipped,
            "systems": {name: {"version": systems[name]["version"], "output_equal": equal[name],
                               "best_wall": {c: best[(name, c)][0] for c in columns if (name, c) in best},
                               "cpu": {c: best[(name, c)][1] for c in columns if (name, c) in best}}
                        for name in systems}}, started)
    if not all(equal.get(name, True) for name in OURS):
        sys.exit(1)


def report(systems: dict, columns: dict, best: dict, peers: list[str], rounds: int) -> dict:
    """Print the table (MB/s per system and column) and each of our rows' ratio to the best exact
    peer of the column; return those ratios."""
    print(f"\nMB of text per second (wall), best of {rounds} interleaved rounds\n")
    print("| system | " + " | ".join(label for label, _ in columns.values()) + " |")
    print("|---|" + "---:|" * len(columns))
    for name in systems:
        cells = [f"{size / best[(name, c)][0]:.1f}" if (name, c) in best else "-" for c, (_, size) in columns.items()]
        print(f"| {name} {systems[name]['version']} | " + " | ".join(cells) + " |")
    ratios = {}
    print("\nours / the best exact peer of the column:")
    for column, (label, size) in columns.items():
        rates = {n: size / best[(n, column)][0] for n in peers if (n, column) in best}
        for ours in OURS:
            if (ours, column) not in best or not rates:
                continue
            top = max(rates, key=rates.get)
            mine = size / best[(ours, column)][0]
            ratios[column] = {"ours": ours, "mb_s": mine, "peer": top, "peer_mb_s": rates[top],
                              "ratio": mine / rates[top]}
            print(f"  {label}: {ours} {mine:.1f} vs {top} {rates[top]:.1f} MB/s -> {mine / rates[top]:.2f}x")
    return ratios


if __name__ == "__main__":
    main()
