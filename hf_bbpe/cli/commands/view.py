"""``hf-bbpe view``: see how tokenizers split a text, in the terminal or as an HTML page."""

from __future__ import annotations

import argparse
import sys
import warnings

from ...analysis.token_view import render_html, render_terminal, summary_line, tokenize_for_view
from ...engine.files.atomic_write import write_text_atomic
from ..arguments import (
    add_color,
    add_specials,
    add_tokenizers,
    encode_policy,
    load_any,
    non_negative_int,
    special_token_in_text,
    use_color,
    write_stdout,
)
from ..output_dir import check_output
from ..text_input import STDIN, text_argument

HTML_MAX_CHARS = 50_000


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "view", help="show token boundaries (terminal colours or an HTML page)",
        description="Show how each tokenizer splits the text: alternating background colours in a terminal "
                    "(plain text with a separator when stdout is not a terminal), or with --html one "
                    "self-contained page with the tokenizers side by side, ids and bytes on hover.",
    )
    add_tokenizers(p, any_format=True)
    p.add_argument("file", metavar="FILE", nargs="?", default=STDIN, help="text file (default: stdin)")
    p.add_argument("--text", default=None, help="view this text instead of reading a file")
    p.add_argument("--html", metavar="OUT.html", default=None, help="write an HTML page instead")
    p.add_argument("--title", default="hf-bbpe token view", help="title of the HTML page")
    p.add_argument("--max-chars", type=non_negative_int, default=HTML_MAX_CHARS,
                   help=f"draw the tokens of at most this many characters in the HTML page (default {HTML_MAX_CHARS}: "
                        "a page takes about 60 bytes per character and tokenizer); 0 = no limit")
    p.add_argument("--ids", action="store_true", help="show the id after each token")
    p.add_argument("--sep", default="|", help="separator between tokens in plain text (default '|')")
    add_color(p)
    add_specials(p, "allow")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.html:
        check_output(args.html, folder=False)
    text, source = text_argument(args.file, args.text)
    policy = encode_policy(args.specials)
    views = []
    for spec in args.tokenizers:
        loaded = load_any(args, spec)
        tok = loaded.tokenizer
        if policy["disallowed_special"] == "all":
            found = [t for t in tok.special_tokens if t in text]
            if found:
                raise special_token_in_text(source, found[0], loaded.name)
        views.append(tokenize_for_view(tok, loaded.name, text, allowed_special=policy["allowed_special"]))
    if args.html:
        write_text_atomic(args.html, render_html(views, title=args.title, show_ids=args.ids, max_chars=args.max_chars))
        for view in views:
            print(summary_line(view), file=sys.stderr)
        print(f"wrote {args.html}", file=sys.stderr)
        if args.max_chars and len(text) > args.max_chars:
            warnings.warn(f"the page shows the tokens of the first {args.max_chars} of {len(text)} characters; "
                          "pass --max-chars 0 for the full page (about 60 bytes per character and tokenizer)")
        return 0
    color = use_color(args.color)
    for i, view in enumerate(views):
        if len(views) > 1:
            write_stdout(("\n" if i else "") + f"== {view.name} ==\n")
        rendered = render_terminal(view, color=color, show_ids=args.ids, sep=args.sep)
        write_stdout(rendered if rendered.endswith("\n") else rendered + "\n")
        print(summary_line(view), file=sys.stderr)
    return 0
