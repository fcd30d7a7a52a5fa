"""``hf-bbpe audit``: glitch-token candidates, unreachable tokens, partial UTF-8 tokens and special-token
risks of a tokenizer, measured on a reference corpus (criteria in hf_bbpe/analysis/audit.py)."""

from __future__ import annotations

import argparse

from ...analysis.audit import audit_tokenizer, report_to_json, report_to_text
from ..arguments import add_tokenizer, load, non_negative_int, positive_int, write_stdout
from ..text_input import expand_inputs, read_texts


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "audit", help="find glitch-token candidates, unreachable tokens and special-token risks",
        description="Encode a reference corpus and report: merged tokens never produced (glitch-token "
                    "candidates, in merge order) or rarely produced; tokens encode can never produce "
                    "(unreachable: an earlier merge always takes their bytes, or the bytes never occur in UTF-8 "
                    "text); merged tokens that are not valid UTF-8 alone; special tokens that plain text can "
                    "spell. Table, or everything with --json.",
    )
    add_tokenizer(p)
    p.add_argument("corpus", metavar="CORPUS", nargs="+", help="reference text files or globs; '-' reads stdin")
    p.add_argument("--rare", type=non_negative_int, default=2,
                   help="list merged tokens produced at most this many times (default 2)")
    p.add_argument("--top", type=positive_int, default=20, help="rows per table (JSON lists everything)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    corpus = read_texts(expand_inputs(args.corpus))
    loaded = load(args, args.tokenizer)
    report = audit_tokenizer(loaded.tokenizer, corpus, name=loaded.name, rare=args.rare)
    write_stdout(report_to_json(report) if args.json else report_to_text(report, top=args.top))
    return 0
