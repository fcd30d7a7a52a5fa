"""``hf-bbpe convert``: between GPT-2 files, tiktoken ranks, minbpe .model, tokenizer.json and
save_pretrained folders (the conversion package does the work)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...engine.chunking.patterns import pattern_name, resolve_pattern
from ...engine.tokenizer import Tokenizer
from ..arguments import PATTERN_NAMES, add_bos_flag, add_chat_template, add_import_flags, add_role_options, \
    apply_roles, import_options, parse_special_assignment
from ..errors import CommandError
from ..output_dir import check_output, save_folder
from ..tokenizer_spec import conversion_function, load_tokenizer

SOURCES = ("auto", "gpt2", "tiktoken", "tekken", "minbpe", "hf", "preset")
TARGETS = ("gpt2", "tiktoken", "minbpe", "hf")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "convert", help="convert between tokenizer formats",
        description="Read a tokenizer in one format and write it in another. Sources: gpt2 (a folder, or "
                    "encoder.json [vocab.bpe], or vocab.json merges.txt), tiktoken (a rank file, also Meta's "
                    "tokenizer.model; a known preset's file gets its pattern, special tokens and roles, another needs "
                    "--pattern and --special), tekken (Mistral's tekken.json), minbpe (.model), "
                    "hf (tokenizer.json or a folder with one), preset (NAME PATH, e.g. llama3 tokenizer.model), "
                    "auto (the format read from the content, default; a known rank file gets its preset; two files: "
                    "GPT-2's pair, in either order). Targets: gpt2 (a folder with encoder.json + vocab.bpe), "
                    "tiktoken (a rank file), minbpe (PREFIX.model + PREFIX.vocab), hf (a save_pretrained folder, "
                    "or a single tokenizer.json when OUTPUT ends in .json). Nothing is written if the conversion fails.",
    )
    p.add_argument("inputs", metavar="INPUT", nargs="+", help="input file(s) or folder (see the sources above)")
    p.add_argument("--from", dest="source", choices=SOURCES, default="auto", help="input format (default auto)")
    p.add_argument("--to", dest="target", choices=TARGETS, required=True, help="output format")
    p.add_argument("-o", "--output", required=True, help="output file, folder or prefix")
    p.add_argument("--pattern", default=None,
                   help="split pattern for formats that do not record one: tiktoken ranks (default: a known "
                        "preset's file gets its preset's; another needs it, or with --from tiktoken GPT-4's is assumed, "
                        "with a warning) and GPT-2 files (default gpt2; SuperBPE's stage 2 for a pair whose tokens span "
                        f"words); {PATTERN_NAMES}, superbpe_stage2 (an isolated Split) or a regex")
    add_import_flags(p)
    p.add_argument("--special", metavar="TOKEN=ID", action="append", default=[],
                   help="add a special token with its id (repeatable)")
    add_role_options(p, help="the {role} token for transformers and tokenizer.json (made a special token if it is "
                            "not one; default: the tokenizer's own, e.g. a preset's)")
    add_bos_flag(p)
    p.add_argument("--force", action="store_true",
                   help="write tiktoken ranks even when rank-based BPE would encode differently (with a warning)")
    add_chat_template(p)
    p.set_defaults(run=run)


def read_source(source: str, inputs: list[str], pattern: str | None, *, strict: bool = True,
                check_hash: bool = True) -> Tokenizer:
    """The tokenizer the inputs describe, in format ``source``; ``strict`` and ``check_hash`` are
    the conversion package's options (``--no-strict``, ``--no-check-hash``)."""
    def arity(low: int, high: int) -> None:
        if not low <= len(inputs) <= high:
            expected = str(low) if low == high else f"{low} or {high}"
            raise CommandError(f"--from {source} takes {expected} INPUT(s), got {len(inputs)}")

    for path in inputs[1:] if source == "preset" else inputs:
        if not Path(path).exists():
            if source == "auto" and ":" in path:
                continue
            raise CommandError(f"{path}: no such file or folder")
    if not check_hash and source not in ("auto", "preset"):
        raise CommandError(f"--no-check-hash applies to presets only, not to --from {source}")
    if not strict and source not in ("auto", "hf"):
        raise CommandError(f"--no-strict applies to tokenizer.json files only, not to --from {source}")
    if source == "auto":
        arity(1, 2)
        if len(inputs) == 2:  # GPT-2's two files, in either order
            if not strict or not check_hash:
                raise CommandError("--no-strict and --no-check-hash do not apply to GPT-2's two files")
            return conversion_function("load")(tuple(inputs), pattern=pattern)
        return load_tokenizer(inputs[0], pattern=pattern, strict=strict, check_hash=check_hash).tokenizer
    if source == "gpt2":
        arity(1, 2)
        first = Path(inputs[0])
        gpt2_pattern = {"pattern": pattern or "gpt2"}  # the files do not record it
        if len(inputs) == 2:
            return conversion_function("from_gpt2_files")(*conversion_function("gpt2_file_pair")(*inputs),
                                                          **gpt2_pattern)
        if first.name in ("vocab.json", "merges.txt"):
            first = first.parent
        if first.is_dir():
            if (first / "encoder.json").exists():
                return conversion_function("from_gpt2_files")(first / "encoder.json", first / "vocab.bpe",
                                                              **gpt2_pattern)
            return conversion_function("from_transformers_gpt2")(first, **gpt2_pattern)
        if first.name not in ("encoder.json", "vocab.bpe"):
            raise CommandError(f"{first}: give a GPT-2 folder, or encoder.json and vocab.bpe")
        return conversion_function("from_gpt2_files")(first.with_name("encoder.json"), first.with_name("vocab.bpe"),
                                                      **gpt2_pattern)
    if source == "tiktoken":
        arity(1, 1)
        return conversion_function("from_tiktoken")(inputs[0], pattern=pattern)  # a known file: its preset
    if source == "tekken":
        arity(1, 1)
        return conversion_function("from_tekken")(inputs[0])
    if source == "minbpe":
        arity(1, 1)
        return conversion_function("from_minbpe")(inputs[0])
    if source == "hf":
        arity(1, 1)
        path = Path(inputs[0])
        return conversion_function("from_tokenizer_json")(path / "tokenizer.json" if path.is_dir() else path,
                                                          strict=strict)
    arity(2, 2)  # preset
    return conversion_function("load_preset")(inputs[0], inputs[1], check_hash=check_hash)


def check_target(target: str, output: str) -> None:
    """Fail before reading anything if ``write_target`` could not write ``output``."""
    if target == "hf" and not output.endswith(".json"):
        check_output(output, folder=True)
    elif target == "gpt2":
        check_output(output, folder=True, make_parents=True)  # to_gpt2_files creates the folder
    elif target == "minbpe":
        prefix = output.removesuffix(".model")
        for suffix in (".model", ".vocab"):
            check_output(prefix + suffix, folder=False)
    else:
        check_output(output, folder=False)


def write_target(tok: Tokenizer, target: str, output: str, *, force: bool, chat: dict | None = None,
                 remote_code: bool = False) -> None:
    """Write ``tok`` as ``target`` at ``output`` (the conversion package writes atomically);
    ``chat`` is a ``--chat-template`` value, for a save_pretrained folder only (``run`` checks)."""
    if target == "hf" and not output.endswith(".json"):
        save_folder(tok, output, chat=chat, remote_code=remote_code)
        return
    if target == "gpt2":
        conversion_function("to_gpt2_files")(tok, output)
    elif target == "tiktoken":
        if force:
            conversion_function("to_tiktoken")(tok, output, force=True)
        else:
            conversion_function("to_tiktoken")(tok, output)
    elif target == "minbpe":
        conversion_function("to_minbpe")(tok, output.removesuffix(".model"))
    else:
        conversion_function("to_tokenizer_json")(tok, output)


def run(args: argparse.Namespace) -> int:
    check_target(args.target, args.output)
    for given, option in ((args.chat_template, "--chat-template"), (args.remote_code, "--remote-code")):
        if given and (args.target != "hf" or args.output.endswith(".json")):
            raise CommandError(f"{option} applies to --to hf with a folder OUTPUT (a save_pretrained folder)")
    extra = dict(parse_special_assignment(s) for s in args.special)
    options = import_options(args)
    tok = read_source(args.source, args.inputs, args.pattern, strict=options["strict"],
                      check_hash=options["check_hash"])
    if extra:
        tok.register_special_tokens(extra)
    apply_roles(tok, args)
    write_target(tok, args.target, args.output, force=args.force, chat=args.chat_template,
                 remote_code=args.remote_code)
    notes = []
    if args.target in ("tiktoken", "gpt2") and not tok.is_plain:
        notes.append(f"{args.target} files cannot hold this tokenizer's normalizer ({tok.normalizer}) or pre-tokenizer "
                     f"pipeline ({tok.pre_tokenizer}); convert to tokenizer.json or minbpe to keep them")
    elif args.target == "tiktoken" and (tok.special_tokens or tok.pattern):
        notes.append("a .tiktoken file holds the ranks only: pass the pattern and special tokens "
                     f"({len(tok.special_tokens)}) to tiktoken.Encoding yourself")
    elif args.target == "gpt2" and tok.pattern != resolve_pattern("gpt2"):
        notes.append("GPT-2 files do not record the split pattern, and readers assume GPT-2's; this tokenizer's "
                     f"is {pattern_name(tok.pattern) or repr(tok.pattern)} (pass --pattern when converting back)")
    if args.target in ("tiktoken", "gpt2") and tok.roles.add_bos_token:
        notes.append(f"{args.target} files do not hold the rule that puts {tok.roles.bos_token} before each "
                     "sequence; convert to hf or minbpe to keep it")
    print(f"wrote {args.output} ({args.target}, n_vocab {tok.n_vocab})", file=sys.stderr)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
