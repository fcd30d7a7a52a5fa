"""`hf-bbpe train --language NAME=FILE ...`, driven as a real program: the folder's merges equal the
library's parity-aware training on the same files, and bad parity options are one-line errors."""

from __future__ import annotations

from pathlib import Path

from hf_bbpe import ParityConfig, RegexTokenizer, Tokenizer
from tests.support.cli import assert_one_line_error, run_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "text" / "parity"


def test_train_by_language_equals_the_library(tmp_path):
    out = tmp_path / "parity"
    run_cli("train", "--language", f"en={DATA / 'en.txt'}", "--language", f"ru={DATA / 'ru.txt'}",
            "--language", f"zh={DATA / 'zh.txt'}", "--parity-dev", f"en={DATA / 'en.dev.txt'}",
            "--parity-dev", f"ru={DATA / 'ru.dev.txt'}", "--parity-dev", f"zh={DATA / 'zh.dev.txt'}",
            "--parity-variant", "window", "--parity-window-size", 10, "--tie-break", "huggingface",
            "--vocab-size", 600, "--out", out, "--no-progress", "--quiet")
    got = Tokenizer.from_file(out / "tokenizer.model")
    ref = RegexTokenizer("gpt4")
    ref.train(languages={name: [DATA / f"{name}.txt"] for name in ("en", "ru", "zh")}, vocab_size=600,
              tie_break="huggingface", docs="paragraph", progress=False,
              parity=ParityConfig(variant="window", window_size=10,
                                  dev={name: [DATA / f"{name}.dev.txt"] for name in ("en", "ru", "zh")}))
    assert got.merges == ref.merges and len(got.merges) == 600 - 256


def test_parity_option_errors(tmp_path):
    en, ru = f"en={DATA / 'en.txt'}", f"ru={DATA / 'ru.txt'}"
    out = ["--vocab-size", 300, "--out", tmp_path / "x", "--no-progress"]
    assert_one_line_error(run_cli("train", "--language", en, "--language", ru, *out, check=False),
                          "exactly one of them")
    assert_one_line_error(run_cli("train", "--language", en, "--language", ru, "--parity-ratio", "en=1",
                                  "--parity-ratio", "fr=2", *out, check=False), "'fr', which is not a training language")
    assert_one_line_error(run_cli("train", "--language", en, "--language", ru, "--parity-ratio", "en=x", *out,
                                  check=False), "--parity-ratio en=x: not a number")
    assert_one_line_error(run_cli("train", str(DATA / "en.txt"), "--parity-ratio", "en=1", *out, check=False),
                          "--language NAME=FILE")
