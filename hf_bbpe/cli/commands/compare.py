"""``hf-bbpe compare``: tokens, bytes/token and chars/token for several tokenizers on several files."""

from __future__ import annotations

import argparse

from ...analysis.compare import compare_tokenizers, rows_to_csv, rows_to_json, rows_to_table
from ..arguments import add_tokenizers, load_any, write_stdout
from ..text_input import expand_inputs, read_texts


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare", help="compare token counts of tokenizers on files",
        description="Encode each file with each tokenizer and print tokens, bytes per token and characters "
                    "per token (higher is more compact), and tokens relative to the first tokenizer; a total "
                    "per tokenizer when there are several files. Special-token strings count as plain text "
                    "unless --allow-specials.",
    )
    add_tokenizers(p, any_format=True)
    p.add_argument("files", metavar="FILE", nargs="+", help="text files or globs; '-' reads stdin")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="print CSV")
    fmt.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--allow-specials", action="store_true", help="encode special-token strings as special tokens")
    # the old spelling, hidden: elsewhere --specials takes a value (raise, allow, text)
    p.add_argument("--specials", dest="allow_specials", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
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


def _unique(names: list[str]) -> list[str]:
    """Names made distinct by a suffix (two folders may share a base name)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out
