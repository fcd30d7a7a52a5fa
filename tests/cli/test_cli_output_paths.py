"""Every command that writes files checks its output paths before doing any work.

Each case pairs an unusable output path with an input that would fail later (a corpus that is
not UTF-8, a tokenizer file that does not exist): the error must name the output, which proves
the check ran first. And nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import MIX, assert_one_line_error, run_cli


@pytest.fixture
def place(tmp_path) -> Path:
    """A folder holding a file ``afile``, a folder ``adir`` and a corpus that is not UTF-8."""
    (tmp_path / "afile").write_text("keep me")
    (tmp_path / "adir").mkdir()
    (tmp_path / "bad.txt").write_bytes(b"some text \xff\xfe more")
    return tmp_path


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


def _fails_on_output(place: Path, args: list, needle: str, what: str) -> None:
    before = _snapshot(place)
    proc = run_cli(*args, cwd=place, check=False)
    line = assert_one_line_error(proc, needle, what)
    assert "bad.txt" not in line and "missing" not in line, line
    assert _snapshot(place) == before


@pytest.mark.parametrize("out, what", [
    ("afile", "exists and is not a folder"),
    ("nowhere/tok", "no such folder"),
    ("afile/tok", "is not a folder"),
])
def test_train_checks_out_before_training(place, out, what):
    _fails_on_output(place, ["train", "bad.txt", "--vocab-size", 300, "--out", out, "--no-progress"],
                     out.split("/")[0], what)


def test_extend_checks_out_before_loading(place):
    _fails_on_output(place, ["extend", "missing.model", "bad.txt", "--new-merges", 5, "--out", "afile"],
                     "afile", "exists and is not a folder")


@pytest.mark.parametrize("target, out, needle, what", [
    ("hf", "afile", "afile", "exists and is not a folder"),
    ("hf", "nowhere/tok", "nowhere", "no such folder"),
    ("hf", "adir/x/tokenizer.json", "adir/x", "no such folder"),
    ("gpt2", "afile", "afile", "exists and is not a folder"),
    ("gpt2", "afile/sub", "afile", "is not a folder"),
    ("tiktoken", "adir", "adir", "is a folder"),
    ("tiktoken", "nowhere/x.tiktoken", "nowhere", "no such folder"),
    ("minbpe", "adir/x/tok", "adir/x", "no such folder"),
])
def test_convert_checks_output_before_reading(place, target, out, needle, what):
    _fails_on_output(place, ["convert", "--from", "minbpe", "missing.model", "--to", target, "-o", out], needle, what)


def test_convert_accepts_existing_folder_and_missing_parents(place):
    """An existing folder is fine for a folder target, and so are missing parents for gpt2 (its
    writer creates them): the error is then the input's."""
    for target, out in [("hf", "adir"), ("gpt2", "adir/new/deeper")]:
        proc = run_cli("convert", "--from", "minbpe", "missing.model", "--to", target, "-o", out, cwd=place,
                       check=False)
        assert_one_line_error(proc, "missing.model")


def test_convert_minbpe_checks_both_files(place):
    (place / "adir" / "tok.vocab").mkdir()
    _fails_on_output(place, ["convert", "--from", "minbpe", "missing.model", "--to", "minbpe", "-o", "adir/tok"],
                     "adir/tok.vocab", "is a folder")


@pytest.mark.parametrize("out, what", [("adir", "is a folder"), ("nowhere/x.html", "no such folder")])
def test_view_html_checks_output_before_loading(place, out, what):
    _fails_on_output(place, ["view", "-t", "missing.model", "bad.txt", "--html", out], out.split("/")[0], what)


def test_extend_model_checks_out_before_reading(place):
    _fails_on_output(place, ["extend-model", "adir", "--tokens-file", "bad.txt", "--out", "afile", "--overwrite"],
                     "afile", "exists and is not a folder")


def test_train_into_a_new_folder_still_works(place):
    """The checks do not reject what worked: a new folder beside the corpus."""
    run_cli("train", MIX, "--vocab-size", 260, "--out", "tok", "--no-progress", cwd=place)
    assert (place / "tok" / "tokenizer.model").is_file()


@pytest.mark.parametrize("command", [
    ["train", "bad.txt", "--vocab-size", 300, "--no-progress", "--out", "/proc/nope"],
    ["convert", "--from", "minbpe", "missing.model", "--to", "tiktoken", "-o", "/proc/nope.tiktoken"],
])
def test_an_output_that_cannot_be_made_is_named_as_given(place, command):
    """/proc takes no new entry, even from root (to whom os.access says yes): the error names the
    path given, not the temp name the writer would have made beside it, and comes before any work."""
    line = assert_one_line_error(run_cli(*command, cwd=place, check=False), f"cannot write {command[-1]}")
    assert ".tmp" not in line and "bad.txt" not in line and "missing" not in line, line
