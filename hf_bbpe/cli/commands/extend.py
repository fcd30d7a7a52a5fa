"""``hf-bbpe extend``: learn new merges on new text on top of an existing tokenizer.

Old ids keep their bytes and merges, special tokens keep their ids, new merges get ids above the
old ones (``Tokenizer.extend``); the result is written like ``train``'s output.
"""

from __future__ import annotations

import argparse
import sys

from ..arguments import add_tokenizer, load, positive_int
from ..errors import CommandError
from ..output_dir import check_output
from ..text_input import DOCUMENT_MODES, expand_inputs, iter_documents
from .train import add_role_options, describe_folder, role_tokens, save_folder


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "extend", help="add merges learned on new text to a tokenizer",
        description="Continue BPE on new text on top of an existing tokenizer: every old token, merge and "
                    "special token keeps its id, new merges get ids above them, so text without the new merges "
                    "encodes as before. Writes a folder like 'train'. Grow a model for the new tokens with "
                    "hf_bbpe.surgery.resize_for_extension (rows from each new merge's parents).",
    )
    add_tokenizer(p)
    p.add_argument("files", metavar="FILE", nargs="+", help="new text files or globs; '-' reads stdin")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--new-merges", type=positive_int, help="how many merges to add")
    size.add_argument("--vocab-size", type=positive_int,
                      help="target number of normal tokens (bytes + merges) after extension")
    p.add_argument("--special", metavar="TOKEN", action="append", default=[],
                   help="a new special token, given the next free id (repeatable)")
    add_role_options(p)
    p.add_argument("--out", metavar="DIR", required=True, help="output folder")
    p.add_argument("--docs", choices=DOCUMENT_MODES, default="paragraph", help="how files are cut into documents")
    p.add_argument("--min-frequency", type=positive_int, default=1, help="stop when no pair occurs this often")
    p.add_argument("--tie-break", choices=("smallest_pair", "first_occurrence"), default="smallest_pair")
    p.add_argument("--workers", type=positive_int, default=None, help="counting processes (default: all CPUs)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_output(args.out, folder=True)
    paths = expand_inputs(args.files)
    base = load(args, args.tokenizer).tokenizer
    normal = len(base.vocab) - len(base.special_tokens)
    new_merges = args.new_merges if args.new_merges is not None else args.vocab_size - normal
    if new_merges < 1:
        raise CommandError(f"--vocab-size {args.vocab_size} is not above the tokenizer's {normal} normal tokens")
    tok = base.extend(iter_documents(paths, args.docs), new_merges, tie_break=args.tie_break,
                      min_frequency=args.min_frequency, num_workers=args.workers,
                      progress=False if args.no_progress else None)
    roles = role_tokens(args)
    fresh = [t for t in dict.fromkeys([*args.special, *roles.values()]) if t not in tok.special_tokens]
    next_id = tok.n_vocab
    tok.register_special_tokens({token: next_id + i for i, token in enumerate(fresh)})
    written = save_folder(tok, args.out, roles=roles)
    if not args.quiet:
        print(f"added {len(tok.merges) - len(base.merges)} merges: n_vocab {base.n_vocab} -> {tok.n_vocab}; "
              f"wrote {describe_folder(args.out, written)}", file=sys.stderr)
    return 0
