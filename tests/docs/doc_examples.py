"""Find and run the code blocks of the README and of docs/ (tests/docs/test_doc_examples.py).

A page runs as a notebook would: its blocks in order, in one temporary folder that holds real
files from tests/data (``corpus.txt``, ``domain.txt``, ``parity/``, ``gpt2/``, ``o200k_base.tiktoken``), the
``python`` blocks in one namespace, the ``bash`` blocks in a shell where ``hf-bbpe`` and
``python`` are this checkout's. So a later block may use what an earlier one made, as a reader
who follows the page does. A bash block made only of plain ``hf-bbpe`` commands (no pipes,
redirections or globs) runs them in this process, through ``hf_bbpe.cli.main``: the same code
as the console script, without paying transformers' import once per command.

A block that cannot run here says why, on the line before its fence:
``<!-- skip: needs network (the Hub) -->``. ``text`` blocks are output (``--help``), not code.
Any other language (``js``, ``toml``...) must carry a skip reason.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = ("python", "bash")
OUTPUT = ("text",)
SKIP = re.compile(r"^\s*<!--\s*skip:\s*(.+?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
PLAIN_COMMAND = re.compile(r"^hf-bbpe [^|<>;&$`*?]*$")


@dataclass
class Block:
    """One fenced code block: its page, the line of its opening fence (1-based), language, code,
    and the reason it does not run (None: it runs)."""

    page: Path
    line: int
    lang: str
    code: str
    skip: str | None

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order (indented fences, as inside list items, included)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening or not opening.group(2):
            i += 1
            continue
        indent, lang = opening.group(1), opening.group(2)
        previous = next((line for line in reversed(lines[:i]) if line.strip()), "")
        reason = SKIP.match(previous)
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{page}:{i + 1}: a code block that never closes")
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:end])
        found.append(Block(page, i + 1, lang, code + "\n", reason.group(1) if reason else None))
        i = end + 1
    return found


def workspace(folder: Path) -> dict[str, str]:
    """Fill ``folder`` with the examples' files and shims; returns the environment for bash blocks."""
    shutil.copy(DATA / "text" / "mix-sample.txt", folder / "corpus.txt")
    shutil.copy(DATA / "text" / "taylorswift.txt", folder / "domain.txt")
    shutil.copytree(DATA / "text" / "parity", folder / "parity")
    shutil.copy(DATA / "tiktoken" / "o200k_base.tiktoken", folder / "o200k_base.tiktoken")
    (folder / "gpt2").mkdir()
    for name in ("encoder.json", "vocab.bpe"):
        shutil.copy(DATA / "gpt2" / name, folder / "gpt2" / name)
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    for name, command in (("hf-bbpe", f'"{sys.executable}" -m hf_bbpe.cli'), ("python", f'"{sys.executable}"')):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        shim.chmod(0o755)
    env = dict(os.environ)
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1",
               PYTHONIOENCODING="utf-8")
    env.pop("HF_BBPE_TRACEBACK", None)
    return env


def run_page(page: Path, folder: Path) -> int:
    """Run every block of ``page`` that runs, in ``folder`` (the caller's cwd); returns how many ran."""
    env = workspace(folder)
    namespace: dict = {"__name__": "__main__"}
    ran = 0
    for block in blocks(page):
        if block.skip or block.lang not in RUNNABLE:
            continue
        commands = [line.split(" #")[0].strip() for line in block.code.splitlines()]
        commands = [c for c in commands if c and not c.startswith("#")]
        if block.lang == "python":
            # blank lines in front, so that a traceback's line numbers are the page's
            exec(compile("\n" * block.line + block.code, str(block.page), "exec"), namespace)  # noqa: S102
        elif all(PLAIN_COMMAND.match(c) for c in commands):
            import warnings

            from hf_bbpe.cli.main import main

            formatwarning = warnings.formatwarning  # main sets its one-line format for the process
            try:
                for command in commands:
                    status = main(shlex.split(command)[1:])
                    assert status == 0, f"{block.where()}: {command!r} exited with {status}"
            finally:
                warnings.formatwarning = formatwarning
        else:
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=folder, env=env,
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode:
                raise AssertionError(f"{block.where()}: the bash block failed ({proc.returncode}):\n"
                                     f"{block.code}\n--- stderr:\n{proc.stderr}--- stdout:\n{proc.stdout}")
        ran += 1
    return ran
