"""``hf-bbpe push``: upload a tokenizer to the Hugging Face Hub (transformers' push_to_hub)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..arguments import add_tokenizer, load
from ..errors import CommandError
from ..output_dir import transformers_class
from ..tokenizer_spec import saved_by_bbpe
from .app import is_space_folder, push_space


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "push", help="push a tokenizer to the Hugging Face Hub",
        description="Upload a tokenizer as a save_pretrained folder to a Hub repository (created if needed). "
                    "A save_pretrained folder is pushed as it is (chat template and settings kept); any other "
                    "tokenizer is wrapped in BBPETokenizer first. The repository gets a model card (README.md: the "
                    "metadata the Hub reads and a 'Use in Transformers' snippet); a README.md in the folder, or one "
                    "already in the repository, is kept and only given the metadata it lacks. Uses the token of "
                    "'hf auth login', HF_TOKEN, "
                    "or --token; HF_ENDPOINT selects the server. A folder written by 'hf-bbpe app --space' is "
                    "uploaded as a Gradio Space.",
    )
    add_tokenizer(p)
    p.add_argument("repo_id", metavar="REPO_ID", help="e.g. me/my-tokenizer")
    p.add_argument("--private", action="store_true", help="create the repository as private")
    p.add_argument("--token", default=None, help="Hub access token (default: the stored login or HF_TOKEN)")
    p.add_argument("--revision", default=None, help="branch to push to")
    p.add_argument("--message", default=None, help="commit message")
    p.add_argument("--base-model", default=None,
                   help="the Hub id of the model this tokenizer belongs to (the card's base_model; default: the Hub "
                        "repository the tokenizer was loaded from, if any)")
    p.add_argument("--license", default=None, help="the card's license, a Hub license id (mit, apache-2.0, ...)")
    p.add_argument("--tag", dest="tags", metavar="TAG", action="append", default=[],
                   help="a tag for the card, beside tokenizer, bpe, byte-level-bpe, hf_bbpe (repeatable)")
    p.add_argument("--remote-code", action="store_true",
                   help="also push BBPETokenizer's code, with an auto_map for trust_remote_code=True (default: as "
                        "the folder has it; a folder without code loads everywhere as PreTrainedTokenizerFast)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    folder = Path(args.tokenizer)
    if is_space_folder(folder):
        return push_space(folder, args)
    as_saved = folder.is_dir() and saved_by_bbpe(folder / "tokenizer_config.json")
    engine = None if as_saved else load(args, args.tokenizer).tokenizer  # bad input fails before the imports
    hf_class = transformers_class()
    if hf_class is None:
        raise CommandError("push needs the transformers integration (hf_bbpe.hf.tokenization_bbpe)")
    hf_tok = hf_class.from_pretrained(str(folder)) if as_saved else hf_class.from_engine(engine)
    from ...hf.model_card import push_with_card

    readme = folder / "README.md"
    card = {"model_card": readme.read_text(encoding="utf-8"), "model_card_name": str(readme)} \
        if folder.is_dir() and readme.is_file() else {}
    result, note = push_with_card(hf_tok, args.repo_id, private=args.private or None, token=args.token,
                                  revision=args.revision, commit_message=args.message, base_model=args.base_model,
                                  license=args.license, tags=args.tags, remote_code=args.remote_code or None, **card)
    url = getattr(result, "commit_url", None) or str(result)
    print(f"pushed {args.tokenizer} to {args.repo_id}: {url}", file=sys.stderr)
    print(f"model card: {note}", file=sys.stderr)
    return 0
