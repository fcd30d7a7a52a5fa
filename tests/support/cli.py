"""Helpers for the ``hf-bbpe`` tests: run the real command in a subprocess, train small tokenizers.

Imported by the tests in tests/cli and tests/analysis; the session fixture ``mix_tok_dir`` built
from ``train_cli`` lives in tests/conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


DATA = Path(__file__).resolve().parents[1] / "data"
MIX = DATA / "text" / "mix-sample.txt"
TAYLOR = DATA / "text" / "taylorswift.txt"
GPT2_DIR = DATA / "gpt2"
MODULE_CLI = [sys.executable, "-m", "hf_bbpe.cli"]
SCRIPT = Path(sys.executable).parent / "hf-bbpe"  # the console script pip installs beside python
# The real installed program when it is there (always in scripts/test.sh's venvs and in CI).
CLI = [str(SCRIPT)] if SCRIPT.exists() or os.environ.get("CI") == "true" else MODULE_CLI


def cli_env() -> dict:
    env = dict(os.environ)
    env.pop("HF_BBPE_TRACEBACK", None)
    env["PYTHONIOENCODING"] = "utf-8"
    env["HF_HUB_OFFLINE"] = "1"
    return env


def run_cli(*args, input: bytes | str | None = None, cwd: Path | None = None, check: bool = True,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``hf-bbpe ARGS`` (the console script) with stdin ``input``; bytes out. ``check`` wants exit 0."""
    if isinstance(input, str):
        input = input.encode("utf-8")
    proc = subprocess.run(CLI + [str(a) for a in args], input=input, capture_output=True, cwd=cwd,
                          env=cli_env(), timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"hf-bbpe {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stderr.decode('utf-8', 'replace')}")
    return proc


def cli_in_process(*args) -> str:
    """Run ``hf-bbpe ARGS`` in this process (no interpreter start, no second import of transformers
    and torch: for fixtures that run heavy commands many times); its stdout. Exit 0 is asserted."""
    import contextlib
    import io

    from hf_bbpe.cli.main import main

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")  # with .buffer, as commands writing bytes need
    with contextlib.redirect_stdout(out):
        status = main([str(a) for a in args])
    out.flush()
    assert status == 0, f"hf-bbpe {' '.join(map(str, args))} failed ({status})"
    return raw.getvalue().decode("utf-8")


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """The command failed with exit status 1 and one line on stderr containing every needle."""
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 1, (proc.returncode, err)
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def train_cli(out: Path, corpus: Path = MIX, vocab_size: int = 512, *extra) -> Path:
    """Train with the CLI (gpt4 pattern, <|endoftext|>) into folder ``out``; returns the .model path."""
    run_cli("train", corpus, "--vocab-size", vocab_size, "--special", "<|endoftext|>", "--out", out, *extra)
    return out / "tokenizer.model"


def save_model_file(tok, folder: Path, name: str) -> Path:
    """Save an engine tokenizer as ``folder/name.model`` (for tests that need a file, not a train run)."""
    tok.save(folder / name)
    return folder / f"{name}.model"
