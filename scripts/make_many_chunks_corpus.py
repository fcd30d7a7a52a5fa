"""Make a corpus with a chosen number of distinct chunks: real text with random identifiers mixed in.

    python scripts/make_many_chunks_corpus.py OUT.txt --base CORPUS [--identifiers 100000000]
        [--seed 0] [--letters 8] [--per-line 8] [--base-lines 4] [--repeat 1] [--check]

For issue 28's "larger than memory" test: training on OUT.txt must count about ``--identifiers``
distinct chunks on top of the base text's own, exactly. Documents are lines, as in
scripts/bench_train.py.

The output is the base corpus's lines (a real-text file such as the one scripts/make_train_corpus.py
builds; ``.xz`` is read decompressed; it is read again from the start when it runs out), with one
identifier line after every ``--base-lines`` of its lines: ``--per-line`` identifiers, each a
space then ``--letters`` lowercase ASCII letters, then ``\\n``. Under every split pattern hf_bbpe
knows (GPT-2, GPT-4, o200k, ...), each identifier is one chunk (`` xkqwdbfa``) and the line
ends with the chunk ``\\n``; the base lines split exactly as they do alone (a line is a document).

The identifiers are the first values of a seeded pseudo-random permutation of the 26**letters
strings (a Feistel network with cycle-walking), so they are pairwise distinct by construction;
one that occurs in the base text as a word of its own (a run of lowercase ASCII letters) is
skipped, so none can coincide with a base chunk. With ``--repeat R`` the whole identifier sequence
is written R times (each identifier's count is then R). Hence the exact counts: the base lines'
chunks (counted on the base lines written), plus each identifier R times, plus one ``\\n`` per
identifier line. ``OUT.json`` records the parameters, the base's sha256, how many base lines and
identifier lines went in, and the output's size and sha256.

``--check`` (small sizes only: it counts in Python) counts the output's chunks with hf_bbpe's
GPT-2 pattern and checks them against those expected counts.

``--verify-counts COUNTS`` (any size; OUT.txt and OUT.json made before, nothing is written) checks
a counts file of OUT.txt's lines (``tok.count_chunks(files=[OUT.txt], out=COUNTS)``, e.g. within
``max_memory``) against a reference made independently, in a few GB: the base's chunks counted by
the ``regex`` module (one pass of the base, times the passes written, plus the last part), the
identifiers made again by the permutation. It checks every count, the number of distinct chunks,
and the order of first appearance: the identifiers in the order they were written, the base's
chunks in the order the regex module first meets them. The counts file's identifiers are found in
numpy (a chunk of a space and ``--letters`` lowercase letters that is not a base word), so there
is no Python object per identifier.

At full size (100 million identifiers, 8 letters, 8 a line, 4 base lines between) the output is
about 3 GB when the base has 40-byte lines; it is written in a few minutes. Same arguments and
base -> the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import lzma
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator

import numpy as np

ROUNDS = 4
BATCH = 1 << 20  # identifiers made per numpy batch


class Permutation:
    """A seeded bijection of [0, 26**letters): a balanced Feistel network on the smallest even
    number of bits that holds the domain, walked again while a value falls outside it."""

    def __init__(self, letters: int, seed: int) -> None:
        self.size = 26**letters
        bits = max(2, (self.size - 1).bit_length())
        self.half = (bits + 1) // 2
        self.mask = np.uint64((1 << self.half) - 1)
        # round keys from sha256, not a numpy generator, whose streams may change between versions
        self.keys = [
            np.uint64(int.from_bytes(hashlib.sha256(f"{seed}:{i}".encode()).digest()[:8], "little") | 1)
            for i in range(2 * ROUNDS)
        ]

    def _once(self, x: np.ndarray) -> np.ndarray:
        left, right = x >> np.uint64(self.half), x & self.mask
        shift = np.uint64(self.half)
        for r in range(ROUNDS):
            mixed = right * self.keys[2 * r] + self.keys[2 * r + 1]  # wraps mod 2**64
            mixed ^= mixed >> np.uint64(29)
            left, right = right, left ^ (mixed & self.mask)
        return (left << shift) | right

    def __call__(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            y = self._once(x.astype(np.uint64))
            outside = y >= self.size
            while outside.any():
                y[outside] = self._once(y[outside])
                outside = y >= self.size
        return y


def spell(values: np.ndarray, letters: int) -> np.ndarray:
    """Each value as ``letters`` lowercase ASCII letters (base 26, most significant first)."""
    out = np.empty((len(values), letters), dtype=np.uint8)
    v = values.copy()
    for j in range(letters - 1, -1, -1):
        out[:, j] = (v % 26).astype(np.uint8) + ord("a")
        v //= 26
    return out


def value_of(word: bytes) -> int:
    v = 0
    for c in word:
        v = v * 26 + (c - ord("a"))
    return v


def open_base(path: str):
    return lzma.open(path, "rb") if path.endswith(".xz") else open(path, "rb")


def base_words(path: str, letters: int) -> np.ndarray:
    """The values of the base text's words of exactly ``letters`` lowercase ASCII letters."""
    word = re.compile(rb"(?<![a-z])[a-z]{%d}(?![a-z])" % letters)
    found: set[bytes] = set()
    with open_base(path) as f:
        for line in f:
            found.update(word.findall(line))
    return np.array(sorted(value_of(w) for w in found), dtype=np.uint64)


def identifiers(count: int, letters: int, seed: int, excluded: np.ndarray) -> Iterator[np.ndarray]:
    """``count`` distinct identifiers, as rows of letters, in batches (none of them excluded)."""
    permutation = Permutation(letters, seed)
    if count > permutation.size - len(excluded):
        raise SystemExit(f"only {permutation.size - len(excluded):,} identifiers of {letters} letters exist")
    made, start = 0, 0
    while made < count:
        values = permutation(np.arange(start, start + BATCH, dtype=np.uint64))
        start += BATCH
        values = values[~np.isin(values, excluded)][: count - made]
        made += len(values)
        yield spell(values, letters)


def base_lines(path: str) -> Iterator[bytes]:
    """The base's lines, each ending in "\\n", from the start again whenever it runs out."""
    while True:
        empty = True
        with open_base(path) as f:
            for line in f:
                empty = False
                yield line if line.endswith(b"\n") else line + b"\n"
        if empty:
            raise SystemExit(f"{path} is empty")


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def generate(args: argparse.Namespace) -> dict:
    excluded = base_words(args.base, args.letters)
    base = base_lines(args.base)
    width = args.letters + 1
    n_base = n_id_lines = 0
    partial = args.out + ".partial"
    with open(partial, "wb") as out:
        for _ in range(args.repeat):
            pending = np.empty((0, args.letters), dtype=np.uint8)
            batches = itertools.chain(identifiers(args.identifiers, args.letters, args.seed, excluded), [None])
            for batch in batches:
                if batch is not None:
                    pending = np.concatenate([pending, batch])
                    whole = len(pending) - len(pending) % args.per_line
                else:
                    whole = len(pending)  # the last line may hold fewer
                if not whole:
                    continue
                rows = np.full((whole, width), ord(" "), dtype=np.uint8)
                rows[:, 1:] = pending[:whole]
                pending = pending[whole:]
                flat = rows.tobytes()
                step = args.per_line * width
                for i in range(0, len(flat), step):
                    for _ in range(args.base_lines):
                        out.write(next(base))
                    out.write(flat[i : i + step] + b"\n")
                    n_base += args.base_lines
                    n_id_lines += 1
    os.replace(partial, args.out)
    return {
        "base": os.path.abspath(args.base), "base_sha256": sha256_file(args.base), "seed": args.seed,
        "identifiers": args.identifiers, "letters": args.letters, "per_line": args.per_line,
        "base_lines_between": args.base_lines, "repeat": args.repeat, "base_words_excluded": len(excluded),
        "base_lines_written": n_base, "identifier_lines": n_id_lines,
        "bytes": os.path.getsize(args.out), "sha256": sha256_file(args.out),
    }


def check(args: argparse.Namespace, manifest: dict) -> None:
    """Count the output's chunks and compare them with the counts it was made to have."""
    from hf_bbpe import GPT2_SPLIT_PATTERN
    from hf_bbpe.engine.chunking.patterns import chunk_splitter

    split = chunk_splitter(GPT2_SPLIT_PATTERN)
    got: Counter[str] = Counter()
    with open(args.out, encoding="utf-8", newline="\n") as f:
        for line in f:
            got.update(split(line))
    expected: Counter[str] = Counter()
    base = base_lines(args.base)
    for _ in range(manifest["base_lines_written"]):
        expected.update(split(next(base).decode("utf-8")))
    base_distinct = len(expected)
    for batch in identifiers(args.identifiers, args.letters, args.seed, base_words(args.base, args.letters)):
        for row in batch:
            expected[" " + row.tobytes().decode("ascii")] += args.repeat
    expected["\n"] += manifest["identifier_lines"]
    if got != expected:
        wrong = [(k, got[k], expected[k]) for k in got.keys() | expected.keys() if got[k] != expected[k]][:5]
        raise SystemExit(f"check FAILED: the output's chunk counts differ from the expected ones, e.g. {wrong}")
    print(f"check ok: {len(got):,} distinct chunks = {base_distinct:,} of the base lines "
          f"+ {args.identifiers:,} identifiers (+ '\\n' if the base had none); "
          f"{sum(got.values()):,} chunks in all, every count as expected")


def verify_counts(args: argparse.Namespace, counts_path: str) -> None:
    """Check a counts file of ``args.out`` against the expected counts and order (see the module doc)."""
    import regex

    from hf_bbpe import GPT2_SPLIT_PATTERN
    from hf_bbpe.engine.training.counts_file import load_counts

    with open(args.out + ".json") as f:
        manifest = json.load(f)
    for key in ("identifiers", "letters", "seed", "repeat", "per_line", "base_lines_between"):
        if manifest[key] != getattr(args, key if key != "base_lines_between" else "base_lines"):
            raise SystemExit(f"{args.out}.json: made with {key}={manifest[key]}, not the arguments given")
    counts = load_counts(counts_path)
    lengths = np.frombuffer(counts.lengths, dtype=np.int32)
    values = np.frombuffer(counts.counts, dtype=np.int64)
    symbols = np.frombuffer(counts.symbols, dtype=np.uint8)
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    print(f"{counts_path}: {len(lengths):,} distinct chunks, {int(values.sum()):,} in all")

    # the identifiers: a space and `letters` lowercase letters, not a base word
    excluded = base_words(args.base, args.letters)
    width = args.letters + 1
    candidates = np.flatnonzero(lengths == width)
    is_id = np.zeros(len(lengths), dtype=bool)
    found = []
    step = 1 << 22
    for k in range(0, len(candidates), step):
        at = candidates[k:k + step]
        rows = symbols[starts[at][:, None] + np.arange(width)]
        letters = rows[:, 1:]
        form = (rows[:, 0] == ord(" ")) & ((letters >= ord("a")) & (letters <= ord("z"))).all(axis=1)
        v = np.zeros(len(at), dtype=np.uint64)
        for j in range(args.letters):
            v = v * np.uint64(26) + (letters[:, j] - ord("a")).astype(np.uint64)
        keep = form & ~np.isin(v, excluded)
        is_id[at[keep]] = True
        found.append(v[keep])
    found_ids = np.concatenate(found) if found else np.zeros(0, dtype=np.uint64)
    del found
    if len(found_ids) != args.identifiers:
        raise SystemExit(f"check FAILED: {len(found_ids):,} identifiers in the counts, {args.identifiers:,} written")
    id_counts = values[is_id]
    if not (id_counts == args.repeat).all():
        bad = int(np.flatnonzero(id_counts != args.repeat)[0])
        raise SystemExit(f"check FAILED: an identifier counted {int(id_counts[bad])} times, not {args.repeat}")
    made = 0
    for batch in identifiers(args.identifiers, args.letters, args.seed, excluded):
        v = np.zeros(len(batch), dtype=np.uint64)
        for j in range(args.letters):
            v = v * np.uint64(26) + (batch[:, j] - ord("a")).astype(np.uint64)
        if not np.array_equal(found_ids[made:made + len(v)], v):
            raise SystemExit(f"check FAILED: the identifiers from #{made:,} on are not in the order written")
        made += len(v)
    print(f"identifiers ok: {made:,}, each counted {args.repeat} time(s), in the order written")
    del found_ids, candidates

    # the base's chunks (and "\n" of the identifier lines), counted by the regex module
    split = regex.compile(GPT2_SPLIT_PATTERN)
    written, every = manifest["base_lines_written"], args.base_lines
    if every == 0:
        raise SystemExit("--verify-counts needs base lines (--base-lines > 0)")

    def count_lines(limit: int | None) -> tuple[dict[str, int], int]:
        """The chunks of the base's first ``limit`` lines (all: None) in order of first appearance,
        "\\n" placed where the first identifier line puts it (after ``every`` base lines)."""
        counted: dict[str, int] = {}
        n = 0
        with open_base(args.base) as f:
            for line in itertools.islice(f, limit):
                if n == every:
                    counted.setdefault("\n", 0)
                line = line if line.endswith(b"\n") else line + b"\n"
                for m in split.finditer(line.decode("utf-8")):
                    counted[m.group(0)] = counted.get(m.group(0), 0) + 1
                n += 1
        return counted, n

    full, n_lines = count_lines(None)
    passes, rest = divmod(written, n_lines)
    if passes == 0:
        raise SystemExit("--verify-counts needs at least one whole pass of the base written")
    part = count_lines(rest)[0] if rest else {}
    expected = {chunk: n * passes + part.get(chunk, 0) for chunk, n in full.items()}
    expected["\n"] = expected.get("\n", 0) + manifest["identifier_lines"]
    order = list(expected)
    rest_at = np.flatnonzero(~is_id)
    got = [(bytes(symbols[starts[i]:starts[i] + lengths[i]]).decode("utf-8"), int(values[i])) for i in rest_at]
    if len(got) != len(expected):
        raise SystemExit(f"check FAILED: {len(got):,} other distinct chunks in the counts, {len(expected):,} expected")
    for (chunk, n), want in zip(got, order):
        if chunk != want:
            raise SystemExit(f"check FAILED: the base's chunks are not in order of first appearance: {chunk!r} where "
                             f"{want!r} comes first")
        if n != expected[chunk]:
            raise SystemExit(f"check FAILED: {chunk!r} counted {n:,} times, expected {expected[chunk]:,}")
    print(f"check ok: {len(lengths):,} distinct chunks = {args.identifiers:,} identifiers + {len(expected):,} of the "
          f"base lines and line ends; every count and the order of first appearance as expected")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--base", required=True, help="a real-text file (.xz allowed), read line by line")
    parser.add_argument("--identifiers", type=int, default=100_000_000, help="distinct identifiers to mix in")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--letters", type=int, default=8, help="letters per identifier (26**letters must exceed the count)")
    parser.add_argument("--per-line", type=int, default=8, help="identifiers per identifier line")
    parser.add_argument("--base-lines", type=int, default=4, help="base lines before each identifier line")
    parser.add_argument("--repeat", type=int, default=1, help="write the identifier sequence this many times")
    parser.add_argument("--check", action="store_true", help="count the output's chunks and check them (small sizes)")
    parser.add_argument("--verify-counts", metavar="COUNTS",
                        help="check this counts file of OUT's lines against the expected counts (OUT made before)")
    args = parser.parse_args()
    if min(args.identifiers, args.letters, args.per_line, args.repeat) < 1 or args.base_lines < 0:
        parser.error("--identifiers, --letters, --per-line and --repeat must be positive, --base-lines >= 0")
    if args.verify_counts:
        verify_counts(args, args.verify_counts)
        return
    manifest = generate(args)
    with open(args.out + ".json", "w") as f:
        json.dump(manifest, f, indent=1)
    print(json.dumps(manifest, indent=1))
    if args.check:
        check(args, manifest)


if __name__ == "__main__":
    sys.exit(main())
