"""``hf-bbpe inspect``'s summary adds up and stays short: on Llama 3, 127,066 merges + 256 bytes +
678 tokens that no merge builds + 256 special = 128,256, and the 244 reserved special tokens are
one line, not 244."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.cli import run_cli
from tests.support.families import LLAMA3_MODEL

SIZES = re.compile(r"n_vocab: (\d+) \((\d+) tokens: (\d+) merges, (\d+) bytes, (?:(\d+) that no merge builds, )?"
                   r"(\d+) special\)")


def _summary(*args) -> str:
    return run_cli("inspect", *args).stdout.decode("utf-8")


@pytest.fixture(scope="module")
def llama3_summary() -> str:
    return _summary(LLAMA3_MODEL)


def test_llama3_summary_adds_up_and_shows_the_unmerged_tokens(llama3_summary):
    text = llama3_summary
    n_vocab, tokens, merges, byte_tokens, unmerged, special = map(int, SIZES.search(text).groups())
    assert (n_vocab, tokens, merges, byte_tokens, unmerged, special) == (128256, 128256, 127066, 256, 678, 256)
    assert merges + byte_tokens + unmerged + special == tokens
    data = json.loads(_summary(LLAMA3_MODEL, "--json"))
    assert data["unmerged_tokens"] == 678 and data["byte_tokens"] == 256 and len(data["special_tokens"]) == 256


def test_llama3_reserved_special_tokens_are_one_line(llama3_summary):
    text = llama3_summary
    listed = text[text.index("special tokens: 256\n"):text.index("longest tokens:")].splitlines()[1:]
    assert len(listed) == 13, listed  # 12 named or lone reserved ones, then the run
    assert listed[-1].split() == ["128012-128255", "'<|reserved_special_token_2|>'", "...",
                                  "'<|reserved_special_token_245|>'", "(244", "tokens)"]
    assert "   128002  '<|reserved_special_token_0|>'" in listed  # two in a row stay two lines


def test_a_trained_tokenizer_summary_adds_up(mix_tok_dir):
    n_vocab, tokens, merges, byte_tokens, unmerged, special = SIZES.search(_summary(mix_tok_dir)).groups()
    assert unmerged is None and int(merges) + int(byte_tokens) + int(special) == int(tokens) == int(n_vocab) == 513


def test_a_pipeline_is_described_not_called_no_split(tmp_path):
    """Issue 36: a tokenizer whose split is a pre-tokenizer pipeline (SuperBPE's isolated stage-2
    Split), the paper's released one and one trained here, was summarised as ``(none: no split)``;
    the summary names the pipeline's steps, as --json gives them."""
    from tests.support.cli import TAYLOR
    from tests.support.superbpe import released_folder

    released = released_folder("superbpe_t180k", tmp_path / "released")
    trained = tmp_path / "trained"
    run_cli("train", TAYLOR, "--vocab-size", 400, "--superwords", "--out", trained, "--quiet")
    for folder in (released, trained):
        text = _summary(folder)
        assert "pattern: (a pre-tokenizer pipeline: Split(superbpe_stage2, isolated))\n" in text, text[:400]
        assert json.loads(_summary(folder, "--json"))["pre_tokenizer"]["type"] == "Split"
    plain = tmp_path / "plain"
    run_cli("train", TAYLOR, "--vocab-size", 300, "--pattern", "none", "--out", plain, "--quiet")
    assert "pattern: (none: no split)\n" in _summary(plain)
