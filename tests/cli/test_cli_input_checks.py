"""Options and patterns that no run could use are refused before any text is read (issue 36):
degenerate or unexportable split patterns, an empty ``--pattern``, numbers too large for the C
kernels; the API refuses the same patterns and empty input. Each is one line naming the option
or the pattern, and nothing is written."""

from __future__ import annotations

import os
import subprocess

import pytest

from hf_bbpe import RegexTokenizer, Tokenizer
from tests.support.cli import CLI, MIX, TAYLOR, assert_one_line_error, cli_env, run_cli

PATTERNS = {  # pattern -> what the one line says
    "(?m)^x": "tokenizer.json could not hold it",
    r"(a)\1": "tokenizer.json could not hold it",
    "a*": "can match the empty string",
    "": "--pattern is empty",
}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_pattern_training_cannot_use_is_refused_before_reading(pattern, tmp_path):
    """The input is a FIFO no one writes: a command that read it would wait forever (so the error
    comes before any counting), and the one line names the pattern."""
    fifo = tmp_path / "corpus.txt"
    os.mkfifo(fifo)
    proc = subprocess.run([*CLI, "train", str(fifo), "--vocab-size", "1000", "--pattern", pattern, "--out",
                           str(tmp_path / "out"), "--no-progress"], capture_output=True, env=cli_env(), timeout=60)
    line = assert_one_line_error(proc, PATTERNS[pattern])
    assert pattern in line.replace("\\\\", "\\")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("pattern", [p for p in PATTERNS if p])
def test_the_api_refuses_the_same_patterns_before_reading(pattern):
    read = []

    def documents():
        read.append(True)
        yield "some text"

    with pytest.raises(ValueError, match=PATTERNS[pattern]) as info:
        RegexTokenizer(pattern).train(documents(), 1000, progress=False)
    assert "\n" not in str(info.value) and not read
    with pytest.raises(ValueError, match=PATTERNS[pattern]):
        RegexTokenizer(pattern).count_chunks(documents(), progress=False)


def test_a_pattern_that_leaves_nothing_to_merge_is_refused(tmp_path):
    """``(?<=a)b`` matches single letters: training on it warned that the corpus was too small.
    Found on the text (counting shows it): one line naming the pattern, in the CLI and the API."""
    proc = run_cli("train", TAYLOR, "--vocab-size", 1000, "--pattern", "(?<=a)b", "--out", tmp_path / "out",
                   "--no-progress", check=False)
    err = proc.stderr.decode("utf-8").strip().splitlines()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr.decode("utf-8")
    assert err[-1].startswith("hf-bbpe train: error: split pattern '(?<=a)b' makes no chunk of two or more bytes")
    assert not any("too small" in line for line in err), err  # (the warning that the text is left out stays)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"^split pattern '\(\?<=a\)b' makes no chunk of two or more bytes"):
        RegexTokenizer("(?<=a)b").train(TAYLOR.read_text(encoding="utf-8"), 1000, progress=False)


def test_patterns_that_split_text_pass():
    for pattern in (r"\w+|[^\w\s]+|\s+", r" ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+", r"\p{Han}|\S+|\s+"):
        RegexTokenizer(pattern).train(TAYLOR.read_text(encoding="utf-8")[:5000], 300, progress=False)


def test_the_api_refuses_empty_input_as_the_cli_does(tmp_path):
    """``train([], 1000)`` returned the 256 bytes with a warning; it raises the CLI's words, naming
    the files when there are files."""
    for text in ([], "", iter([""])):
        with pytest.raises(ValueError, match=r"^empty input \(no text to work on\)$"):
            RegexTokenizer().train(text, 1000, progress=False)
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(ValueError, match=rf"^{tmp_path / 'empty.txt'}: empty input \(no text to work on\)$"):
        RegexTokenizer().train(files=[tmp_path / "empty.txt"], vocab_size=1000, progress=False)
    assert_one_line_error(run_cli("train", tmp_path / "empty.txt", "--vocab-size", 300, "--out", tmp_path / "o",
                                  check=False), "empty input (no text to work on)")


@pytest.mark.parametrize(("command", "option", "value"), [
    ("train", "--vocab-size", "100000000000000000000000"),
    ("train", "--workers", "100000000000000000000000"),
    ("train", "--min-frequency", "100000000000000000000000"),
    ("train", "--superword-max-words", "100000000000000000000000"),
    ("train", "--max-memory", "100000000000000000000000G"),
    ("count", "--workers", "100000000000000000000000"),
    ("extend", "--new-merges", "100000000000000000000000"),
    ("encode-corpus", "--shard-mb", "1e400"),
])
def test_numbers_too_large_for_the_kernels_name_their_option(command, option, value, mix_tok_dir, tmp_path):
    """An OverflowError from inside the C kernels named no option; argparse's one line does."""
    args = {"train": ["train", TAYLOR, "--vocab-size", "300", "--out", tmp_path / "o"],
            "count": ["count", TAYLOR, "-o", tmp_path / "c.counts"],
            "extend": ["extend", mix_tok_dir, TAYLOR, "--out", tmp_path / "o"],
            "encode-corpus": ["encode-corpus", TAYLOR, "--tokenizer", mix_tok_dir, "--out", tmp_path / "o"]}[command]
    proc = run_cli(*args, option, value, check=False)
    err = proc.stderr.decode("utf-8").strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1, err
    assert f"argument {option}" in err[0] and "OverflowError" not in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_superwords_default_to_the_papers_stage_1_pattern(tmp_path):
    """``--superwords`` without ``--pattern`` trains stage 1 with superbpe_stage1, as the paper and
    the README's recipe do, and --help says so."""
    common = [MIX, "--vocab-size", 800, "--superwords", "--no-progress", "--quiet"]
    run_cli("train", *common, "--out", tmp_path / "default")
    run_cli("train", *common, "--pattern", "superbpe_stage1", "--out", tmp_path / "paper")
    run_cli("train", *common, "--pattern", "gpt4", "--out", tmp_path / "gpt4")
    default, paper, gpt4 = (Tokenizer.from_file(tmp_path / name / "tokenizer.model") for name in ("default", "paper", "gpt4"))
    assert default.merges == paper.merges != gpt4.merges
    shown = " ".join(run_cli("train", "--help").stdout.decode().split())
    assert "with --superwords the paper's stage-1 pattern" in shown and "by default superbpe_stage1" in shown


def test_regex_tokenizer_refuses_an_empty_pattern():
    """RegexTokenizer(pattern="") silently meant GPT-4's pattern, as --pattern "" did (issue 36)."""
    from hf_bbpe import RegexTokenizer

    with pytest.raises(ValueError, match="the split pattern is empty"):
        RegexTokenizer(pattern="")
    assert RegexTokenizer().pattern == RegexTokenizer("gpt4").pattern
