"""`hf-bbpe train --superword-transition` and `hf-bbpe extend --superwords`, driven as real programs:
the folders equal the library's SuperBPE training, and `tokenizers` runs their tokenizer.json with
the engine's ids."""

from __future__ import annotations

from tokenizers import Tokenizer as HFTokenizer

from hf_bbpe import RegexTokenizer, SuperwordConfig, Tokenizer
from hf_bbpe.cli.text_input import iter_documents
from hf_bbpe.engine.chunking.patterns import SUPERBPE_STAGE2_SPLIT_PATTERN
from hf_bbpe.engine.training.superwords import count_superwords
from tests.support.cli import MIX, TAYLOR, assert_one_line_error, run_cli


def test_train_with_superwords_equals_the_library(tmp_path):
    out = tmp_path / "super"
    proc = run_cli("train", TAYLOR, MIX, "--vocab-size", 1200, "--pattern", "gpt4", "--superword-transition", 0.75,
                   "--superword-max-words", 3, "--out", out, "--no-progress")
    assert b"tokens span words (stage 2 from vocabulary size 900)" in proc.stderr
    got = Tokenizer.from_file(out / "tokenizer.model")
    ref = RegexTokenizer("gpt4")
    docs = list(iter_documents([str(TAYLOR), str(MIX)], "paragraph"))
    ref.train(docs, 1200, superwords=SuperwordConfig(transition=900, max_words=3), progress=False)
    assert got.merges == ref.merges
    assert got.pattern == SUPERBPE_STAGE2_SPLIT_PATTERN
    assert count_superwords(got) > 20
    hf = HFTokenizer.from_file(str(out / "tokenizer.json"))
    text = MIX.read_text(encoding="utf-8")[:30_000]
    assert hf.encode(text).ids == got.encode_ordinary(text)


def test_train_lines_from_files_and_stdin_agree(tmp_path):
    """--docs line reads the files in the counting threads; stdin (paragraphs) is read once and
    kept for stage 2's second pass."""
    text = TAYLOR.read_text(encoding="utf-8")
    run_cli("train", TAYLOR, "--vocab-size", 700, "--superwords", "--docs", "line", "--out", tmp_path / "a",
            "--no-progress", "--quiet")
    run_cli("train", "-", "--vocab-size", 700, "--superwords", "--docs", "line", "--out", tmp_path / "b",
            "--no-progress", "--quiet", input=text)
    a, b = (Tokenizer.from_file(tmp_path / name / "tokenizer.model") for name in "ab")
    assert a.merges == b.merges and count_superwords(a) > 0


def test_extend_with_superwords_keeps_every_id(mix_tok_dir, tmp_path):
    base = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    out = tmp_path / "ext"
    proc = run_cli("extend", mix_tok_dir, TAYLOR, "--new-merges", 60, "--superwords", "--out", out, "--no-progress")
    assert b"new tokens span words; the tokenizer now splits text with the superword pattern" in proc.stderr
    got = Tokenizer.from_file(out / "tokenizer.model")
    ref = base.extend(iter_documents([str(TAYLOR)], "paragraph"), 60, superwords=True, progress=False)
    assert got.merges == ref.merges
    assert all(got.vocab[idx] == token for idx, token in base.vocab.items())
    assert got.special_tokens == base.special_tokens
    assert count_superwords(got) > count_superwords(base)


def test_superword_option_errors(tmp_path):
    assert_one_line_error(run_cli("train", TAYLOR, "--vocab-size", 500, "--superword-transition", 600, "--out",
                                  tmp_path / "o", check=False), "--superword-transition", "above vocab_size")
    assert_one_line_error(run_cli("train", TAYLOR, "--vocab-size", 500, "--pattern", "none", "--superwords", "--out",
                                  tmp_path / "o", check=False), "--superwords needs a split pattern")
    assert_one_line_error(run_cli("train", TAYLOR, "--vocab-size", 500, "--superword-pattern", "(", "--out",
                                  tmp_path / "o", check=False), "superwords:")
    proc = run_cli("train", TAYLOR, "--vocab-size", 500, "--superword-transition", 1.5, "--out", tmp_path / "o",
                   check=False)
    assert proc.returncode == 2 and b"share between 0 and 1" in proc.stderr
    proc = run_cli("extend", tmp_path, TAYLOR, "--new-merges", 5, "--superword-transition", 300, "--out",
                   tmp_path / "o", check=False)
    assert proc.returncode == 2 and b"--superword-transition" in proc.stderr  # extend takes no transition
    assert not (tmp_path / "o").exists()
