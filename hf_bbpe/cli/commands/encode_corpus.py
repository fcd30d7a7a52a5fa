"""``hf-bbpe encode-corpus``: a corpus to flat token shards for pretraining (see hf_bbpe.token_shards).

Inputs are text files (cut into documents by ``--docs``), ``.jsonl`` files (``--text-column`` of
each record) and ``.parquet`` files (the same column of each row). The ids are computed on this
machine's cores, or on a Ray cluster with ``--ray``; the folder is the same either way, and a run
that was interrupted resumes when the same command runs again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ...engine.tokenizer import Tokenizer
from ...token_shards import FORMATS, local_encoder, read_manifest, write_token_shards
from ...token_shards.val_split import DEFAULT_VAL_FRACTION, DEFAULT_VAL_SEED
from ...token_shards.writer import DEFAULT_SHARD_BYTES, discard_new_run
from ..arguments import add_docs_option, add_pattern_for_ranks, add_text_column, load, open_fraction, positive_int, positive_number
from ..errors import CommandError
from ..output_dir import check_output
from ..text_input import STDIN, expand_inputs, iter_corpus_documents

DEFAULT_EOS = "<|endoftext|>"
INTERRUPTED_HINT = ("the shards written so far are kept: run the same command again to resume where it stopped "
                    "(the finished folder is byte for byte the same)")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "encode-corpus", help="encode a corpus into token shards for pretraining",
        description="Encode text, .jsonl and .parquet files into flat token shards (uint16 when the vocabulary "
                    "fits, else uint32; EOS after every document) with a document-offset index and a manifest.json, "
                    "or in the files of nanoGPT, llm.c, Megatron-Core or OLMo-core (--format). "
                    "Runs on every core, or on a Ray cluster with --ray; run the same command again to resume an "
                    "interrupted run. The folder is byte-identical however it ran.",
    )
    p.add_argument("inputs", metavar="INPUT", nargs="+",
                   help="text, .jsonl or .parquet files, or globs ('**' recurses)")
    p.add_argument("--tokenizer", required=True, metavar="TOKENIZER",
                   help="the tokenizer: a folder saved by hf_bbpe, or any file or folder 'hf-bbpe encode' reads")
    add_pattern_for_ranks(p)
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created; a folder left by an "
                   "interrupted run with the same inputs and settings is resumed)")
    p.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="encode on a Ray cluster: its address ('auto' for the cluster this machine belongs to, "
                        "'ray://HOST:10001'), or 'local' to start one here (needs hf_bbpe[ray])")
    add_text_column(p)
    add_docs_option(p, "file")
    p.add_argument("--format", choices=list(FORMATS), default="npy",
                   help="the files' layout: npy (default: .npy tokens and document offsets), nanogpt "
                        "(train.bin/val.bin, uint16), llmc (llm.c / modded-nanogpt .bin shards), megatron "
                        "(Megatron-Core .bin/.idx), olmo (OLMo-core memmaps); the same ids in each")
    p.add_argument("--val-fraction", type=open_fraction, default=None, metavar="F",
                   help=f"nanogpt, llmc: the share of documents in the val file, picked at random by --val-seed and "
                        f"each document's position (default {DEFAULT_VAL_FRACTION}, nanoGPT's)")
    p.add_argument("--val-seed", type=int, default=DEFAULT_VAL_SEED,
                   help=f"nanogpt, llmc: the seed of that choice (default {DEFAULT_VAL_SEED})")
    p.add_argument("--eos-token", metavar="TOKEN", default=None,
                   help=f"the special token put after every document (default: the folder's eos_token, else {DEFAULT_EOS})")
    p.add_argument("--shard-mb", type=positive_number, default=DEFAULT_SHARD_BYTES / 2**20,
                   help="MiB of UTF-8 text per shard: a shard ends with the document that reaches it "
                        f"(default {DEFAULT_SHARD_BYTES // 2**20})")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="encoding threads or processes here, or Ray actors with --ray (default: all CPUs; on Ray the "
                        "cluster's CPUs but one)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(run=run, interrupted_hint=INTERRUPTED_HINT)


def run(args: argparse.Namespace) -> int:
    check_output(args.out, folder=True, make_parents=True)
    shard_bytes = int(args.shard_mb * 2**20)
    if shard_bytes < 1:
        raise CommandError(f"--shard-mb must be positive, got {args.shard_mb}")
    if args.val_fraction is not None and not FORMATS[args.format].has_splits:
        raise CommandError(f"--val-fraction is for --format nanogpt or llmc; {args.format} shards are split by "
                           "their loader")
    if STDIN in args.inputs:
        raise CommandError("encode-corpus reads files, not stdin ('-'): it must read them again to resume")
    paths = expand_inputs(args.inputs)
    tok = load(args, args.tokenizer).tokenizer
    eos_token = args.eos_token or _folder_eos_token(args.tokenizer) or DEFAULT_EOS
    eos_id = tok.special_tokens.get(eos_token)
    if eos_id is None:
        raise CommandError(f"{args.tokenizer}: no special token {eos_token!r} to end documents with (its special "
                           f"tokens: {', '.join(tok.special_tokens) or 'none'}); pass --eos-token")
    source = {
        "inputs": [{"path": path, "bytes": os.path.getsize(path)} for path in paths],
        "docs": args.docs, "text_column": args.text_column, "eos_token": eos_token,
    }
    encoder = _ray_encoder(tok, args.ray, args.workers) if args.ray else local_encoder(tok, args.workers)
    out = Path(args.out)
    new_run = not (read_manifest(out) or {}).get("shards") if out.is_dir() else True
    before = set(os.listdir(out)) if out.is_dir() else None
    try:
        manifest = write_token_shards(
            iter_corpus_documents(paths, args.docs, args.text_column), tok, out, eos_id=eos_id, encoder=encoder,
            format=args.format, val_fraction=args.val_fraction, val_seed=args.val_seed, shard_bytes=shard_bytes,
            batch_bytes=shard_bytes if args.ray else 16 << 20, source=source,
            progress=False if args.no_progress else None,
        )
    except CommandError:  # bad input, named by file and line: a new run leaves nothing behind
        if new_run:
            discard_new_run(out, before)
        raise
    if not args.quiet:
        val = sum(entry.get("val_documents", 0) for entry in manifest["shards"])
        print(f"{manifest['documents']:,} documents{f' ({val:,} in val)' if val else ''}, {manifest['tokens']:,} "
              f"tokens ({args.format}, {manifest['dtype']}, EOS {eos_token!r} = {eos_id}) in "
              f"{len(manifest['shards'])} shard(s): wrote {args.out}/", file=sys.stderr)
    return 0


def _folder_eos_token(spec: str) -> str | None:
    """The ``eos_token`` that a saved folder's tokenizer_config.json names, if any."""
    config = Path(spec) / "tokenizer_config.json"
    if not config.is_file():
        return None
    try:
        token = json.loads(config.read_text(encoding="utf-8")).get("eos_token")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(token, dict):
        token = token.get("content")
    return token if isinstance(token, str) and token else None


def _ray_encoder(tok: Tokenizer, address: str, workers: int | None):
    """An encoder that runs on the Ray cluster at ``address`` (``local`` starts one here): actors
    that load the tokenizer once and encode every shard of the run."""
    try:
        from ...distributed import TextEncoderPool
        from ...distributed.ray_import import ensure_cluster
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    ensure_cluster(address, quiet=True)
    return TextEncoderPool(tok, num_actors=workers)  # one pool of actors for every shard of the run
