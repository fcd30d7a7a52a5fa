"""docs/cli.md says what ``hf-bbpe --help`` says: its generated part equals what
scripts/make_cli_docs.py makes from the parser (run the script after changing an option)."""

from __future__ import annotations

import subprocess
import sys

from tests.docs.doc_examples import ROOT


def test_cli_page_equals_the_parsers_help():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_cli_docs.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_cli_page_lists_every_command():
    from hf_bbpe.cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [name for name in commands if f"## hf-bbpe {name}\n" not in page]
    assert not missing, f"docs/cli.md lacks: {missing}"
