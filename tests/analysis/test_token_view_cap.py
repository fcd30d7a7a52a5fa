"""`view --html` caps the characters it renders (a long file would make a page of tens of MB) and
says so on stderr, with the option that gives the full page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis.test_token_view import parse_view_html
from tests.support.cli import DATA, GPT2_DIR, MIX, run_cli

O200K = f"o200k_base:{DATA / 'tiktoken' / 'o200k_base.tiktoken'}"


def _shown_text(section: dict) -> str:
    return b"".join(bytes.fromhex(span["data-bytes"]) for span in section["spans"]).decode("utf-8")


@pytest.fixture(scope="module")
def long_text(tmp_path_factory) -> Path:
    """300,000 characters of real multilingual text and code."""
    mix = MIX.read_text(encoding="utf-8")
    path = tmp_path_factory.mktemp("long") / "long.txt"
    path.write_text((mix * (300_000 // len(mix) + 1))[:300_000], encoding="utf-8")
    return path


def test_long_file_with_three_tokenizers_is_capped_with_a_warning(long_text, mix_tok_dir, tmp_path):
    out = tmp_path / "view.html"
    proc = run_cli("view", "-t", mix_tok_dir, "-t", GPT2_DIR, "-t", O200K, long_text, "--html", out)
    err = proc.stderr.decode("utf-8")
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1, err
    assert "--max-chars 0" in warnings[0] and "300000" in warnings[0], warnings[0]
    page = out.read_text(encoding="utf-8")
    assert len(page.encode("utf-8")) < 15_000_000  # the uncapped page is about 60 MB
    text = long_text.read_text(encoding="utf-8")
    sections = parse_view_html(page).sections
    assert len(sections) == 3
    for section in sections:
        shown = _shown_text(section)
        assert 40_000 <= len(shown) <= 50_010 and text.startswith(shown), len(shown)
        assert section["tokens"] > len(section["spans"])  # the counts are the whole text's


def test_max_chars_sets_the_cap_and_zero_removes_it(mix_tok_dir, tmp_path):
    text = MIX.read_text(encoding="utf-8")[:5000]
    (tmp_path / "t.txt").write_text(text, encoding="utf-8")
    capped = run_cli("view", "-t", mix_tok_dir, "t.txt", "--html", "a.html", "--max-chars", 1000, cwd=tmp_path)
    assert "--max-chars 0" in capped.stderr.decode("utf-8")
    shown = _shown_text(parse_view_html((tmp_path / "a.html").read_text(encoding="utf-8")).sections[0])
    assert 1000 <= len(shown) < 1100 and text.startswith(shown)
    full = run_cli("view", "-t", mix_tok_dir, "t.txt", "--html", "b.html", "--max-chars", 0, cwd=tmp_path)
    assert "warning" not in full.stderr.decode("utf-8")
    section = parse_view_html((tmp_path / "b.html").read_text(encoding="utf-8")).sections[0]
    assert _shown_text(section) == text and section["tokens"] == sum(len(s["data-ids"].split()) for s in section["spans"])
