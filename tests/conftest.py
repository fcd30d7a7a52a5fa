"""Fixtures shared across test layers (helpers that are plain functions live in tests/support)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import train_cli


@pytest.fixture(scope="session")
def mix_tok_dir(tmp_path_factory) -> Path:
    """A 512-token tokenizer trained by the CLI on mix-sample.txt (special <|endoftext|> = 512).

    Several test modules import this fixture; the folder is made once per session.
    """
    out = tmp_path_factory.getbasetemp() / "cli-shared" / "mix512"
    if not (out / "tokenizer.model").exists():
        out.parent.mkdir(exist_ok=True)
        train_cli(out)
    return out
