"""Train on a corpus larger than memory: count within ``max_memory`` into a counts file, then train
from that file at one or more vocab sizes (no counting again). Prints each step's time, the peak
RSS after counting and at the end, how often the counter spilled, and the peak disk use of the
spill folder and the counts file (sampled every 0.2 s).

    TMPDIR=/big/tmp python scripts/bench_max_memory.py CORPUS.txt COUNTS --max-memory 1G \\
        [--pattern gpt2] [--vocab-sizes 32768 8192] [--docs line] [--skip-count]

Run it under ``/usr/bin/time -v`` for the whole process's peak RSS. The spill folder is made in the
system's temporary folder (``TMPDIR``). For issue 28's 100-million-chunk run, CORPUS is made by
scripts/make_many_chunks_corpus.py, whose ``--verify-counts COUNTS`` then checks the counts file.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time

from hf_bbpe import RegexTokenizer


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class DiskWatch:
    """The largest number of bytes (allocated blocks) seen at once in the spill folders and the
    counts file, sampled on a thread."""

    def __init__(self, folder: str, counts: str) -> None:
        self.folder, self.counts, self.peak = folder, counts, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def used(self) -> int:
        total = 0
        paths = [self.counts] + [
            os.path.join(root, name)
            for spill in os.listdir(self.folder) if spill.startswith("hf_bbpe-spill-")
            for root, _, names in os.walk(os.path.join(self.folder, spill)) for name in names
        ]
        for path in paths:
            try:
                total += os.stat(path).st_blocks * 512
            except FileNotFoundError:
                pass
        return total

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.peak = max(self.peak, self.used())

    def __enter__(self) -> DiskWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, self.used())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("counts", help="the counts file to write (and train from)")
    parser.add_argument("--max-memory", default="1G")
    parser.add_argument("--pattern", default="gpt2")
    parser.add_argument("--docs", default="line")
    parser.add_argument("--vocab-sizes", type=int, nargs="*", default=[32768])
    parser.add_argument("--num-workers", type=int, default=None)
    parser.add_argument("--skip-count", action="store_true", help="train from an existing counts file")
    args = parser.parse_args()
    if not args.skip_count:
        tok = RegexTokenizer(args.pattern)
        start = time.perf_counter()
        with DiskWatch(tempfile.gettempdir(), args.counts) as disk:
            counts = tok.count_chunks(files=[args.corpus], docs=args.docs, max_memory=args.max_memory,
                                      out=args.counts, num_workers=args.num_workers)
        print(f"counted: {len(counts):,} distinct chunks of {counts.input_bytes / 1e9:.2f} GB in "
              f"{time.perf_counter() - start:.1f} s within max_memory={args.max_memory} ({counts.spills:,} run files); "
              f"peak RSS so far {peak_rss_mb():,.0f} MB; peak disk {disk.peak / 1e9:.2f} GB "
              f"(counts file {os.path.getsize(args.counts) / 1e9:.2f} GB)", flush=True)
        del counts
    for vocab_size in args.vocab_sizes:
        tok = RegexTokenizer(args.pattern)
        start = time.perf_counter()
        tok.train_from_counts(args.counts, vocab_size)
        print(f"trained from {args.counts} to {vocab_size:,} tokens in {time.perf_counter() - start:.1f} s; "
              f"peak RSS so far {peak_rss_mb():,.0f} MB; last merge {tok.vocab[max(tok.merges.values())]!r}", flush=True)


if __name__ == "__main__":
    main()
