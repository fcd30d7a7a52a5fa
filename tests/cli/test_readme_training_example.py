"""The README's first example (train on corpus.txt, register a special token, encode, save) learns
the same merges as ``hf-bbpe train corpus.txt`` with the command's defaults, on a file with
``\\n`` and one with ``\\r\\n`` line ends. The example is run as the README writes it, at a smaller
vocabulary size."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hf_bbpe import RegexTokenizer, Tokenizer
from tests.support.cli import MIX, run_cli

README = Path(__file__).resolve().parents[2] / "README.md"
VOCAB = 1024


def first_example() -> str:
    text = README.read_text(encoding="utf-8")
    code = re.search(r"## Train, encode, save\n+```python\n(.*?)```", text, re.S).group(1)
    assert code.count("32768") == 2 and "corpus.txt" in code
    return code.replace("32768", str(VOCAB))


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_readme_example_learns_the_merges_of_the_command(line_end, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(MIX.read_text(encoding="utf-8").replace("\n", line_end).encode("utf-8"))
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(first_example(), "README.md", "exec"), scope)  # noqa: S102 - the README's own code
    tok = scope["tok"]
    assert (tmp_path / "tok32k.model").is_file()
    run_cli("train", "corpus.txt", "--vocab-size", VOCAB, "--out", "cli", "--no-progress", "--quiet", cwd=tmp_path)
    assert Tokenizer.from_file(tmp_path / "cli" / "tokenizer.model").merges == tok.merges
    # what the README said before: a file object, one document per line; the merges differ
    lines = RegexTokenizer("gpt4")
    with open(corpus, encoding="utf-8") as f:
        lines.train(f, VOCAB, num_workers=1, progress=False)
    assert lines.merges != tok.merges
