"""``hf-bbpe decode``: token ids on stdin (or a file) to text on stdout."""

from __future__ import annotations

import argparse
import json
import re
import sys

from ..arguments import add_tokenizer, load
from ..errors import CommandError
from ..text_input import STDIN, decode_utf8, display_name, read_bytes


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "decode", help="token ids to text",
        description="Decode token ids from stdin (or FILE, or --ids) and write the text to stdout. Ids are "
                    "integers separated by spaces, commas or newlines, or a JSON list.",
    )
    add_tokenizer(p)
    p.add_argument("file", metavar="FILE", nargs="?", default=STDIN, help="file of ids (default: stdin)")
    p.add_argument("--ids", default=None, help="decode these ids instead of reading a file")
    p.add_argument("--errors", choices=("replace", "strict", "bytes"), default="replace",
                   help="bytes that are not UTF-8: replace them with U+FFFD (default), fail (strict), or write "
                        "the raw bytes (bytes)")
    p.set_defaults(run=run)


_PLAIN_IDS = re.compile(r"[0-9,\s]*", re.ASCII)


def parse_ids(text: str, source: str) -> list[int]:
    """Ids from ``1 2 3``, ``1,2,3`` or ``[1, 2, 3]``; an error names the bad item."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            values = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise CommandError(f"{source}: not a JSON list of ids ({exc.msg} at line {exc.lineno} "
                               f"column {exc.colno})") from None
        if not isinstance(values, list):
            raise CommandError(f"{source}: expected a JSON list of ids")
        for position, value in enumerate(values, 1):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise CommandError(f"{source}: item {position} is not a token id: {value!r}")
        return values
    words = stripped.replace(",", " ").split()
    if _PLAIN_IDS.fullmatch(stripped):  # the usual file: one pass in C, no loop per id
        return list(map(int, words))
    ids = []
    for position, word in enumerate(words, 1):
        if not (word.isascii() and word.isdigit()):
            raise CommandError(f"{source}: item {position} is not a token id: {word!r}")
        ids.append(int(word))
    return ids


def run(args: argparse.Namespace) -> int:
    if args.ids is not None and args.file != STDIN:
        raise CommandError("give either FILE or --ids, not both")
    source = "--ids" if args.ids is not None else display_name(args.file)
    text = args.ids if args.ids is not None else decode_utf8(read_bytes(args.file), source)
    ids = parse_ids(text, source)
    tok = load(args, args.tokenizer).tokenizer
    if args.errors == "bytes":
        data = tok.decode_bytes(ids)
    else:  # the engine's decoder makes the text in one call (C), with Python's codec's errors handler
        try:
            data = tok.decode(ids, errors=args.errors).encode("utf-8")
        except UnicodeDecodeError as exc:
            raise CommandError(f"the ids decode to bytes that are not UTF-8 (byte {exc.start}: "
                               f"{exc.object[exc.start:exc.start + 4]!r}); use --errors replace or bytes") from None
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0
