"""``hf-bbpe inspect``: what is in a tokenizer, and where one token comes from."""

from __future__ import annotations

import argparse
import json
import re

from ...analysis.audit import REASON_MERGE_ORDER, REASON_NOT_UTF8_TEXT, check_reachable, is_utf8, partial_utf8_tokens
from ...analysis.text_table import format_table
from ...analysis.token_text import token_literal
from ...engine.chunking.byte_unicode import render_token
from ...engine.chunking.patterns import isolated_scanner_name, pattern_name
from ...engine.tokenizer import Tokenizer
from ...engine.training.counts_file import is_counts_file, load_counts
from ..arguments import add_tokenizer, load, positive_int, write_stdout
from ..errors import CommandError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inspect", help="vocab size, special tokens, longest tokens, a token's merge parents",
        description="Summarise a tokenizer: vocabulary size, pattern, special tokens, longest tokens and the "
                    "merged tokens that are not valid UTF-8 alone; with --token, show one token's bytes, merge "
                    "rank and merge tree. Given a counts file ('hf-bbpe count'), its pattern, distinct chunks "
                    "and their total count.",
    )
    add_tokenizer(p)
    p.add_argument("--token", metavar="ID_OR_TEXT", default=None,
                   help="a token id, or the text of a token (e.g. ' the'), to explain")
    p.add_argument("--top", type=positive_int, default=10, help="how many longest / partial tokens to list")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=run)


def _token_json(tok: Tokenizer, idx: int) -> dict:
    data = tok.vocab[idx]
    return {"id": idx, "text": render_token(data), "bytes": data.hex()}


def summary(tok: Tokenizer, name: str, top: int) -> dict:
    """The facts ``inspect`` prints, as JSON-ready data."""
    specials = set(tok.special_tokens.values())
    ordinary = [i for i in tok.vocab if i not in specials]
    longest = sorted(ordinary, key=lambda i: (-len(tok.vocab[i]), i))[:top]
    partial = partial_utf8_tokens(tok)
    return {
        "tokenizer": name,
        "n_vocab": tok.n_vocab,
        "tokens": len(tok.vocab),
        "merges": len(tok.merges),
        "byte_tokens": len(tok.vocab) - len(tok.merges) - len(tok.unmerged_tokens) - len(specials),
        "unmerged_tokens": len(tok.unmerged_tokens),
        "mode": tok.mode,
        "byte_ids": "identity" if tok.byte_ids == list(range(256)) else "permuted",
        "pattern": pattern_name(tok.plain_pattern) or tok.plain_pattern or None,
        "pre_tokenizer": None if tok.plain_pattern is not None else tok.pre_tokenizer.to_json(),  # a pipeline
        "normalizer": None if tok.normalizer is None else tok.normalizer.to_json(),
        "special_tokens": [{"token": t, "id": i} for t, i in sorted(tok.special_tokens.items(), key=lambda x: x[1])],
        "longest_tokens": [_token_json(tok, i) for i in longest],
        "partial_utf8_tokens": len(partial),
        "partial_utf8_examples": [_token_json(tok, i) for i in partial[:top]],
    }


def find_token(tok: Tokenizer, query: str) -> int:
    """A token id from an id or from the token's text (special tokens included)."""
    if query.isascii() and query.isdigit():
        idx = int(query)
        if idx not in tok.vocab:
            raise CommandError(f"--token: unknown token id {idx} (n_vocab={tok.n_vocab})")
        return idx
    if query in tok.special_tokens:
        return tok.special_tokens[query]
    idx = tok.mergeable_ranks().get(query.encode("utf-8"))
    if idx is None:
        raise CommandError(f"--token: no token has the text {query!r} (give an id, or the exact token text)")
    return idx


def explain(tok: Tokenizer, idx: int) -> dict:
    """One token: bytes, kind, merge rank, parents, full merge tree, and whether encode reaches it."""
    parents = {new: pair for pair, new in tok.merges.items()}
    rank = {new: i for i, new in enumerate(tok.merges.values())}

    def tree(i: int) -> dict:
        node = _token_json(tok, i)
        if i in parents:
            node["parents"] = [tree(p) for p in parents[i]]
        return node

    data = tok.vocab[idx]
    if idx in tok.special_tokens.values():
        kind = "special"
    elif idx in parents:
        kind = "merge"
    elif idx in tok.unmerged_tokens:
        kind = "unmerged"  # built by no merge: reached as a whole chunk ("ranks", "ignore_merges" modes)
    else:
        kind = "byte"
    info = dict(_token_json(tok, idx), kind=kind, utf8=is_utf8(data))
    if kind == "merge":
        info["merge_rank"] = rank[idx]
        info["tree"] = tree(idx)
    if kind != "special":
        found = check_reachable(tok.encode_single_piece, idx, data)
        info["own_bytes_encode_as"] = list(found.encodes_as)
        info["reachable"] = not found.reasons
        info["unreachable_reasons"] = list(found.reasons)
    return info


def _literal(token: dict) -> str:
    """A token of the JSON data (its ``bytes`` in hex) as the text output writes it."""
    return token_literal(bytes.fromhex(token["bytes"]))


def _tree_lines(node: dict, depth: int = 0) -> list[str]:
    lines = [f"{'  ' * depth}{node['id']:>7}  {_literal(node)}"]
    for child in node.get("parents", []):
        lines += _tree_lines(child, depth + 1)
    return lines


MAX_SPECIAL_LINES = 20


def special_token_lines(specials: list[dict]) -> list[str]:
    """The special tokens (``{"token", "id"}``, by id), a line each, but a run of three or more
    with consecutive ids whose names differ only in their numbers (Llama 3's 244
    ``<|reserved_special_token_N|>``, Whisper's timestamps) on one line; at most
    ``MAX_SPECIAL_LINES`` lines (``--json`` lists every token)."""
    runs: list[list[dict]] = []
    for entry in specials:
        last = runs[-1][-1] if runs else None
        if last is not None and entry["id"] == last["id"] + 1 and _shape(entry["token"]) == _shape(last["token"]):
            runs[-1].append(entry)
        else:
            runs.append([entry])
    lines = []
    for run in runs:
        if len(run) >= 3:
            first, last = run[0], run[-1]
            lines.append(f"  {first['id']:>7}-{last['id']}  {_special(first)} ... {_special(last)} "
                         f"({len(run)} tokens)")
        else:
            lines += [f"  {entry['id']:>7}  {_special(entry)}" for entry in run]
    if len(lines) > MAX_SPECIAL_LINES:
        lines = lines[:MAX_SPECIAL_LINES] + [f"  ... and {len(lines) - MAX_SPECIAL_LINES} more lines "
                                             "(--json lists every token)"]
    return lines


def _special(entry: dict) -> str:
    return token_literal(entry["token"].encode("utf-8"))


def _shape(token: str) -> str:
    return re.sub(r"\d+", "#", token)


def _text(info: dict) -> str:
    unmerged = info["unmerged_tokens"]
    lines = [
        f"tokenizer: {info['tokenizer']}",
        f"n_vocab: {info['n_vocab']} ({info['tokens']} tokens: {info['merges']} merges, {info['byte_tokens']} bytes, "
        + (f"{unmerged} that no merge builds, " if unmerged else "") + f"{len(info['special_tokens'])} special)",
        f"byte ids: {info['byte_ids']}",
        f"pattern: {pattern_text(info)}",
        f"special tokens: {len(info['special_tokens'])}",
    ]
    lines += special_token_lines(info["special_tokens"])
    lines.append("longest tokens:")
    lines += ["  " + row for row in format_table(
        ["id", "length", "token"],
        [[t["id"], len(bytes.fromhex(t["bytes"])), _literal(t)] for t in info["longest_tokens"]],
    ).splitlines()]
    lines.append(f"merged tokens that are not valid UTF-8 alone: {info['partial_utf8_tokens']}")
    lines += [f"  {t['id']:>7}  {t['bytes']}  {_literal(t)}" for t in info["partial_utf8_examples"]]
    return "\n".join(lines) + "\n"


def pattern_text(info: dict) -> str:
    """How the summary's tokenizer cuts text, in words: its pattern's name (or regex), its
    pre-tokenizer pipeline step by step when no one pattern says it, or no split."""
    if info["pattern"] is not None:
        return info["pattern"]
    if info["pre_tokenizer"] is None:
        return "(none: no split)"
    steps = info["pre_tokenizer"]
    steps = steps["pretokenizers"] if steps.get("type") == "Sequence" else [steps]
    return f"(a pre-tokenizer pipeline: {' then '.join(map(step_text, steps))})"


def step_text(step: dict) -> str:
    """One step of a pre-tokenizer pipeline (``tokenizers``' JSON form) on one line: a Split's
    pattern by its name where it is a built-in one, its behaviour, and any other setting."""
    kind = step.get("type", "?")
    if kind == "Sequence":
        return " then ".join(step_text(inner) for inner in step.get("pretokenizers", []))
    settings = []
    if kind == "Split":
        pattern = step.get("pattern", {})
        if "Regex" in pattern:
            settings.append(isolated_scanner_name(pattern["Regex"]) or repr(pattern["Regex"]))
        else:
            settings.append(f"string {pattern.get('String')!r}")
        settings.append(str(step.get("behavior", "")).lower())
        if step.get("invert"):
            settings.append("inverted")
    else:
        settings += [f"{key}={value}" for key, value in step.items() if key != "type"]
    return f"{kind}({', '.join(settings)})"


def _token_text(info: dict) -> str:
    lines = [f"token {info['id']}: {_literal(info)} ({info['kind']}), bytes {bytes.fromhex(info['bytes']).hex(' ') or '-'}"
             f"{'' if info['utf8'] else ' (not valid UTF-8 alone)'}"]
    if info["kind"] == "merge":
        left, right = info["tree"]["parents"]
        lines.append(f"merge rank: {info['merge_rank']} (0 = first merge)")
        lines.append(f"parents: {left['id']} {_literal(left)} + {right['id']} {_literal(right)}")
        lines.append("merge tree:")
        lines += ["  " + line for line in _tree_lines(info["tree"])]
    if "reachable" in info:
        if info["reachable"]:
            lines.append("reachable: yes (its bytes encode to this token)")
        else:
            why = []
            if REASON_MERGE_ORDER in info["unreachable_reasons"]:
                why.append(f"its bytes encode as {' '.join(map(str, info['own_bytes_encode_as']))}: "
                           "an earlier merge takes part of them")
            if REASON_NOT_UTF8_TEXT in info["unreachable_reasons"]:
                why.append("its bytes never occur in UTF-8 text")
            lines.append(f"reachable: no ({'; '.join(why)})")
    return "\n".join(lines) + "\n"


def counts_summary(path: str) -> dict:
    """The facts ``inspect`` prints about a counts file (checked whole, as training checks it)."""
    counts = load_counts(path)
    return {"counts_file": path, "pattern": pattern_name(counts.pattern) or counts.pattern,
            "distinct_chunks": len(counts), "total_chunks": sum(counts.counts), "documents": counts.documents,
            "input_bytes": counts.input_bytes}


def _counts_text(info: dict) -> str:
    pattern = info["pattern"] if info["pattern"] is not None else "(none: no split)"
    return (f"counts file: {info['counts_file']}\npattern: {pattern}\ndistinct chunks: {info['distinct_chunks']:,}\n"
            f"chunks in all: {info['total_chunks']:,}\n")


def run(args: argparse.Namespace) -> int:
    if is_counts_file(args.tokenizer):
        if args.token is not None:
            raise CommandError(f"{args.tokenizer}: a counts file has no tokens (--token is for tokenizers)")
        info = counts_summary(args.tokenizer)
        write_stdout(json.dumps(info, ensure_ascii=False, indent=2) + "\n" if args.json else _counts_text(info))
        return 0
    loaded = load(args, args.tokenizer)
    tok = loaded.tokenizer
    if args.token is not None:
        info = explain(tok, find_token(tok, args.token))
        write_stdout(json.dumps(info, ensure_ascii=False, indent=2) + "\n" if args.json else _token_text(info))
        return 0
    info = summary(tok, loaded.name, args.top)
    write_stdout(json.dumps(info, ensure_ascii=False, indent=2) + "\n" if args.json else _text(info))
    return 0
