"""Every code block of the README and of docs/ runs (tests/docs/doc_examples.py runs them, a page
at a time, in a folder of real files from tests/data), or says on the line before it why it
cannot run here (a download, a GPU, the Hub, a cluster)."""

from __future__ import annotations

import pytest

from tests.docs.doc_examples import OUTPUT, PAGES, ROOT, RUNNABLE, blocks, run_page

README = ROOT / "README.md"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_page(page, tmp_path)


def test_every_block_runs_or_says_why():
    """A block in a language the runner does not run (js, toml...) must carry a skip reason, so
    that nothing is left untested without a word; and a reason must say something."""
    unexplained = [b.where() for page in PAGES for b in blocks(page)
                   if b.lang not in RUNNABLE + OUTPUT and not b.skip]
    assert not unexplained, f"code blocks that neither run nor say why: {unexplained}"
    vague = [b.where() for page in PAGES for b in blocks(page) if b.skip and len(b.skip.split()) < 3]
    assert not vague, f"skip reasons of fewer than three words: {vague}"


def test_readme_is_short_and_opens_with_the_two_commands():
    """The issue's shape: at most about 200 lines, the demo and test commands first (CI runs the
    test command), and links to the docs."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first = blocks(README)[0]
    assert first.lang == "bash" and [line.split("#")[0].strip() for line in first.code.splitlines()] == [
        "bash scripts/demo.sh", "bash scripts/test.sh"]
    assert "docs/index.md" in text
