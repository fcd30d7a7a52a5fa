"""``hf-bbpe extend``: learn new merges on new text on top of an existing tokenizer.

Old ids keep their bytes and merges, special tokens keep their ids, new merges get ids above the
old ones (``Tokenizer.extend``), and the token roles (BOS added or not, EOS, pad) are kept unless
the role options change them; the result is written like ``train``'s output.
"""

from __future__ import annotations

import argparse
import sys

from ...engine.training.superwords import count_superwords
from ..arguments import add_superword_options, add_tokenizer, add_training_options, check_add_bos, load, positive_int, \
    superword_config
from ..errors import CommandError
from ..output_dir import check_output, describe_folder, save_trained_folder
from ..text_input import expand_inputs, train_on_inputs


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "extend", help="add merges learned on new text to a tokenizer",
        description="Continue BPE on new text on top of an existing tokenizer: every old token, merge and "
                    "special token keeps its id, new merges get ids above them, so text without the new merges "
                    "encodes as before. Writes a folder like 'train'. Grow a model for the new tokens with "
                    "hf_bbpe.surgery.resize_for_extension (default init subtoken_scaled: each new token's rows "
                    "from the old tokens its bytes encode to, the output rows halved; docs/extension.md: 'Which init').",
    )
    add_tokenizer(p)
    p.add_argument("files", metavar="FILE", nargs="+", help="new text, .jsonl or .parquet files, or globs; '-' reads "
                   "stdin")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--new-merges", type=positive_int, help="how many merges to add")
    size.add_argument("--vocab-size", type=positive_int,
                      help="target number of normal tokens (bytes + merges) after extension")
    add_training_options(p)
    add_superword_options(p, transition=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_output(args.out, folder=True)
    paths = expand_inputs(args.files)
    base = load(args, args.tokenizer).tokenizer
    check_add_bos(args, base)
    normal = len(base.vocab) - len(base.special_tokens)
    new_merges = args.new_merges if args.new_merges is not None else args.vocab_size - normal
    if new_merges < 1:
        raise CommandError(f"--vocab-size {args.vocab_size} is not above the tokenizer's {normal} normal tokens")
    superwords = superword_config(args)
    tok = train_on_inputs(base.extend, paths, args, new_merges, superwords=superwords)
    written = save_trained_folder(tok, args)
    if not args.quiet:
        if superwords is not None:
            print(f"superwords: {count_superwords(tok) - count_superwords(base)} new tokens span words; the tokenizer "
                  "now splits text with the superword pattern", file=sys.stderr)
        print(f"added {len(tok.merges) - len(base.merges)} merges: n_vocab {base.n_vocab} -> {tok.n_vocab}; "
              f"wrote {describe_folder(args.out, written)}", file=sys.stderr)
    return 0
