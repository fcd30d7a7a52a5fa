"""``hf-bbpe encode``: text on stdin (or a file) to token ids on stdout."""

from __future__ import annotations

import argparse
import json

from ...engine.encoding.special_tokens import DisallowedSpecialToken
from ..arguments import add_specials, add_tokenizer, encode_policy, load, special_token_in_text, write_stdout
from ..text_input import STDIN, text_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "encode", help="text to token ids",
        description="Encode UTF-8 text from stdin (or FILE, or --text) and print the ids, space-separated "
                    "on one line, or as a JSON list with --json.",
    )
    add_tokenizer(p)
    p.add_argument("file", metavar="FILE", nargs="?", default=STDIN, help="text file (default: stdin)")
    p.add_argument("--text", default=None, help="encode this text instead of reading a file")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    add_specials(p, "raise")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    text, source = text_argument(args.file, args.text)
    tok = load(args, args.tokenizer).tokenizer
    try:
        ids = tok.encode(text, **encode_policy(args.specials))
    except DisallowedSpecialToken as exc:
        raise special_token_in_text(source, exc.token) from None
    write_stdout((json.dumps(ids) if args.json else " ".join(map(str, ids))) + "\n")
    return 0
