"""JavaScript under Node: Hugging Face's tokenizers.js (``@huggingface/tokenizers``, what
transformers.js 4 tokenizes with), installed from npm by scripts/install_tokenizers_js.sh (once per
machine: the script skips a finished install), and its ids for a saved folder
(tests/support/tokenizers_js_ids.mjs); and split patterns in V8's own RegExp, as transformers.js 3.x
compiles them (tests/support/js_regexp_split.mjs)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def node() -> str:
    """The ``node`` program; the test skips without it (in CI, where .ci/run installs it, a skip fails the run)."""
    found = shutil.which("node")
    if found is None:
        pytest.skip("node not found (Debian/Ubuntu: apt-get install nodejs npm; .ci/run installs them)")
    return found


def install_tokenizers_js() -> Path:
    """Run scripts/install_tokenizers_js.sh (a no-op once installed); a failed install fails the test."""
    node()
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "install_tokenizers_js.sh")], capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/install_tokenizers_js.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return Path(proc.stdout.strip().splitlines()[-1])


def tokenizers_js_ids(modules: Path, folder: Path, docs: list[str]) -> list[list[int]]:
    """tokenizers.js's ids for each document, from the folder's tokenizer.json and tokenizer_config.json."""
    request = json.dumps({"modules": str(modules), "folder": str(folder), "docs": docs})
    proc = subprocess.run([node(), str(ROOT / "tests" / "support" / "tokenizers_js_ids.mjs")], input=request,
                          capture_output=True, text=True, encoding="utf-8", timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def js_regexp_chunks(patterns: dict[str, str], texts: list[str]) -> dict[str, list[list[str]] | str]:
    """For each named tokenizer.json Split regex, its matches in each text under V8's ``RegExp``
    (compiled as transformers.js 3.x compiles it), or the message of the SyntaxError it raised."""
    request = json.dumps({"patterns": patterns, "texts": texts})
    proc = subprocess.run([node(), str(ROOT / "tests" / "support" / "js_regexp_split.mjs")], input=request,
                          capture_output=True, text=True, encoding="utf-8", timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {name: found.get("chunks", found.get("error")) for name, found in json.loads(proc.stdout).items()}
