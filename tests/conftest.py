"""Fixtures shared across test layers (helpers that are plain functions live in tests/support)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli import train_cli
from tests.support.cpu import is_cpu_feature_skip
from tests.support.llama_cpp import LlamaCpp, build_llama_cpp
from tests.support.javascript import install_tokenizers_js

# tiktoken's load_tiktoken_bpe keeps a copy of every file it reads, local ones too, under a key made
# of the path alone (/tmp/data-gym-cache); tests write different rank files at paths a later session
# can reuse, and would then compare against a stale copy. The empty string turns that cache off.
os.environ["TIKTOKEN_CACHE_DIR"] = ""


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


@pytest.fixture(scope="session")
def llama_cpp() -> LlamaCpp:
    """llama.cpp's source and tokenizer, built from source once per machine (scripts/setup.sh
    starts the build; without it the first GGUF test waits for it)."""
    return build_llama_cpp()


@pytest.fixture(scope="session")
def tokenizers_js() -> Path:
    """The folder whose node_modules holds tokenizers.js, installed from npm once per machine
    (scripts/setup.sh installs it; without it the first JavaScript test does)."""
    return install_tokenizers_js()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI (``CI=true``) a skipped test fails the run: every reference system is installed there,
    so a skip can only mean something is broken (a missing package, a missing browser). The one
    exception is a test that needs a CPU feature this machine lacks (tests/support/cpu.py): it is
    reported as not run on this CPU, and does not fail the run."""
    if os.environ.get("CI") != "true" or exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    cpu_skips = [report for report in skipped if is_cpu_feature_skip(report)]
    if cpu_skips:
        reporter.write_line(f"CI: {len(cpu_skips)} test(s) need a CPU feature this machine lacks; not run here.", yellow=True)
    if len(skipped) > len(cpu_skips):
        reporter.write_line(f"CI: {len(skipped) - len(cpu_skips)} test(s) skipped; in CI every test must run.", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
