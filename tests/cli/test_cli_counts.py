"""``hf-bbpe count`` and ``hf-bbpe train --from-counts``, as real programs on files: counting once
and training from the counts file gives exactly ``hf-bbpe train``'s merges at every vocab size;
a bad counts file or a mismatched pattern is a one-line error naming the file; a count that
fails leaves no file half written (the old one stays whole, spill files are removed)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import regex

from hf_bbpe import Tokenizer, paragraphs
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS
from tests.support.cli import MIX, TAYLOR, assert_one_line_error, run_cli


def _merges(folder) -> list:
    return list(Tokenizer.from_file(folder / "tokenizer.model").merges.items())


@pytest.mark.parametrize("kind", ["text", "jsonl"])
def test_train_from_counts_equals_train_on_the_files(tmp_path, kind):
    """Whole merge lists at two vocab sizes, for a text file (paragraphs) and a .jsonl file (its
    --text-column, GPT-2's pattern, which the counts file carries to train, and huggingface's
    tie rule)."""
    if kind == "text":
        inputs, counting, training = [MIX], [], []
    else:
        jsonl = tmp_path / "docs.jsonl"
        docs = MIX.read_text(encoding="utf-8").split("\n\n")
        jsonl.write_text("".join(json.dumps({"id": k, "body": d}) + "\n" for k, d in enumerate(docs)), encoding="utf-8")
        inputs, counting = [jsonl], ["--text-column", "body", "--pattern", "gpt2"]
        training = ["--tie-break", "huggingface"]
    counts = tmp_path / "corpus.counts"
    run_cli("count", *inputs, *counting, "-o", counts, "--no-progress", "--quiet")
    for size in (400, 1000):
        run_cli("train", "--from-counts", counts, "--vocab-size", size, *training, "--special", "<|endoftext|>",
                "--out", tmp_path / f"from{size}", "--quiet")
        run_cli("train", *inputs, *counting, "--vocab-size", size, *training, "--special", "<|endoftext|>",
                "--out", tmp_path / f"direct{size}", "--quiet")
        learned = _merges(tmp_path / f"from{size}")
        assert len(learned) == size - 256
        assert learned == _merges(tmp_path / f"direct{size}")
        assert (tmp_path / f"from{size}" / "tokenizer.model").read_bytes() == \
            (tmp_path / f"direct{size}" / "tokenizer.model").read_bytes()  # the pattern and special token too


def test_inspect_gives_a_counts_files_pattern_and_totals(tmp_path):
    """The figures against the regex module's own count of the same paragraphs."""
    counts = tmp_path / "taylor.counts"
    run_cli("count", TAYLOR, "-o", counts, "--pattern", "gpt2", "--quiet")
    with open(TAYLOR, encoding="utf-8", newline="") as handle:
        reference = Counter(chunk for doc in paragraphs(handle)
                            for chunk in regex.findall(NATIVE_PATTERNS["gpt2"], doc))
    text = run_cli("inspect", counts).stdout.decode("utf-8")
    assert text == (f"counts file: {counts}\npattern: gpt2\ndistinct chunks: {len(reference):,}\n"
                    f"chunks in all: {sum(reference.values()):,}\n")
    info = json.loads(run_cli("inspect", counts, "--json").stdout)
    assert (info["distinct_chunks"], info["total_chunks"]) == (len(reference), sum(reference.values()))


def test_bad_counts_files_and_mismatches_are_one_line_errors_naming_the_file(tmp_path):
    counts = tmp_path / "gpt4.counts"
    run_cli("count", TAYLOR, "-o", counts, "--quiet")
    data = counts.read_bytes()
    out = tmp_path / "out"

    def refused(source, *extra) -> str:
        proc = run_cli("train", "--from-counts", source, "--vocab-size", 400, "--out", out, *extra, check=False)
        line = assert_one_line_error(proc, str(source))
        assert not out.exists()
        return line

    line = refused(counts, "--pattern", "gpt2")
    assert "made with the split pattern 'gpt4'" in line and "'gpt2'" in line
    assert "no split pattern" in refused(counts, "--pattern", "none")
    cut = tmp_path / "cut.counts"
    cut.write_bytes(data[:-100])
    assert "cut short" in refused(cut)
    changed = tmp_path / "changed.counts"
    changed.write_bytes(data[:-10] + bytes([data[-10] ^ 0x20]) + data[-9:])
    assert "corrupt counts file" in refused(changed)
    assert "not a chunk counts file" in refused(TAYLOR)
    assert "no such counts file" in refused(tmp_path / "missing.counts")
    assert "not both" in refused(counts, str(TAYLOR))
    assert "--superwords" in refused(counts, "--superwords")
    assert "--max-memory" in refused(counts, "--max-memory", "1G")
    for option in (["--docs", "line"], ["--workers", "1"], ["--text-column", "body"]):
        assert f"{option[0]} only change(s) counting" in refused(counts, *option)
    assert_one_line_error(run_cli("inspect", cut, check=False), f"{cut}: cut short")
    assert_one_line_error(run_cli("train", "--vocab-size", 400, "--out", out, check=False), "--from-counts")
    run_cli("train", "--from-counts", counts, "--pattern", "gpt4", "--vocab-size", 400, "--out", out, "--quiet")


def test_a_count_that_fails_leaves_nothing_half_written(tmp_path, monkeypatch):
    """A bad record in the second file, counted within --max-memory: a one-line error naming it,
    the old counts file whole, no temporary file beside it, the spill folder emptied."""
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill))
    work = tmp_path / "work"
    work.mkdir()
    counts = work / "corpus.counts"
    run_cli("count", TAYLOR, "-o", counts, "--quiet")
    before = counts.read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"content": "no text field"}\n', encoding="utf-8")
    for target in (counts, work / "new.counts"):
        proc = run_cli("count", TAYLOR, bad, "-o", target, "--max-memory", "64M", check=False)
        assert_one_line_error(proc, f"{bad}, line 2", "no field 'text'")
    assert counts.read_bytes() == before
    assert sorted(p.name for p in work.iterdir()) == ["corpus.counts"]
    assert list(spill.iterdir()) == []
    proc = run_cli("count", TAYLOR, "-o", tmp_path / "missing" / "x.counts", check=False)
    assert_one_line_error(proc, f"{tmp_path / 'missing'}: no such folder")
    own_input = work / "corpus.txt"
    own_input.write_bytes(TAYLOR.read_bytes())
    proc = run_cli("count", own_input, "-o", own_input, check=False)
    assert_one_line_error(proc, f"{own_input}: is one of the inputs")
    assert own_input.read_bytes() == TAYLOR.read_bytes()
