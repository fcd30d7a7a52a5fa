"""``hf-bbpe train``: learn a tokenizer from text files and write it as a folder.

The folder holds ``tokenizer.model`` (minbpe's format; ``tokenizer.vocab`` lists the tokens)
and, when the transformers integration is installed, everything ``save_pretrained`` writes, so
``AutoTokenizer.from_pretrained(folder)`` loads it.
"""

from __future__ import annotations

import argparse
import sys

from ...tokenizer import BasicTokenizer, RegexTokenizer, Tokenizer
from ..arguments import positive_int
from ..errors import CommandError
from ..output_dir import check_output, staged_folder
from ..text_input import DOCUMENT_MODES, expand_inputs, iter_documents
from ..tokenizer_spec import MODEL_FILE_IN_FOLDER

NO_SPLIT = "none"
ROLES = ("bos", "eos", "pad")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train", help="train a tokenizer on text files",
        description="Train a byte-level BPE tokenizer on text files and write a folder with tokenizer.model "
                    "(minbpe) and the save_pretrained files. Progress bars show on a terminal.",
    )
    p.add_argument("files", metavar="FILE", nargs="+", help="text files or globs ('**' recurses); '-' reads stdin")
    p.add_argument("--vocab-size", type=int, required=True,
                   help="number of tokens before special tokens: 256 bytes + merges")
    p.add_argument("--pattern", default="gpt4",
                   help=f"split pattern: gpt2, gpt4, o200k, a regex, or '{NO_SPLIT}' (no split) (default gpt4)")
    p.add_argument("--special", metavar="TOKEN", action="append", default=[],
                   help="a special token, given the next free id after training (repeatable)")
    add_role_options(p)
    p.add_argument("--out", metavar="DIR", required=True, help="output folder (created, or files replaced)")
    p.add_argument("--docs", choices=DOCUMENT_MODES, default="paragraph",
                   help="how files are cut into documents for counting: at blank lines (paragraph, default), "
                        "per line, or whole files")
    p.add_argument("--min-frequency", type=positive_int, default=1, help="stop when no pair occurs this often")
    p.add_argument("--tie-break", choices=("smallest_pair", "first_occurrence"), default="smallest_pair",
                   help="rule between pairs with equal counts (default smallest_pair, rustbpe's)")
    p.add_argument("--workers", type=positive_int, default=None, help="counting processes (default: all CPUs)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_output(args.out, folder=True)
    if args.vocab_size < 256:
        raise CommandError(f"--vocab-size must be at least 256 (the byte tokens), got {args.vocab_size}")
    if len(set(args.special)) != len(args.special):
        raise CommandError("--special: the same token is given twice")
    if any(not s for s in args.special):
        raise CommandError("--special: a special token cannot be empty")
    paths = expand_inputs(args.files)
    tok: Tokenizer = BasicTokenizer() if args.pattern == NO_SPLIT else RegexTokenizer(args.pattern)
    tok.train(
        iter_documents(paths, args.docs),
        args.vocab_size,
        tie_break=args.tie_break,
        min_frequency=args.min_frequency,
        num_workers=args.workers,
        progress=False if args.no_progress else None,
    )
    if not tok.merges and args.vocab_size > 256:
        raise CommandError(f"no merges learned from {', '.join(paths)}: the input has no two adjacent bytes "
                           "(is it empty?)")
    roles = role_tokens(args)
    specials = list(dict.fromkeys([*args.special, *roles.values()]))
    next_id = tok.n_vocab
    tok.register_special_tokens({token: next_id + i for i, token in enumerate(specials)})
    written = save_folder(tok, args.out, roles=roles)
    if not args.quiet:
        print(f"trained {len(tok.merges)} merges on {len(paths)} file(s): n_vocab {tok.n_vocab}, "
              f"{len(tok.special_tokens)} special token(s); wrote {describe_folder(args.out, written)}", file=sys.stderr)
    return 0


def add_role_options(parser: argparse.ArgumentParser) -> None:
    """``--bos-token``/``--eos-token``/``--pad-token``: named roles for transformers."""
    for role in ROLES:
        parser.add_argument(f"--{role}-token", metavar="TOKEN", default=None,
                            help=f"the {role} token for transformers (made a special token if it is not one)")


def role_tokens(args: argparse.Namespace) -> dict[str, str]:
    return {role: getattr(args, f"{role}_token") for role in ROLES if getattr(args, f"{role}_token")}


def save_folder(tok: Tokenizer, out: str, *, roles: dict[str, str] | None = None) -> list[str]:
    """Write the save_pretrained files (when transformers is there), then ``tokenizer.model`` +
    ``.vocab`` last, so the .model file is the newest (the folder loader relies on it)."""
    prefix = MODEL_FILE_IN_FOLDER.removesuffix(".model")
    with staged_folder(out) as stage:
        hf_class = transformers_class()
        if hf_class is not None:
            kwargs = {f"{role}_token": token for role, token in (roles or {}).items()}
            hf_class.from_engine(tok, **kwargs).save_pretrained(str(stage))
        tok.save(stage / prefix)
        names = sorted(p.name for p in stage.iterdir())
    return names


def describe_folder(out: str, names: list[str]) -> str:
    kinds = ["tokenizer.model"] + (["save_pretrained files"] if "tokenizer_config.json" in names else [])
    return f"{out}/ ({len(names)} files: {' + '.join(kinds)})"


def transformers_class():
    """``BBPETokenizer`` if the transformers integration is importable, else None."""
    try:
        from ...tokenization_bbpe import BBPETokenizer
    except ImportError:
        return None
    return BBPETokenizer
