"""``hf-bbpe compare``: tokens, bytes/token and chars/token for several tokenizers on several files;
with ``--train``, our BPE and a sentencepiece BPE trained on the same text, then compared."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from ...analysis.baseline import TrainingRun, fallback_characters, measure, train_sentencepiece
from ...analysis.compare import compare_tokenizers, rows_to_csv, rows_to_json, rows_to_table
from ...analysis.foreign_tokenizers import EngineTokenizer, SentencePieceTokenizer, ViewTokenizer
from ...analysis.text_table import format_table
from ...engine.tokenizer import RegexTokenizer, Tokenizer
from ..arguments import add_tokenizers, load_any, positive_int, write_stdout
from ..errors import CommandError, one_line
from ..text_input import expand_inputs, iter_documents, read_texts


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare", help="compare token counts of tokenizers on files",
        description="Encode each file with each tokenizer and print tokens, bytes per token and characters "
                    "per token (higher is more compact), and tokens relative to the first tokenizer; a total "
                    "per tokenizer when there are several files. Special-token strings count as plain text "
                    "unless --allow-specials. With --train CORPUS --vocab-size N: train our byte-level BPE and "
                    "a sentencepiece BPE (Llama 2's recipe, byte fallback) at the same vocabulary size on the "
                    "same text, and report each one's training time and peak memory, bytes per token on the "
                    "held-out FILEs (the corpus if none), and the characters it cannot hold in a token "
                    "(byte fallback, or a character cut across byte tokens).",
    )
    add_tokenizers(p, any_format=True, required=False)
    p.add_argument("files", metavar="FILE", nargs="*", help="text files or globs; '-' reads stdin")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="print CSV")
    fmt.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--allow-specials", action="store_true", help="encode special-token strings as special tokens")
    # the old spelling, hidden: elsewhere --specials takes a value (raise, allow, text)
    p.add_argument("--specials", dest="allow_specials", action="store_true", help=argparse.SUPPRESS)
    train = p.add_argument_group("baseline training (needs hf_bbpe[sentencepiece])")
    train.add_argument("--train", metavar="CORPUS", action="append", default=[],
                       help="train both tokenizers on this text file or glob (repeatable)")
    train.add_argument("--vocab-size", type=positive_int, default=None, help="vocabulary size of both (with --train)")
    train.add_argument("--train-pattern", default="gpt4", help="split pattern of our tokenizer (default gpt4)")
    train.add_argument("--keep", metavar="DIR", default=None, help="keep the two trained models in this folder")
    train.add_argument("--workers", type=positive_int, default=None, help="processes/threads for each trainer")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.train:
        return _run_training(args)
    if args.vocab_size is not None:
        raise CommandError("--vocab-size applies with --train only")
    if not args.tokenizers:
        raise CommandError("give at least one tokenizer (-t TOKENIZER), or --train CORPUS --vocab-size N")
    if not args.files:
        raise CommandError("give at least one text FILE to compare on")
    texts = read_texts(expand_inputs(args.files), each=True)  # one row per file: none may be empty
    tokenizers = [load_any(args, spec) for spec in args.tokenizers]
    names = _unique([t.name for t in tokenizers])
    rows = compare_tokenizers([(n, t.tokenizer) for n, t in zip(names, tokenizers)], texts, specials=args.allow_specials)
    if args.csv:
        write_stdout(rows_to_csv(rows))
    elif args.json:
        write_stdout(rows_to_json(rows))
    else:
        write_stdout(rows_to_table(rows) + "\n")
    return 0


def train_ours(paths: list[str], vocab_size: int, pattern: str, out_dir: str, workers: int | None) -> Path:
    """Train our byte-level BPE as ``hf-bbpe train`` does; returns the ``.model`` written."""
    tok = RegexTokenizer(pattern)
    tok.train(iter_documents(paths), vocab_size, num_workers=workers, progress=False)
    path = Path(out_dir) / "hf_bbpe.model"
    tok.save(str(path.with_suffix("")))
    return path


def _run_training(args: argparse.Namespace) -> int:
    if args.vocab_size is None:
        raise CommandError("--train needs --vocab-size N")
    if args.vocab_size <= 259:
        raise CommandError(f"--vocab-size must be more than 259 (256 byte tokens and sentencepiece's 3 control "
                           f"tokens), got {args.vocab_size}")
    corpus = expand_inputs(args.train)
    held_out = read_texts(expand_inputs(args.files or args.train), each=True)
    with tempfile.TemporaryDirectory(prefix="hf-bbpe-compare-") as scratch:
        out_dir = args.keep or scratch
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        runs = [
            _timed("hf_bbpe", train_ours, corpus, args.vocab_size, args.train_pattern, out_dir, args.workers),
            _timed("sentencepiece", train_sentencepiece, corpus, args.vocab_size, out_dir, args.workers),
        ]
        ours = EngineTokenizer(Tokenizer.from_file(runs[0].path))
        theirs = SentencePieceTokenizer(runs[1].path)
        extra = [load_any(args, spec) for spec in args.tokenizers]
        tokenizers: list[tuple[str, ViewTokenizer]] = [("hf_bbpe", ours), ("sentencepiece", theirs)]
        tokenizers += [(t.name, t.tokenizer) for t in extra]
        held_out_rows = _held_out_rows(tokenizers, held_out)
    _print_training(args, runs, held_out_rows)
    return 0


def _timed(name: str, target, *target_args) -> TrainingRun:
    try:
        return measure(name, target, *target_args)
    except RuntimeError as exc:
        raise CommandError(f"training {name} failed: {one_line(exc)}") from None


def _held_out_rows(tokenizers: list[tuple[str, ViewTokenizer]], texts: list[tuple[str, str]]) -> list[dict]:
    rows = []
    for file_name, text in texts:
        n_bytes = len(text.encode("utf-8", errors="surrogatepass"))
        for name, tok in tokenizers:
            ids = tok.encode(text, specials=False)
            rows.append({"file": file_name, "tokenizer": name, "tokens": len(ids), "bytes": n_bytes,
                         "chars": len(text), "bytes_per_token": round(n_bytes / len(ids), 4) if ids else 0.0,
                         "chars_per_token": round(len(text) / len(ids), 4) if ids else 0.0,
                         "fallback_chars": fallback_characters(tok, ids)})
    return rows


def _print_training(args: argparse.Namespace, runs: list[TrainingRun], rows: list[dict]) -> None:
    training = [{"tokenizer": run.name, "vocab_size": args.vocab_size, "seconds": round(run.seconds, 3),
                 "peak_memory_mb": round(run.peak_rss / 2**20, 1),
                 "training_memory_mb": round(run.added_rss / 2**20, 1)} for run in runs]
    if args.json:
        write_stdout(json.dumps({"training": training, "held_out": rows}, ensure_ascii=False, indent=2) + "\n")
        return
    if args.csv:
        raise CommandError("--csv is not available with --train (two tables); use --json")
    write_stdout(format_table(["tokenizer", "vocab size", "train seconds", "peak memory MB", "added by training MB"],
                              [[t["tokenizer"], t["vocab_size"], t["seconds"], t["peak_memory_mb"],
                                t["training_memory_mb"]] for t in training])
                 + "\n\n")
    write_stdout(format_table(["file", "tokenizer", "tokens", "bytes/token", "chars/token", "fallback chars"],
                              [[r["file"], r["tokenizer"], r["tokens"], r["bytes_per_token"], r["chars_per_token"],
                                r["fallback_chars"]] for r in rows]) + "\n")
    if args.keep:
        print(f"kept {', '.join(str(run.path) for run in runs)}", file=sys.stderr)


def _unique(names: list[str]) -> list[str]:
    """Names made distinct by a suffix (two folders may share a base name)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out
