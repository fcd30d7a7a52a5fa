"""``hf-bbpe count``: count the chunks of a corpus once into a counts file, which
``hf-bbpe train --from-counts`` trains from at any vocab size without counting again.

The inputs and counting options are ``train``'s (text files cut by ``--docs``, ``.jsonl`` and
``.parquet`` files, stdin; ``--max-memory``); the file is ``Tokenizer.count_chunks(out=...)``'s
(counts_file.py), written atomically: a count that fails leaves no file, or the old one whole.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..arguments import add_counting_options, add_input_files, add_split_pattern, split_tokenizer
from ..errors import CommandError
from ..output_dir import check_output
from ..text_input import count_on_inputs, expand_inputs


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "count", help="count a corpus's chunks into a counts file, to train from at any vocab size",
        description="Count the chunks of text, .jsonl and .parquet files (as 'hf-bbpe train' counts them) and write "
                    "them to a counts file; 'hf-bbpe train --from-counts FILE --vocab-size N' then trains from it at "
                    "any vocab size without counting again. Progress bars (MB/s) show on a terminal.",
    )
    add_input_files(p)
    p.add_argument("-o", "--out", metavar="COUNTS", required=True, help="the counts file to write (replaced whole)")
    add_split_pattern(p)
    add_counting_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_output(args.out, folder=False)
    paths = expand_inputs(args.files)
    if os.path.exists(args.out) and any(path != "-" and os.path.samefile(path, args.out) for path in paths):
        raise CommandError(f"{args.out}: is one of the inputs; write the counts to another file")
    counts = count_on_inputs(split_tokenizer(args.pattern).count_chunks, paths, args, out=args.out)
    if not args.quiet:
        spilled = f", spilling {counts.spills} run file(s)" if counts.spills else ""
        print(f"counted {len(counts):,} distinct chunks in {len(paths)} file(s){spilled}; wrote {args.out}",
              file=sys.stderr)
    return 0
