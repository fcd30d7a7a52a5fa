"""``hf-bbpe train``: learn a tokenizer from text, .jsonl and .parquet files and write it as a folder.

Documents are the paragraphs of text files (``--docs paragraph``, the default: lines up to a run
of blank lines, as ``hf_bbpe.paragraphs`` cuts them), or their lines (``--docs line``: what
``open(f)`` and ``tokenizers``' ``train(files)`` give), or whole files (``--docs file``), and the
``--text-column`` of each record of ``.jsonl`` and ``.parquet`` files; all are read in blocks by
the counting threads (stdin, ``-``, is read in Python first). ``--from-counts`` trains from a
counts file that ``hf-bbpe count`` wrote instead, without counting again. The folder holds
``tokenizer.model`` (minbpe's format, or hf_bbpe v2 when ``--bos-token``, ``--eos-token``,
``--pad-token`` or ``--add-bos`` give token roles; ``tokenizer.vocab`` lists the tokens) and,
when the transformers integration is installed, everything ``save_pretrained`` writes, so
``AutoTokenizer.from_pretrained(folder)`` loads it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...engine.training.parity import VARIANTS, ParityConfig

from ...engine.training.counts_file import load_counts
from ...engine.training.superwords import count_superwords
from ..arguments import DEFAULT_PATTERN, NO_SPLIT, add_input_files, bounded_int, add_split_pattern, add_superword_options, \
    add_training_options, check_add_bos, split_tokenizer, superword_config
from ..errors import CommandError
from ..output_dir import check_output, describe_folder, save_trained_folder
from ..text_input import expand_inputs, train_on_inputs

SUPERWORDS_STAGE1_PATTERN = "superbpe_stage1"
"""Stage 1's pattern with --superwords and no --pattern: the paper's (scripts/train_tokenizer.sh)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train", help="train a tokenizer on text, .jsonl and .parquet files",
        description="Train a byte-level BPE tokenizer on text files (documents cut by --docs: paragraphs by default), "
                    ".jsonl and .parquet files (a document per record), or on a counts file that 'hf-bbpe count' "
                    "wrote (--from-counts), and write a folder with tokenizer.model (minbpe) and the save_pretrained "
                    "files. Progress bars (MB/s while counting) show on a terminal.",
    )
    add_input_files(p, nargs="*")
    p.add_argument("--from-counts", metavar="COUNTS", default=None,
                   help="train from this counts file ('hf-bbpe count' writes them) instead of FILEs, without "
                        "counting again; its split pattern is the tokenizer's")
    p.add_argument("--vocab-size", type=bounded_int, required=True,
                   help="number of tokens before special tokens: 256 bytes + merges")
    add_split_pattern(p, default=None, default_help=f"{DEFAULT_PATTERN}; with --superwords the paper's stage-1 pattern; "
                                                    "with --from-counts the counts file's")
    add_training_options(p)
    add_superword_options(p, transition=True)
    parity = p.add_argument_group("parity-aware BPE (one corpus per language; see docs/training.md)")
    parity.add_argument("--language", metavar="NAME=FILE", action="append", default=[],
                        help="a language's training file (repeat NAME for more files); replaces FILEs")
    parity.add_argument("--parity-dev", metavar="NAME=FILE", action="append", default=[],
                        help="a language's dev file (a parallel dev set balances the languages)")
    parity.add_argument("--parity-ratio", metavar="NAME=FLOAT", action="append", default=[],
                        help="a language's target compression rate (instead of a dev set)")
    parity.add_argument("--parity-variant", choices=VARIANTS, default="base", help="base (default) or window")
    parity.add_argument("--parity-window-size", type=bounded_int, default=100, help="the window variant's window")
    parity.add_argument("--parity-alpha", type=float, default=2.0, help="the window variant's alpha")
    parity.add_argument("--parity-global-merges", type=bounded_int, default=0,
                        help="plain-BPE merges before the parity ones")
    p.set_defaults(run=run)


def _named(values: list[str], option: str) -> dict[str, list[str]]:
    """``NAME=VALUE`` arguments of ``option``, grouped by name in the order given."""
    named: dict[str, list[str]] = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise CommandError(f"{option} {value!r}: expected NAME=VALUE")
        named.setdefault(name, []).append(rest)
    return named


def _train_by_language(args: argparse.Namespace) -> int:
    """``--language``: parity-aware BPE over one corpus per language (``Tokenizer.train(languages=...)``)."""
    if args.files or args.from_counts is not None:
        raise CommandError("--language gives the training files: no FILEs or --from-counts with it")
    if superword_config(args) is not None:
        raise CommandError("--superwords and --language do not combine")
    languages = {name: [Path(f) for f in files] for name, files in _named(args.language, "--language").items()}
    dev = {name: [Path(f) for f in files] for name, files in _named(args.parity_dev, "--parity-dev").items()}
    ratio = {}
    for name, values in _named(args.parity_ratio, "--parity-ratio").items():
        try:
            ratio[name] = float(values[-1])
        except ValueError:
            raise CommandError(f"--parity-ratio {name}={values[-1]}: not a number") from None
    try:
        config = ParityConfig(variant=args.parity_variant, dev=dev or None, ratio=ratio or None,
                              global_merges=args.parity_global_merges, window_size=args.parity_window_size,
                              alpha=args.parity_alpha)
    except ValueError as exc:
        raise CommandError(str(exc).replace("ParityConfig dev=", "--parity-dev").replace("ratio=", "--parity-ratio")
                           ) from None
    tok = split_tokenizer(args.pattern or DEFAULT_PATTERN)
    try:
        tok.train(languages=languages, vocab_size=args.vocab_size, parity=config, tie_break=args.tie_break,
                  min_frequency=args.min_frequency, num_workers=args.workers,
                  progress=False if args.no_progress else None, text_column=args.text_column, docs=args.docs,
                  max_memory=args.max_memory)
    except (ValueError, TypeError) as exc:
        raise CommandError(str(exc)) from None
    written = save_trained_folder(tok, args)
    if not args.quiet:
        print(f"trained {len(tok.merges)} parity-aware merges on {len(languages)} languages: n_vocab {tok.n_vocab}, "
              f"{len(tok.special_tokens)} special token(s); wrote {describe_folder(args.out, written)}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    check_output(args.out, folder=True)
    if args.vocab_size < 256:
        raise CommandError(f"--vocab-size must be at least 256 (the byte tokens), got {args.vocab_size}")
    if len(set(args.special)) != len(args.special):
        raise CommandError("--special: the same token is given twice")
    if any(not s for s in args.special):
        raise CommandError("--special: a special token cannot be empty")
    check_add_bos(args)
    if args.language:
        return _train_by_language(args)
    if args.parity_dev or args.parity_ratio:
        raise CommandError("--parity-dev and --parity-ratio balance the corpora of --language NAME=FILE: give those")
    superwords = superword_config(args)
    if args.from_counts is not None:
        return _train_from_counts(args, superwords is not None)
    if not args.files:
        raise CommandError("nothing to train on: give FILEs, or a counts file with --from-counts")
    pattern = args.pattern
    if pattern is None:
        pattern = DEFAULT_PATTERN if superwords is None else SUPERWORDS_STAGE1_PATTERN
    if superwords is not None and pattern == NO_SPLIT:
        raise CommandError(f"--superwords needs a split pattern for stage 1, not --pattern {NO_SPLIT}")
    if superwords is not None:
        try:
            superwords.stage1_vocab_size(args.vocab_size)
        except ValueError as exc:
            raise CommandError(f"--superword-transition: {exc}") from None
    tok = split_tokenizer(pattern)
    paths = expand_inputs(args.files)
    train_on_inputs(tok.train, paths, args, args.vocab_size, superwords=superwords)
    if not tok.merges and args.vocab_size > 256:
        raise CommandError(f"no merges learned from {', '.join(paths)}: the input has no two adjacent bytes "
                           "(is it empty?)")
    written = save_trained_folder(tok, args)
    if not args.quiet:
        if superwords is not None:
            print(f"superwords: {count_superwords(tok)} tokens span words (stage 2 from vocabulary size "
                  f"{superwords.stage1_vocab_size(args.vocab_size)})", file=sys.stderr)
        print(f"trained {len(tok.merges)} merges on {len(paths)} file(s): n_vocab {tok.n_vocab}, "
              f"{len(tok.special_tokens)} special token(s); wrote {describe_folder(args.out, written)}", file=sys.stderr)
    return 0


def _train_from_counts(args: argparse.Namespace, superwords: bool) -> int:
    """``--from-counts``: the merges of a counts file (checked whole; one made with another
    pattern than ``--pattern`` is refused, naming it), written as ``train`` writes them."""
    source = args.from_counts
    if args.files:
        raise CommandError(f"give FILEs to count or --from-counts {source}, not both")
    if superwords:
        raise CommandError(f"--superwords counts the corpus again for stage 2: give the FILEs, not --from-counts "
                           f"{source}")
    if args.max_memory is not None:
        raise CommandError(f"--max-memory bounds counting, and --from-counts {source} does not count (the file is "
                           "mapped)")
    counting_only = [option for option, given in (("--docs", args.docs != "paragraph"), ("--workers", args.workers),
                                                  ("--text-column", args.text_column != "text")) if given]
    if counting_only:
        raise CommandError(f"{', '.join(counting_only)} only change(s) counting, and --from-counts {source} does not "
                           "count: give them to 'hf-bbpe count'")
    counts = load_counts(source)
    tok = split_tokenizer(counts.pattern if args.pattern is None else args.pattern)
    tok.train_from_counts(counts, args.vocab_size, tie_break=args.tie_break, min_frequency=args.min_frequency,
                          progress=False if args.no_progress else None)
    if not tok.merges and args.vocab_size > 256:
        raise CommandError(f"no merges learned from {source}: its chunks have no two adjacent bytes")
    written = save_trained_folder(tok, args)
    if not args.quiet:
        print(f"trained {len(tok.merges)} merges on the {len(counts):,} distinct chunks of {source}: n_vocab "
              f"{tok.n_vocab}, {len(tok.special_tokens)} special token(s); wrote {describe_folder(args.out, written)}",
              file=sys.stderr)
    return 0
