"""``hf-bbpe push``: upload a tokenizer to the Hugging Face Hub (transformers' push_to_hub)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..arguments import add_tokenizer, load
from ..errors import CommandError
from ..tokenizer_spec import saved_by_bbpe
from ..output_dir import transformers_class
from .app import is_space_folder, push_space


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "push", help="push a tokenizer to the Hugging Face Hub",
        description="Upload a tokenizer as a save_pretrained folder to a Hub repository (created if needed). "
                    "A save_pretrained folder is pushed as it is (chat template and settings kept); any other "
                    "tokenizer is wrapped in BBPETokenizer first. Uses the token of 'hf auth login', HF_TOKEN, "
                    "or --token; HF_ENDPOINT selects the server. A folder written by 'hf-bbpe app --space' is "
                    "uploaded as a Gradio Space.",
    )
    add_tokenizer(p)
    p.add_argument("repo_id", metavar="REPO_ID", help="e.g. me/my-tokenizer")
    p.add_argument("--private", action="store_true", help="create the repository as private")
    p.add_argument("--token", default=None, help="Hub access token (default: the stored login or HF_TOKEN)")
    p.add_argument("--revision", default=None, help="branch to push to")
    p.add_argument("--message", default=None, help="commit message")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    folder = Path(args.tokenizer)
    if is_space_folder(folder):
        return push_space(folder, args)
    as_saved = folder.is_dir() and saved_by_bbpe(folder / "tokenizer_config.json")
    engine = None if as_saved else load(args, args.tokenizer).tokenizer  # bad input fails before the imports
    hf_class = transformers_class()
    if hf_class is None:
        raise CommandError("push needs the transformers integration (hf_bbpe.tokenization_bbpe)")
    hf_tok = hf_class.from_pretrained(str(folder)) if as_saved else hf_class.from_engine(engine)
    kwargs = {"private": args.private or None, "token": args.token}
    if args.revision:
        kwargs["revision"] = args.revision
    if args.message:
        kwargs["commit_message"] = args.message
    result = hf_tok.push_to_hub(args.repo_id, **kwargs)
    url = getattr(result, "commit_url", None) or str(result)
    print(f"pushed {args.tokenizer} to {args.repo_id}: {url}", file=sys.stderr)
    return 0
