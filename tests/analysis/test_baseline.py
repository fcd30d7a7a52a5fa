"""`hf-bbpe compare --train`: our byte-level BPE against a sentencepiece BPE trained on the same text at
the same vocabulary size (small data, so fast), and the fallback-character count behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sentencepiece as spm

import conversion
from hf_bbpe import Tokenizer
from hf_bbpe.analysis.baseline import fallback_characters
from hf_bbpe.analysis.foreign_tokenizers import EngineTokenizer, SentencePieceTokenizer
from tests.support.cli import DATA, MIX, TAYLOR, assert_one_line_error, run_cli

VOCAB = 600
HELD_OUT_TEXT = "Naïve café — 中文 and 𝔸 ⅓; def f(x): return x**2\n" * 3


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[dict, Path, Path]:
    tmp = tmp_path_factory.mktemp("baseline")
    held_out = tmp / "held-out.txt"
    held_out.write_text(HELD_OUT_TEXT, encoding="utf-8")
    keep = tmp / "models"
    out = run_cli("compare", "--train", TAYLOR, "--vocab-size", VOCAB, held_out, MIX, "--keep", keep,
                  "--workers", 1, "--json")
    return json.loads(out.stdout), keep, held_out


def test_both_trained_at_the_same_vocabulary_size_and_measured(trained):
    report, keep, _ = trained
    assert [t["tokenizer"] for t in report["training"]] == ["hf_bbpe", "sentencepiece"]
    for run in report["training"]:
        assert run["vocab_size"] == VOCAB and run["seconds"] > 0
        assert run["peak_memory_mb"] > 5 and 0 <= run["training_memory_mb"] <= run["peak_memory_mb"]
    assert Tokenizer.from_file(keep / "hf_bbpe.model").n_vocab == VOCAB
    assert spm.SentencePieceProcessor(model_file=str(keep / "sentencepiece.model")).vocab_size() == VOCAB


def test_held_out_counts_are_each_librarys_own(trained):
    report, keep, held_out = trained
    ours = Tokenizer.from_file(keep / "hf_bbpe.model")
    theirs = spm.SentencePieceProcessor(model_file=str(keep / "sentencepiece.model"))
    rows = {(Path(r["file"]).name, r["tokenizer"]): r for r in report["held_out"]}
    for path in (held_out, MIX):
        text = path.read_text(encoding="utf-8")
        mine, sp = rows[(path.name, "hf_bbpe")], rows[(path.name, "sentencepiece")]
        assert mine["tokens"] == len(ours.encode_ordinary(text))
        assert sp["tokens"] == len(theirs.encode(text))
        assert mine["bytes_per_token"] == round(len(text.encode("utf-8")) / mine["tokens"], 4)
        # sentencepiece's own account: a byte piece whose surface is not empty closes a fallback character
        proto = theirs.encode(text, return_type="proto")
        assert sp["fallback_chars"] == sum(1 for p in proto.pieces if theirs.is_byte(p.id) and p.surface)
        assert sp["fallback_chars"] > 0  # trained on English lyrics: the CJK and symbols fall back


def test_text_table_is_the_lectures(tmp_path):
    out = run_cli("compare", "--train", TAYLOR, "--vocab-size", VOCAB, "--workers", 1).stdout.decode("utf-8")
    assert "train seconds" in out and "peak memory MB" in out and "fallback chars" in out
    assert out.count("sentencepiece") == 2  # one training row, one held-out row (the corpus itself)


def test_fallback_characters_of_a_byte_level_tokenizer_are_cut_characters():
    o200k = EngineTokenizer(conversion.load(DATA / "tiktoken" / "o200k_base.tiktoken"))
    text = "⅓ 𝔸 中文 abc"  # o200k cuts ⅓ in 2 tokens and 𝔸 in 3; 中文 is one token
    assert fallback_characters(o200k, o200k.encode(text)) == 2


def test_sentencepiece_too_small_vocabulary_is_a_clear_error():
    proc = run_cli("compare", "--train", MIX, "--vocab-size", 300, check=False)
    assert_one_line_error(proc, "training sentencepiece failed", "Vocabulary size is smaller than required_chars")


def test_train_needs_vocab_size():
    assert_one_line_error(run_cli("compare", "--train", TAYLOR, check=False), "--train needs --vocab-size")
