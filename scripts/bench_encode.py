"""Benchmark encoding with cl100k_base (or o200k_base, GPT-2's r50k_base, Llama 3's or Llama 4's
vocabulary): hf_bbpe against tiktoken and the fastest exact native peers.

    python scripts/bench_encode.py [CORPUS] [--encoding cl100k_base] [--mb 16] [--rounds 3] [--threads 2]
                                   [--skip NAME ...] [--sse2] [--cpu N] [--background-load N]

Loads the encoding (its rank file from the shared data; GPT-2's made from its encoder.json and
vocab.bpe; Llama's from the llama-models package, with its pattern) in every system that installs
here and can take that vocabulary with that exact pattern (the ``bench`` extra of pyproject.toml:
riptoken, gigatoken, quicktok-v1, toktok-rs, fastokens, snaptokens, splintr-rs; a peer that does
not import is skipped and said so; snaptokens reads a tokenizer.json, which transformers'
TikTokenConverter writes from the rank file with the pattern spelled as transformers spells it)
and measures, in this one process, interleaved round by round (best round kept; every system is
loaded afresh for each round and warmed up by one pass over every document, one by one (in each
call form it is timed in) and as a batch, untimed: the steady state of a pipeline, and the same for every system even where a cache
outlives the object, as gigatoken's does):

Columns 0-2 and 4 are one-core figures: the whole process (every thread of it) is pinned to one CPU
while they run, so a peer that splits one call over a pool of threads (fastokens' one long text over
FASTOKENS_BPE_THREADS, snaptokens' ``encode_batch_flat`` of one text over its Rayon pool) is measured
on one core like the others; the batch columns get every CPU (both pools are sized ``--threads``).

0. cold: one pass, one call per document, in a fresh process of its own for each system (loaded
   there, nothing run before it: a pass in this process would follow the other systems' passes,
   which leave its memory, caches and allocator in a state that depends on the order);
1. one call per document (the corpus cut at blank lines), each system's exact single-text call
   that returns a list of ints (tiktoken's ``encode_ordinary``; gigatoken's list call on one core);
2. the whole text as one string, the same call;
   both again "to numpy", for the systems that return a uint32 array from one text (tiktoken's and
   hf_bbpe's ``encode_to_numpy`` with ``disallowed_special=()`` in the call, toktok-rs's, gigatoken's
   own ``encode``; every call as a user's loop makes it, with no wrapper), or uint32 bytes that
   ``numpy.frombuffer`` takes without a copy (fastokens' and snaptokens' ``encode_batch_flat([text])``,
   splintr's ``encode_flat``): no Python int per id, so these columns compare the encoders without
   the cost of building lists;
3. a batch of all documents on ``--threads`` threads, each system's batch call (its fastest
   exact form), in two columns, like with like: lists of ids (tiktoken, riptoken, gigatoken's
   tiktoken-compatible call, hf_bbpe's ``encode_batch``), and flat uint32 ids plus offsets
   (quicktok-v1, toktok-rs, fastokens, snaptokens, splintr, hf_bbpe's ``encode_batch_to_numpy``),
   which make no Python int per id; also hf_bbpe's long string cut
   over ``--threads`` threads (``encode_ordinary(num_threads=)``, not the default: one thread);
4. hf_bbpe's batch on 1 thread, for the 1 -> N thread speedup;
5. hf_bbpe through transformers: ``BBPETokenizer(docs, add_special_tokens=False)`` (the whole batch
   in one call; without the BOS that a Llama 3 tokenizer adds, so that its ids are compared with the
   others') and ``datasets.Dataset.map(batched=True)`` calling it, both of which take the engine's
   batch path.

With ``--background-load N``, N busy processes (a Python loop each) run for the whole run at
nice 19, each in a session of its own and pinned to a CPU other than the one-core columns' (from the
last CPU down): the machine of a user who runs something else too. Linux puts each session in its
own scheduling group (autogroup, on where /proc/sys/kernel/sched_autogroup_enabled is 1, as here),
and nice orders processes only within a group, so such a process takes half of its CPU whatever
its nice; the one-core columns do not see it, the batch columns have a core and a half to share
(how each system splits its work between threads shows there), and for them the wall seconds of
each round are printed (the best and the median: under load the rounds differ). The load average
is printed at the start and the end of the run: figures from a busy machine are indicative.

Then the pathological inputs, hf_bbpe against tiktoken: 1 MB and 2 MB of one letter, of spaces,
of digits and of one CJK character (time must grow linearly: the 2 MB / 1 MB time ratio is
printed; about 2 is linear). Last, a pattern that no C scanner knows (GPT-2's with single digits),
hf_bbpe (the regex module splits) against tiktoken with the same pattern and ranks, per document
and one string, on the first 4 million characters.

Every system's ids are checked against tiktoken's on every document, for the long string and for
every batch: a peer whose ids differ is reported and left out of the ratios, and the script exits
with status 1 if hf_bbpe's differ. Memory: the RSS growth when each
system loads the encoding (loaded one after the other, so an approximation), and the peak RSS of the run.
Throughput is UTF-8 MB per second of wall time; the machine is shared, so the CPU seconds of this
process are printed beside each figure, ratios are only meaningful within one run, and the one-core
columns' ratios are printed again by CPU time (a pinned process's CPU seconds are its work, whatever
else the CPU runs), and the batch's (the CPU seconds of all its threads: its work, not its wall time). The first line says which window scanners hf_bbpe runs: AVX-512 where the CPU
has it, SSE2 otherwise, or with ``--sse2`` (``_pretokenize.wide_windows(False)``) or
HF_BBPE_NO_AVX512=1, as on a CPU without AVX-512.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import gc
import lzma
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

THREADS = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--threads=")), None) or (
    sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv[:-1] else "2")
# the Rust peers' thread pools, sized before they load (each reads its variable once): as many as we use
os.environ.setdefault("RAYON_NUM_THREADS", THREADS)
os.environ.setdefault("FASTOKENS_BPE_THREADS", THREADS)
os.environ["RUST_BACKTRACE"] = "0"  # a peer's expected panic (tiktoken on 1 MB of spaces) in its one-line message

import numpy as np  # noqa: E402
import tiktoken  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

DATA = "/work/shared/data"
DEFAULT_CORPUS = f"{DATA}/bench/mix-49mb.txt.xz"
ENCODINGS = ("cl100k_base", "o200k_base", "r50k_base", "llama3", "llama4")
GIGATOKEN_SCHEMES = {"llama4": "o200k"}  # its split scheme that is the encoding's pattern (it has none for Llama 3's)
FASTOKENS_ENCODINGS = ("cl100k_base", "o200k_base")  # from_tiktoken(encoding=...) knows these
# each encoding's pattern as transformers spells it for tokenizers' Oniguruma (tiktoken's possessive
# \p{N}{1,3}+ means something else there): TikTokenConverter's default is cl100k's (Llama 3's
# pattern); o200k's has no possessive; GPT-2's is its original pattern, as GPT-2's tokenizer.json has it
HF_SPELLINGS = {"cl100k_base": None, "llama3": None,
                "r50k_base": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""}
SPLINTR_PATTERNS = {"cl100k_base": "CL100K_BASE_PATTERN", "o200k_base": "O200K_BASE_PATTERN",
                    "r50k_base": "GPT2_PATTERN", "llama3": "LLAMA3_PATTERN", "llama4": "O200K_BASE_PATTERN"}
SYSTEMS = ("tiktoken", "hf_bbpe", "riptoken", "gigatoken", "quicktok-v1", "toktok-rs", "fastokens", "snaptokens",
           "splintr")  # in the order they load and run
ONE_CORE = ("doc_cold", "doc", "long", "doc_numpy", "long_numpy", "batch_1")  # columns run pinned to one CPU


def rank_file(encoding: str, workdir: str) -> str:
    """The encoding's tiktoken rank file: the shared data's, or for r50k_base one written into
    workdir from GPT-2's encoder.json and vocab.bpe (its file name names the encoding, which is how
    gigatoken picks its split pattern)."""
    if encoding.startswith("llama"):
        import llama_models

        return os.path.join(os.path.dirname(llama_models.__file__), encoding, "tokenizer.model")
    if encoding != "r50k_base":
        return f"{DATA}/tiktoken/{encoding}.tiktoken"
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    ranks = data_gym_to_mergeable_bpe_ranks(f"{DATA}/gpt2/vocab.bpe", f"{DATA}/gpt2/encoder.json")
    path = os.path.join(workdir, "r50k_base.tiktoken")
    with open(path, "w") as f:
        f.writelines(f"{base64.b64encode(token).decode()} {rank}\n" for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]))
    return path


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def split_flat(result) -> list[list[int]]:
    """Lists of ids from (flat uint32 ids, int64 offsets), as arrays or raw buffers (for checking only)."""
    flat, offsets = result
    flat = np.frombuffer(flat, dtype=np.uint32) if isinstance(flat, bytes) else np.asarray(flat)
    offsets = np.frombuffer(offsets, dtype=np.int64) if isinstance(offsets, bytes) else np.asarray(offsets)
    return [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]


def pin_process(cpus: set[int]) -> None:
    """Every thread of this process (the peers' pools too) on cpus: one CPU for the one-core
    columns, all of them for the batch columns. Threads made later inherit their maker's set."""
    if not hasattr(os, "sched_setaffinity"):
        return
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:  # a thread that has just ended
            pass


def tokenizer_json(encoding: str, ranks_file: str, pattern: str, workdir: str) -> str:
    """A tokenizer.json of the encoding for the peers that read one (snaptokens), written once per
    run by transformers' TikTokenConverter with the pattern as transformers spells it."""
    path = os.path.join(workdir, f"{encoding}.tokenizer.json")
    if not os.path.exists(path):
        from transformers.convert_slow_tokenizer import TikTokenConverter

        spelling = HF_SPELLINGS.get(encoding, pattern)
        converter = TikTokenConverter(vocab_file=ranks_file, **({"pattern": spelling} if spelling else {}))
        converter.converted().save(path)
    return path


def flat_array(result) -> np.ndarray:
    """The uint32 ids of a one-text flat call ((ids bytes, offsets bytes), or ids bytes) as numpy takes them."""
    return np.frombuffer(result[0] if isinstance(result, tuple) else result, dtype=np.uint32)


def load_systems(encoding: str, ranks_file: str, threads: int, skip: set[str],
                 workdir: str) -> tuple[dict, dict, list[str]]:
    """name -> {"doc", "long", "batch" (-> list of id lists) or "batch_flat" (-> flat uint32 ids and
    offsets), "version"}; load RSS; skipped notes."""
    from conversion.presets import PRESETS

    pattern, specials = PRESETS[encoding].pattern, PRESETS[encoding].special_tokens
    systems, memory, skipped = {}, {}, []

    def add(name, loader):
        if name in skip:
            skipped.append(f"{name}: --skip")
            return
        gc.collect()
        before = rss_mb()
        try:
            systems[name] = loader()
        except Exception as exc:  # a peer that does not install or load here is skipped, and said so
            skipped.append(f"{name}: {type(exc).__name__}: {exc}")
            return
        gc.collect()
        memory[name] = rss_mb() - before

    def load_tiktoken():
        enc = tiktoken.Encoding(encoding, pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(ranks_file),
                                special_tokens=specials)
        return {"version": tiktoken.__version__ if hasattr(tiktoken, "__version__") else "", "doc": enc.encode_ordinary,
                "long": enc.encode_ordinary,
                "doc_numpy": enc.encode_to_numpy, "numpy_ordinary": True,
                "long_numpy": lambda text: enc.encode_to_numpy(text, disallowed_special=()),
                "batch": lambda docs: enc.encode_ordinary_batch(docs, num_threads=threads)}

    def load_hf_bbpe():
        import conversion

        tok = conversion.from_tiktoken(ranks_file, pattern=pattern)
        to_numpy = lambda text: tok.encode_to_numpy(text, disallowed_special=())  # noqa: E731
        system = {"version": "this tree", "doc": tok.encode_ordinary, "long": tok.encode_ordinary,
                  "doc_numpy": tok.encode_to_numpy, "numpy_ordinary": True, "long_numpy": to_numpy,
                  "long_threads": lambda text: tok.encode_ordinary(text, num_threads=threads),
                "batch": lambda docs: tok.encode_batch(docs, num_threads=threads, disallowed_special=()),
                "batch_flat": lambda docs: tok.encode_batch_to_numpy(docs, num_threads=threads,
                                                                      disallowed_special=()),
                "batch_1": lambda docs: tok.encode_batch(docs, num_threads=1, disallowed_special=())}

        def wrap():  # after the memory of the engine is measured: the transformers wrapper is more
            from hf_bbpe import BBPETokenizer

            wrapped = BBPETokenizer.from_engine(tok)
            system["transformers_batch"] = lambda docs: wrapped(docs, add_special_tokens=False)["input_ids"]
            system["datasets_map"] = lambda docs: datasets_map(wrapped, docs)

        system["wrap"] = wrap
        return system

    def load_riptoken():
        import riptoken

        core = riptoken.CoreBPE(load_tiktoken_bpe(ranks_file), {}, pattern)
        return {"version": _version("riptoken"), "doc": core.encode_ordinary, "long": core.encode_ordinary,
                "batch": core.encode_ordinary_batch}

    def load_gigatoken():
        import gigatoken

        if encoding.startswith("llama") and encoding not in GIGATOKEN_SCHEMES:
            raise ValueError(f"no split scheme of its own is {encoding}'s pattern")
        scheme = {"pretokenizer": GIGATOKEN_SCHEMES[encoding]} if encoding in GIGATOKEN_SCHEMES else {}
        tok = gigatoken.Tokenizer.from_tiktoken(ranks_file, **scheme)
        compat = tok.as_tiktoken()
        as_list = lambda text: tok.encode_batch_list([text], parallel=False)[0]  # noqa: E731  (one core)
        return {"version": _version("gigatoken"), "doc": as_list, "long": as_list,
                "doc_numpy": tok.encode, "long_numpy": tok.encode,
                "batch": lambda docs: compat.encode_ordinary_batch(docs, num_threads=threads)}

    def load_quicktok():
        import quicktok

        tok = quicktok.get_encoding(encoding)
        return {"version": _version("quicktok-v1"), "doc": tok.encode_ordinary, "long": tok.encode_ordinary,
                "batch": lambda docs: tok.encode_batch(docs, threads=threads), "flat": True}

    def load_toktok():
        import toktok

        tok = toktok._encoding(encoding)  # its full encode surface (the public API only counts)
        return {"version": _version("toktok-rs"), "doc": tok.encode_ordinary, "long": tok.encode_ordinary,
                "doc_numpy": tok.encode_to_numpy, "long_numpy": tok.encode_to_numpy,
                "batch": lambda docs: tok.encode_batch(docs, threads=threads), "flat": True}

    def load_fastokens():
        import fastokens

        source = {"encoding": encoding} if encoding in FASTOKENS_ENCODINGS else {"pattern": pattern}
        try:
            tok = fastokens.Tokenizer.from_tiktoken(ranks_file, **source)
        except ValueError:  # a vocabulary with tokens that no two tokens make (Llama 3's): its tokenizer.json
            tok = fastokens.Tokenizer.from_file(tokenizer_json(encoding, ranks_file, pattern, workdir))
        as_list = lambda text: tok.encode_ordinary(text).ids  # noqa: E731  (a real list, made on access)
        as_array = lambda text: flat_array(tok.encode_batch_flat([text], split_special_tokens=True))  # noqa: E731
        return {"version": _version("fastokens"), "doc": as_list, "long": as_list, "doc_numpy": as_array,
                "long_numpy": as_array, "flat": True,
                "batch": lambda docs: tok.encode_batch_flat(docs, split_special_tokens=True)}

    def load_snaptokens():
        import snaptokens

        tok = snaptokens.Tokenizer.from_file(tokenizer_json(encoding, ranks_file, pattern, workdir))
        as_list = lambda text: tok.encode(text).ids  # noqa: E731
        as_array = lambda text: flat_array(tok.encode_batch_flat([text]))  # noqa: E731
        return {"version": _version("snaptokens"), "doc": as_list, "long": as_list, "doc_numpy": as_array,
                "long_numpy": as_array, "batch": tok.encode_batch_flat, "flat": True}

    def load_splintr():
        import splintr

        tok = splintr.Tokenizer(ranks_file, getattr(splintr, SPLINTR_PATTERNS[encoding]))
        as_array = lambda text: flat_array(tok.encode_flat(text))  # noqa: E731
        return {"version": _version("splintr-rs"), "doc": tok.encode_ordinary, "long": tok.encode_ordinary,
                "doc_numpy": as_array, "long_numpy": as_array, "batch": tok.encode_batch_flat, "flat": True}

    import datasets  # noqa: F401  (imported before any system loads: its RSS is no system's)
    import hf_bbpe.hf.tokenization_bbpe  # noqa: F401  (transformers too)

    loaders = {"tiktoken": load_tiktoken, "hf_bbpe": load_hf_bbpe, "riptoken": load_riptoken,
               "gigatoken": load_gigatoken, "quicktok-v1": load_quicktok, "toktok-rs": load_toktok,
               "fastokens": load_fastokens, "snaptokens": load_snaptokens, "splintr": load_splintr}
    assert tuple(loaders) == SYSTEMS
    for name, loader in loaders.items():
        add(name, loader)
    for system in systems.values():
        system.pop("wrap", lambda: None)()
        if system.get("flat"):  # a batch of flat ids is compared with flat ids (hf_bbpe's encode_batch_to_numpy)
            system["batch_flat"] = system.pop("batch")
    return systems, memory, skipped


def datasets_map(wrapped, docs: list[str]) -> list[list[int]]:
    """``Dataset.map(batched=True)`` with BBPETokenizer, its usual way: the ids of every document."""
    import datasets

    datasets.disable_progress_bars()
    dataset = datasets.Dataset.from_dict({"text": docs})
    mapped = dataset.map(lambda batch: wrapped(batch["text"], add_special_tokens=False), batched=True, batch_size=1000,
                         remove_columns=["text"], keep_in_memory=True)
    return mapped["input_ids"]


PATHOLOGICAL = {"one letter": "a", "spaces": " ", "digits": "7", "CJK": "\u65e5"}


def pathological(systems: dict) -> bool:
    """hf_bbpe against tiktoken on 1 MB and 2 MB of one character; True when ids are equal."""
    print("\npathological inputs, hf_bbpe vs tiktoken (MB/s on 1 MB; time of 2 MB / time of 1 MB: 2 is linear)\n")
    print("| input | hf_bbpe MB/s | tiktoken MB/s | ratio | hf_bbpe 2 MB / 1 MB | tiktoken 2 MB / 1 MB |")
    print("|---|---:|---:|---:|---:|---:|")
    equal = True
    for label, char in PATHOLOGICAL.items():
        times, failed = {}, None
        for mb in (1, 2):
            text = char * (mb * 1_000_000 // len(char.encode("utf-8")))
            ids = {}
            for name in ("hf_bbpe", "tiktoken"):
                walls = []
                for _ in range(2):  # the better of two: one pass on a shared machine can stall
                    try:
                        ids[name], wall, _ = timed(systems[name]["long"], text)
                    except (KeyboardInterrupt, SystemExit):
                        raise
                    except BaseException as exc:  # tiktoken's regex can overflow its stack (a Rust panic)
                        if name == "hf_bbpe":
                            raise
                        failed = f"{type(exc).__name__}: {str(exc).rsplit(': ', 1)[-1][-60:]}"
                        break
                    walls.append(wall)
                times[(name, mb)] = min(walls) if walls else None
            if "tiktoken" in ids:
                equal &= list(ids["hf_bbpe"]) == list(ids["tiktoken"])
        ours = 1 / times[("hf_bbpe", 1)]
        growth = times[("hf_bbpe", 2)] / times[("hf_bbpe", 1)]
        if failed:  # nothing to check these ids against: said so
            print(f"| 1 MB of {label} | {ours:.1f} | tiktoken fails ({failed}) | - | {growth:.2f} | - |")
            continue
        theirs = 1 / times[("tiktoken", 1)]
        print(f"| 1 MB of {label} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x | "
              f"{growth:.2f} | {times[('tiktoken', 2)] / times[('tiktoken', 1)]:.2f} |")
    return equal


# GPT-2's pattern with digits one at a time: a pattern no C scanner knows, so the regex module splits
CUSTOM_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def custom_pattern(ranks_file: str, text: str, rounds: int) -> bool:
    """hf_bbpe against tiktoken with a pattern that no C scanner knows (the same pattern and ranks in
    both), on the first 4 million characters of the text: per document and one string; True when ids equal."""
    import conversion

    text = text[:4_000_000]
    documents = [d for d in text.split("\n\n") if d]
    size = len(text.encode("utf-8")) / 1e6
    ours = conversion.from_tiktoken(ranks_file, pattern=CUSTOM_PATTERN)
    theirs = tiktoken.Encoding("custom", pat_str=CUSTOM_PATTERN, mergeable_ranks=load_tiktoken_bpe(ranks_file),
                               special_tokens={})
    calls = {"hf_bbpe": ours.encode_ordinary, "tiktoken": theirs.encode_ordinary}
    best: dict[tuple[str, str], float] = {}
    equal = True
    for round_ in range(rounds):
        for name in (list(calls) if round_ % 2 == 0 else list(calls)[::-1]):
            docs, wall_docs, _ = timed(lambda: [calls[name](d) for d in documents])
            long, wall_long, _ = timed(calls[name], text)
            best[(name, "doc")] = min(best.get((name, "doc"), wall_docs), wall_docs)
            best[(name, "long")] = min(best.get((name, "long"), wall_long), wall_long)
            if round_ == 0 and name == "hf_bbpe":
                equal = docs == [theirs.encode_ordinary(d) for d in documents] and long == theirs.encode_ordinary(text)
    print(f"\na pattern no C scanner knows (GPT-2's with single digits; the regex module splits), {size:.1f} MB, "
          f"the same pattern and ranks in tiktoken\n")
    print("| call | hf_bbpe MB/s | tiktoken MB/s | ratio |")
    print("|---|---:|---:|---:|")
    for column, label in (("doc", "one call per document"), ("long", "one long string")):
        a, b = size / best[("hf_bbpe", column)], size / best[("tiktoken", column)]
        print(f"| {label} | {a:.1f} | {b:.1f} | {a / b:.2f}x |")
    return equal


def cold_pass(name: str, args: argparse.Namespace) -> tuple[float, float]:
    """(wall, CPU seconds) of one system's first pass over the documents, one call each, in a fresh
    process that loads only that system (this script with --cold), pinned to the one-core CPU."""
    command = [sys.executable, os.path.abspath(__file__), args.corpus, "--encoding", args.encoding,
               "--mb", str(args.mb), "--threads", str(args.threads), "--cold", name]
    command += ["--cpu", str(args.cpu)] if args.cpu is not None else []
    command += ["--sse2"] if args.sse2 else []
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith("COLD ")), None)
    if line is None:
        raise RuntimeError(f"the cold pass of {name} failed: {done.stderr.strip()[-500:]}")
    wall, cpu = map(float, line.split()[1:])
    return wall, cpu


def cold_child(args: argparse.Namespace, documents: list[str], one_cpu: set[int]) -> None:
    """--cold NAME: load that system alone, time its first pass over the documents pinned to one
    CPU, print ``COLD wall cpu``."""
    from hf_bbpe.engine.chunking import patterns

    if args.sse2:
        patterns._native.wide_windows(False)
    workdir = tempfile.mkdtemp(prefix="bench_encode_cold_")
    atexit.register(shutil.rmtree, workdir, True)
    ranks_file = rank_file(args.encoding, workdir)
    others = {n for n in SYSTEMS if n != args.cold}
    systems, _, _ = load_systems(args.encoding, ranks_file, args.threads, others, workdir)
    doc = systems[args.cold]["doc"]
    gc.collect()
    gc.freeze()
    pin_process(one_cpu)
    _, wall, cpu = timed(lambda: [doc(d) for d in documents])
    print(f"COLD {wall} {cpu}")


def cpu_model() -> str:
    """The CPU's model name (Linux), for the record of which CPU a figure comes from."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = ""
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = line
                    break
        return f"{name}, {'with' if ' avx512bw ' in flags else 'without'} AVX-512 BW"
    except (OSError, UnboundLocalError):
        return "unknown"


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


@contextlib.contextmanager
def background_load(count: int, avoid: set[int]):
    """count busy processes at nice 19, each in a session (so an autogroup) of its own, pinned to the
    CPUs not in avoid (the one-core columns' CPU) from the last down; stopped at the end."""
    cpus = sorted(set(os.sched_getaffinity(0)) - avoid, reverse=True) if hasattr(os, "sched_getaffinity") else []
    busy = []
    try:
        for k in range(count):
            def setup(cpu=cpus[k % len(cpus)] if cpus else None):
                os.nice(19)
                if cpu is not None:
                    os.sched_setaffinity(0, {cpu})
            busy.append(subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=setup,
                                         start_new_session=True, stdin=subprocess.DEVNULL))
        if busy:
            print(f"background load: {count} busy process(es) at nice 19, own sessions, on CPU(s) "
                  f"{sorted({cpus[k % len(cpus)] for k in range(count)}) if cpus else 'any'}")
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else ""


def timed(fn, *args):
    cpu, start = cpu_seconds(), time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--encoding", choices=ENCODINGS, default="cl100k_base")
    parser.add_argument("--mb", type=float, default=16, help="MB of the corpus to use (from its start)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip", nargs="*", default=[], help="systems not to run")
    parser.add_argument("--cpu", type=int, default=None, help="the CPU the one-core columns run on (default: the first)")
    parser.add_argument("--background-load", type=int, default=0, metavar="N",
                        help="N busy processes at nice 19 in sessions of their own for the whole run, pinned to CPUs "
                             "other than the one-core columns' (see above)")
    parser.add_argument("--cold", default=None, help=argparse.SUPPRESS)  # (internal: one system's cold pass, see cold_pass)
    parser.add_argument("--sse2", action="store_true",
                        help="hf_bbpe's SSE2 window scanners, as on a CPU without AVX-512 (like HF_BBPE_NO_AVX512=1)")
    parser.add_argument("--json", help="also write the figures here, with the machine, load and date "
                                       "(scripts/render_benchmarks.py renders docs/benchmarks.md from them)")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_results import machine

    args._started = machine()  # the run's machine and load, for --json (not an argument: "_" keeps it out)
    if str(args.threads) != THREADS:  # (read from argv before the peers load, so that their pools get it)
        parser.error("--threads must be given as --threads N or --threads=N")

    opener = lzma.open if args.corpus.endswith(".xz") else open
    with opener(args.corpus, "rb") as f:
        text = f.read(int(args.mb * 1e6)).decode("utf-8", "ignore")
    documents = [d for d in text.split("\n\n") if d]
    mb = len(text.encode("utf-8")) / 1e6
    all_cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else {0}
    one_cpu = {min(all_cpus) if args.cpu is None else args.cpu}
    if args.cold:
        cold_child(args, documents, one_cpu)
        return
    with background_load(args.background_load, one_cpu):
        run(args, text, documents, mb, all_cpus, one_cpu)
    print(f"at the end: {load_average()}")


def run(args: argparse.Namespace, text: str, documents: list[str], mb: float, all_cpus: set[int],
        one_cpu: set[int]) -> None:
    """The measurements of main(), with the corpus read."""
    print(f"corpus {args.corpus}: first {mb:.1f} MB, {len(documents)} documents; CPUs: {len(all_cpus)} "
          f"(shared machine: compare figures within this run only); one-core columns pinned to CPU {min(one_cpu)}; "
          f"{load_average()}")
    from hf_bbpe.engine.chunking import patterns

    if args.sse2:
        patterns._native.wide_windows(False)
    print(f"hf_bbpe's window scanners: {'AVX-512' if patterns._native.wide_windows() else 'SSE2'} "
          f"(HF_BBPE_NO_AVX512={os.environ.get('HF_BBPE_NO_AVX512', '')!r}, --sse2={args.sse2}); "
          f"CPU: {cpu_model()}")
    workdir = tempfile.mkdtemp(prefix="bench_encode_")
    atexit.register(shutil.rmtree, workdir, True)
    ranks_file = rank_file(args.encoding, workdir)
    print(f"encoding {args.encoding}: {ranks_file}")
    systems, memory, skipped = load_systems(args.encoding, ranks_file, args.threads, set(args.skip), workdir)
    for note in skipped:
        print("skipped", note)

    reference_docs = systems["tiktoken"]["doc"]
    expected_docs = [reference_docs(d) for d in documents]
    expected_long = systems["tiktoken"]["long"](text)
    # the reference ids (millions of ints in thousands of lists) and the modules loaded so far are no
    # system's: out of the garbage collector's sight, so that its collections, which the systems that
    # return lists set off, do not traverse them (a cost per collection that shrank every ratio of the
    # list columns towards 1)
    gc.freeze()
    doc_mb = sum(len(d.encode("utf-8")) for d in documents) / 1e6

    columns = {"doc_cold": ("one call per document, cold, one core", doc_mb),
               "doc": ("one call per document, one core", doc_mb), "long": ("one long string, one core", mb),
               "doc_numpy": ("one call per document, to numpy, one core", doc_mb),
               "long_numpy": ("one long string, to numpy, one core", mb),
               "batch": (f"batch, {args.threads} threads, lists", doc_mb),
               "batch_flat": (f"batch, {args.threads} threads, flat uint32 ids + offsets", doc_mb)}
    extra = {"long_threads": f"one long string, encode_ordinary(num_threads={args.threads})",
             "batch_1": "batch, 1 thread",
             "transformers_batch": "BBPETokenizer(docs), one call", "datasets_map": "datasets.map(batched=True)"}
    def per_document(system: dict, column: str):
        """The timed loop of a per-document column: each document through the system's call, as a
        user's loop spells it (no wrapper: tiktoken's and hf_bbpe's encode_to_numpy take
        disallowed_special=() in the call itself, for ids with no special-token handling)."""
        fn = system[column]
        if column == "doc_numpy" and system.get("numpy_ordinary"):
            return lambda: [fn(d, disallowed_special=()) for d in documents]
        return lambda: [fn(d) for d in documents]

    best: dict[tuple[str, str], tuple[float, float]] = {}
    least_cpu: dict[tuple[str, str], float] = {}  # the least CPU seconds of each (one-core columns: their work)
    walls: dict[tuple[str, str], list[float]] = {}  # every round's wall seconds
    equal = {name: True for name in systems}
    for round_ in range(args.rounds):
        if round_:  # fresh objects: no system keeps a cache warmed by the round before
            systems = {name: fresh for name, fresh in load_systems(args.encoding, ranks_file, args.threads,
                                                                   set(args.skip), workdir)[0].items()
                       if name in systems}
        order = list(systems)[round_ % len(systems):] + list(systems)[: round_ % len(systems)]
        for name in order:  # the warm-up: once over every document, one by one and as a batch
            pin_process(one_cpu)
            if round_ == 0:  # the one cold measurement, in a fresh process
                wall, cpu = cold_pass(name, args)
                best[(name, "doc_cold")] = (wall, cpu)
                least_cpu[(name, "doc_cold")] = cpu
            [systems[name]["doc"](d) for d in documents]
            if "doc_numpy" in systems[name]:  # its own call form (gigatoken's caches differ by call)
                per_document(systems[name], "doc_numpy")()
            pin_process(all_cpus)
            systems[name].get("batch", systems[name].get("batch_flat"))(documents)
        for column in [*columns, *extra]:
            for name in order:
                fn = systems[name].get(column)
                if fn is None or column == "doc_cold":
                    continue
                pin_process(one_cpu if column in ONE_CORE else all_cpus)
                if column in ("doc", "doc_numpy"):
                    out, wall, cpu = timed(per_document(systems[name], column))
                else:
                    out, wall, cpu = timed(fn, text if column.startswith("long") else documents)
                if round_ == 0:  # every document, every system, every call form
                    want = expected_long if column.startswith("long") else expected_docs
                    if column == "batch_flat":
                        out = split_flat(out)  # flat ids + offsets, timed as returned
                    got = list(out) if column.startswith("long") else [list(x) for x in out]
                    if column.startswith("long") and hasattr(out, "tolist"):
                        got = out.tolist()
                    elif not column.startswith("long") and out and hasattr(out[0], "tolist"):
                        got = [x.tolist() for x in out]
                    if got != want:
                        equal[name] = False
                        print(f"IDS DIFFER: {name} {column}")
                del out
                walls.setdefault((name, column), []).append(wall)
                if (name, column) not in best or wall < best[(name, column)][0]:
                    best[(name, column)] = (wall, cpu)
                least_cpu[(name, column)] = min(cpu, least_cpu.get((name, column), cpu))
        pin_process(all_cpus)
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)

    def cell(name: str, column: str, size: float) -> str:
        if (name, column) not in best:
            return "-"
        wall, cpu = best[(name, column)]
        return f"{size / wall:.1f} ({cpu / wall:.1f} CPU)"

    peers = [n for n in systems if n != "hf_bbpe" and equal[n]]  # a peer whose ids differ is no anchor
    print(f"\nMB/s, best of {args.rounds} interleaved rounds (CPUs busy per wall second in brackets)\n")
    print("| system | " + " | ".join(label for label, _ in columns.values()) + f" | RSS to load {args.encoding} | ids equal |")
    print("|---|" + "---:|" * len(columns) + "---:|---|")
    for name in systems:
        flat = " (flat uint32 + offsets)" if systems[name].get("flat") else ""
        print(f"| {name} {systems[name]['version']}{flat} | "
              + " | ".join(cell(name, c, size) for c, (_, size) in columns.items())
              + f" | {memory[name]:.0f} MB | {'yes' if equal[name] else 'NO'} |")
    if "hf_bbpe" in systems:
        print("\nhf_bbpe / best peer (throughput ratio):")
        for column, (label, size) in columns.items():
            rates = {n: size / best[(n, column)][0] for n in peers if (n, column) in best}
            if rates and ("hf_bbpe", column) in best:
                top = max(rates, key=rates.get)
                ours = size / best[("hf_bbpe", column)][0]
                print(f"  {label}: {ours:.1f} vs {top} {rates[top]:.1f} MB/s -> {ours / rates[top]:.2f}x")
        batch_columns = [c for c in (*columns, *extra) if c.startswith("batch")]
        print("\nbatch columns, wall seconds of a round (best / median; the median is the figure under load):")
        for name in systems:
            cells = [f"{c} {min(walls[(name, c)]):.3f} / {sorted(walls[(name, c)])[len(walls[(name, c)]) // 2]:.3f}"
                     for c in batch_columns if (name, c) in walls]
            if cells:
                print(f"  {name}: " + ", ".join(cells))
        print("\nthe same by CPU time (one-core columns: the pinned process's CPU seconds, its work whatever else "
              "the machine runs; the batch: the CPU seconds of all its threads, its work but not its wall time):")
        for column, (label, size) in columns.items():
            rates = {n: size / least_cpu[(n, column)] for n in peers if (n, column) in least_cpu}
            if rates and least_cpu.get(("hf_bbpe", column)):
                top = max(rates, key=rates.get)
                ours = size / least_cpu[("hf_bbpe", column)]
                print(f"  {label}: {ours:.1f} vs {top} {rates[top]:.1f} MB per CPU second -> {ours / rates[top]:.2f}x")
        for column, label in extra.items():
            if ("hf_bbpe", column) in best:
                print(f"  hf_bbpe {label}: {cell('hf_bbpe', column, mb if column.startswith('long') else doc_mb)} MB/s")
        if ("hf_bbpe", "batch_1") in best:
            print(f"  thread speedup 1 -> {args.threads}: "
                  f"{best[('hf_bbpe', 'batch_1')][0] / best[('hf_bbpe', 'batch')][0]:.2f}x (batch), "
                  f"{best[('hf_bbpe', 'long')][0] / best[('hf_bbpe', 'long_threads')][0]:.2f}x (one long string)")
        print(f"  RSS to load: hf_bbpe {memory['hf_bbpe']:.0f} MB vs tiktoken {memory.get('tiktoken', 0):.0f} MB")
    print(f"peak RSS of the run: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB")
    if "hf_bbpe" in systems and "tiktoken" in systems and not pathological(systems):
        print("IDS DIFFER: hf_bbpe on a pathological input")
        equal["hf_bbpe"] = False
    if "hf_bbpe" in systems and "tiktoken" in systems and not custom_pattern(ranks_file, text, args.rounds):
        print("IDS DIFFER: hf_bbpe with a custom pattern")
        equal["hf_bbpe"] = False
    inexact = [name for name in systems if name != "hf_bbpe" and not equal[name]]
    if inexact:
        print(f"not compared (ids differ from tiktoken's): {', '.join(inexact)}")
    if args.json:
        from bench_results import write_results

        write_results(args.json, "bench_encode", {k: str(v) for k, v in vars(args).items()}, {
            "corpus": args.corpus, "encoding": args.encoding, "mb": mb, "documents": len(documents),
            "rounds": args.rounds, "threads": args.threads, "sse2": args.sse2,
            "columns": {c: {"label": label, "mb": size} for c, (label, size) in columns.items()},
            "systems": {name: {"version": systems[name]["version"], "flat": bool(systems[name].get("flat")),
                               "ids_equal": equal[name], "load_rss_mb": memory[name],
                               "best_wall": {c: best[(name, c)][0] for c in columns if (name, c) in best},
                               "least_cpu": {c: least_cpu[(name, c)] for c in columns if (name, c) in least_cpu}}
                        for name in systems}}, args._started)
    if not equal.get("hf_bbpe", True):
        sys.exit(1)


if __name__ == "__main__":
    main()
