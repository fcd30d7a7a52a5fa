"""``scripts/demo.py`` (what ``bash scripts/demo.sh`` runs once its venv is set up) works, and shows
tokens as the audit and inspect do: escaped once, part of a character as \\xNN."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli import cli_env

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_and_shows_tokens_escaped_once():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], capture_output=True, env=cli_env(),
                          timeout=300)
    out = proc.stdout.decode("utf-8")
    assert proc.returncode == 0, proc.stderr.decode("utf-8")
    assert r"'\xd0' '\x9f' 'р' 'и'" in out and "\\\\" not in out, out  # the first letter of Привет in two bytes
    assert "same ids as the engine on 200 documents" in out
