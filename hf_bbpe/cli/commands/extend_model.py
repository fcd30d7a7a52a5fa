"""``hf-bbpe extend-model``: add tokens to a safetensors checkpoint (tokenizer, embedding, LM head)
without loading the model, with ``hf_bbpe.surgery.extend_checkpoint``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..arguments import add_role_options, non_negative_int, positive_int, role_tokens
from ..errors import CommandError
from ..output_dir import check_output
from ..text_input import read_text
from ..tokenizer_spec import saved_by_bbpe

# surgery.TOKEN_INIT_METHODS, written out: importing surgery imports torch (a test keeps them equal)
INITS = ("mean", "subtoken_mean", "subtoken_scaled", "subtoken_damped", "normal", "zeros")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "extend-model", help="add tokens to a model checkpoint (tokenizer + embeddings)",
        description="Add tokens to the tokenizer of a safetensors checkpoint folder and grow its input "
                    "embedding and LM head to match, without loading the model (old rows stay bit-identical, "
                    "tied weights stay tied, config.json follows). Needs the torch extra.",
    )
    p.add_argument("checkpoint", metavar="CKPT_DIR", help="folder with config.json, model.safetensors (or shards) "
                                                          "and the tokenizer")
    p.add_argument("--out", metavar="DIR", required=True, help="output checkpoint folder")
    p.add_argument("--add", metavar="TOKEN", action="append", default=[], help="a token to add (repeatable)")
    p.add_argument("--tokens-file", metavar="FILE", default=None, help="tokens to add, one per line")
    p.add_argument("--special", action="store_true", help="add them as special tokens (never split)")
    p.add_argument("--init", choices=INITS, default="mean",
                   help="new rows: mean of the old rows (default), mean of the rows of the ids each token's text "
                        "encodes to (subtoken_mean; subtoken_scaled halves the LM head rows, subtoken_damped "
                        "pulls them 20%% toward the mean row), normal noise, or zeros (docs/extension.md: 'Which init')")
    add_role_options(p, help="declare this token as {role} (added as special if new; config ids follow)")
    p.add_argument("--pad-to-multiple-of", type=positive_int, default=None,
                   help="round the number of rows up to a multiple of this")
    p.add_argument("--tokenizer", metavar="DIR", default=None,
                   help="the checkpoint's tokenizer folder, if not inside CKPT_DIR")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed for --init normal")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--link", action="store_true",
                   help="hard-link unchanged shards instead of copying them (never write into them afterwards)")
    p.set_defaults(run=run)


def load_hf_tokenizer(folder: Path):
    """The transformers tokenizer of a folder: BBPETokenizer for folders it saved, else AutoTokenizer's."""
    if not folder.is_dir():
        raise CommandError(f"{folder}: no such folder")
    if saved_by_bbpe(folder / "tokenizer_config.json"):
        from ...hf.tokenization_bbpe import BBPETokenizer

        return BBPETokenizer.from_pretrained(str(folder))
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


def run(args: argparse.Namespace) -> int:
    check_output(args.out, folder=True, make_parents=True)  # extend_checkpoint creates missing parents
    if Path(args.out).exists() and not args.overwrite:
        raise CommandError(f"{args.out}: already exists (pass --overwrite to replace it)")
    tokens = list(args.add)
    if args.tokens_file:
        tokens += [line for line in read_text(args.tokens_file).splitlines() if line]
    roles = role_tokens(args)
    if not tokens and not roles:
        raise CommandError("nothing to add: give --add TOKEN, --tokens-file or a --{bos,eos,pad}-token")
    ckpt = Path(args.checkpoint)
    if not (ckpt / "config.json").is_file():
        raise CommandError(f"{ckpt}: not a checkpoint folder (no config.json)")
    try:
        from ... import surgery
    except ImportError as exc:
        raise CommandError(f"extend-model needs the torch extra ({exc})") from None
    tokenizer = load_hf_tokenizer(Path(args.tokenizer or ckpt))
    result = surgery.extend_checkpoint(ckpt, args.out, tokenizer, tokens, special=args.special, init=args.init,
                                       pad_to_multiple_of=args.pad_to_multiple_of, roles=roles or None,
                                       seed=args.seed, overwrite=args.overwrite, link=args.link)
    added = ", ".join(f"{t!r}={i}" for t, i in zip(result.tokens, result)) or "none"
    print(f"added {len(result)} token(s) ({added}); skipped {len(result.skipped)}; embedding rows "
          f"{result.num_rows}; wrote {args.out}", file=sys.stderr)
    return 0
