"""Empty input is an error, the same way in every command that reads text: exit status 1, one line
naming the input, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import MIX, assert_one_line_error, run_cli

# (command line with TOK for the tokenizer and IN for the input, whether it reads stdin via "-")
COMMANDS = {
    "train": ["train", "IN", "--vocab-size", 300, "--out", "out", "--no-progress"],
    "count": ["count", "IN", "-o", "out.counts", "--no-progress"],
    "extend": ["extend", "TOK", "IN", "--new-merges", 10, "--out", "out", "--no-progress"],
    "audit": ["audit", "TOK", "IN"],
    "compare": ["compare", "-t", "TOK", "IN"],
    "view": ["view", "-t", "TOK", "IN"],
    "view-html": ["view", "-t", "TOK", "IN", "--html", "out.html"],
    "encode": ["encode", "TOK", "IN"],
}


def _args(name: str, tok: Path, source: str) -> list:
    return [tok if a == "TOK" else source if a == "IN" else a for a in COMMANDS[name]]


@pytest.mark.parametrize("name", COMMANDS)
def test_empty_file_is_an_error(name, mix_tok_dir, tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    proc = run_cli(*_args(name, mix_tok_dir, "empty.txt"), cwd=tmp_path, check=False)
    assert_one_line_error(proc, "empty.txt", "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.txt"]  # nothing written
    assert proc.stdout == b""


@pytest.mark.parametrize("name", COMMANDS)
def test_empty_stdin_is_an_error(name, mix_tok_dir, tmp_path):
    proc = run_cli(*_args(name, mix_tok_dir, "-"), input=b"", cwd=tmp_path, check=False)
    assert_one_line_error(proc, "<stdin>", "empty")
    assert list(tmp_path.iterdir()) == []


def test_every_file_empty_is_an_error_some_empty_is_not(mix_tok_dir, tmp_path):
    """A corpus of several files is empty only when all are; compare reports per file, so there
    any empty file is an error."""
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_bytes(b"")
    proc = run_cli("audit", mix_tok_dir, "a.txt", "b.txt", cwd=tmp_path, check=False)
    assert_one_line_error(proc, "a.txt", "b.txt", "empty")
    run_cli("audit", mix_tok_dir, "a.txt", MIX, cwd=tmp_path)
    proc = run_cli("compare", "-t", mix_tok_dir, MIX, "b.txt", cwd=tmp_path, check=False)
    assert_one_line_error(proc, "b.txt", "empty")


def test_empty_text_option_is_an_error(mix_tok_dir):
    for command in (["encode", mix_tok_dir], ["view", "-t", mix_tok_dir]):
        assert_one_line_error(run_cli(*command, "--text", "", check=False), "--text", "empty")
