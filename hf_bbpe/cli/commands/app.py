"""``hf-bbpe app``: the live tokenizer page (Gradio), or a ready Hugging Face Space folder of it."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from ...engine.files.atomic_write import replaced_folder, write_text_atomic
from ..arguments import add_tokenizers, load_any, positive_int
from ..errors import CommandError
from ..output_dir import check_output
from ..tokenizer_spec import _PRESET_SPEC  # PRESET:PATH, the one spelling

SPACE_TOKENIZERS = "tokenizers"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "app", help="a live tokenizer page in the browser (Gradio), or a Space folder of it",
        description="Start a local tiktokenizer-style page: type text and every tokenizer's tokens update as you "
                    "type, as coloured pieces with counts, ids on demand and bytes on hover. With --space DIR, "
                    "write a Hugging Face Space folder instead (app.py, requirements.txt, README.md and the "
                    "tokenizer files). Needs hf_bbpe[app] (Gradio).",
    )
    add_tokenizers(p, any_format=True)
    p.add_argument("--title", default="hf-bbpe live tokenizer", help="page title")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=positive_int, default=7860, help="port (default 7860)")
    p.add_argument("--space", metavar="DIR", default=None, help="write a Space folder here instead of serving")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.space:
        check_output(args.space, folder=True)
    loaded = [load_any(args, spec) for spec in args.tokenizers]  # bad input fails before Gradio loads
    if args.space:
        write_space(Path(args.space), args.tokenizers, args.title)
        print(f"wrote the Space folder {args.space} (app.py, requirements.txt, README.md, "
              f"{len(args.tokenizers)} tokenizer(s))", file=sys.stderr)
        return 0
    from ...analysis.live_app import APP_CSS, build_app

    try:
        app = build_app([(t.name, t.tokenizer) for t in loaded], title=args.title)
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    print(f"serving on http://{args.host}:{args.port} (Ctrl-C stops)", file=sys.stderr)
    app.launch(server_name=args.host, server_port=args.port, css=APP_CSS, quiet=True, footer_links=[])
    return 0


def write_space(folder: Path, specs: list[str], title: str) -> None:
    """A Space folder: the tokenizer files copied under ``tokenizers/``, an ``app.py`` that opens
    them as ``hf-bbpe app`` does, its requirements and the Space card."""
    # built beside ``folder`` and switched in whole (atomic_write.replaced_folder); other files stay
    with replaced_folder(folder, (SPACE_TOKENIZERS, "app.py", "requirements.txt", "README.md")) as stage:
        _fill_space(stage, specs, title)


def _fill_space(folder: Path, specs: list[str], title: str) -> None:
    space_specs = []
    for i, spec in enumerate(specs):
        source, preset = Path(spec), None
        if not source.exists() and (match := _PRESET_SPEC.match(spec)):
            preset, source = match.group(1), Path(match.group(2))
        target = Path(SPACE_TOKENIZERS) / str(i) / source.name
        if (folder / target).exists():
            shutil.rmtree(folder / target) if (folder / target).is_dir() else (folder / target).unlink()
        (folder / target).parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, folder / target)
        else:
            shutil.copy2(source, folder / target)
        space_specs.append(f"{preset}:{target.as_posix()}" if preset else target.as_posix())
    write_text_atomic(folder / "app.py", _APP_PY.format(specs=space_specs, title=title))
    write_text_atomic(folder / "requirements.txt", "hf_bbpe[app,sentencepiece]\n")
    write_text_atomic(folder / "README.md", _SPACE_CARD.format(title=title))


def is_space_folder(folder: Path) -> bool:
    """True for a folder ``hf-bbpe app --space`` wrote (``push`` uploads it as a Space)."""
    card = folder / "README.md"
    return (folder / "app.py").is_file() and card.is_file() and \
        "sdk: gradio" in card.read_text(encoding="utf-8", errors="replace")


def push_space(folder: Path, args: argparse.Namespace) -> int:
    """Upload a Space folder to ``args.repo_id`` as a Gradio Space (created if needed)."""
    from huggingface_hub import HfApi

    api = HfApi(token=args.token)
    api.create_repo(args.repo_id, repo_type="space", space_sdk="gradio", private=args.private or None, exist_ok=True)
    info = api.upload_folder(folder_path=str(folder), repo_id=args.repo_id, repo_type="space",
                             revision=args.revision, commit_message=args.message or "Upload the hf-bbpe live app")
    url = getattr(info, "commit_url", None) or str(info)
    print(f"pushed the Space {folder} to {args.repo_id}: {url}", file=sys.stderr)
    return 0


_APP_PY = '''"""A live tokenizer page written by `hf-bbpe app --space`: type text, see every tokenizer's tokens."""

from hf_bbpe.analysis.live_app import APP_CSS, build_app
from hf_bbpe.cli.tokenizer_spec import load_view_tokenizer

TOKENIZERS = {specs!r}

loaded = [load_view_tokenizer(spec) for spec in TOKENIZERS]
demo = build_app([(t.name, t.tokenizer) for t in loaded], title={title!r})

if __name__ == "__main__":
    demo.launch(css=APP_CSS)
'''

_SPACE_CARD = '''---
title: {title}
sdk: gradio
app_file: app.py
pinned: false
---

A live tokenizer page made with `hf-bbpe app --space`: type text and see how each tokenizer splits it.
'''
