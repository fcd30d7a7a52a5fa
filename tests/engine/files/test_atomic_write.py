"""The one atomic writer: a failure names the path the caller gave, never the temp file or folder
made beside it."""

from __future__ import annotations

import os

import pytest

from hf_bbpe.engine.files.atomic_write import temp_dir_beside, write_bytes_atomic, write_text_atomic


@pytest.mark.parametrize("write", [temp_dir_beside, lambda p: write_text_atomic(p, "x"),
                                   lambda p: write_bytes_atomic(p, b"x")])
def test_a_path_that_cannot_be_made_is_named_as_given(write):
    with pytest.raises(OSError) as caught:
        write("/proc/nope")  # /proc takes no new entry, even from root
    assert caught.value.filename == "/proc/nope" and ".tmp" not in str(caught.value)


def test_nothing_is_left_when_the_block_fails(tmp_path):
    from hf_bbpe.engine.files.atomic_write import atomic_open

    (tmp_path / "f").write_text("old")
    with pytest.raises(RuntimeError), atomic_open(tmp_path / "f") as handle:
        handle.write("new")
        raise RuntimeError
    assert [p.name for p in tmp_path.iterdir()] == ["f"] and (tmp_path / "f").read_text() == "old"


def test_a_folder_is_replaced_whole_keeping_what_is_not_the_writer_s(tmp_path):
    """replaced_folder: the old folder's other files carried over (big ones hard-linked), the
    writer's own files dropped unless written again, nothing left beside the folder."""
    from hf_bbpe.engine.files.atomic_write import LINK_MIN_BYTES, replaced_folder

    target = tmp_path / "out"
    target.mkdir()
    (target / "weights.bin").write_bytes(b"w" * LINK_MIN_BYTES)
    (target / "README.md").write_text("mine")
    (target / "sub").mkdir()
    (target / "sub" / "x").write_text("x")
    (target / "ours.json").write_text("old")
    (target / "stale.json").write_text("old")
    inode = os.stat(target / "weights.bin").st_ino
    with replaced_folder(target, {"ours.json", "stale.json"}) as stage:
        assert stage.parent == tmp_path and not (stage / "ours.json").exists()
        with replaced_folder(stage, {"ours.json"}) as nested:  # a save inside a save writes straight in
            assert nested == stage
            (nested / "ours.json").write_text("new")
        assert (target / "ours.json").read_text() == "old"  # nothing switched yet
    assert sorted(os.listdir(target)) == ["README.md", "ours.json", "sub", "weights.bin"]
    assert (target / "ours.json").read_text() == "new" and (target / "sub" / "x").read_text() == "x"
    assert os.stat(target / "weights.bin").st_ino == inode
    assert os.listdir(tmp_path) == ["out"]


def test_a_failed_folder_write_changes_nothing(tmp_path):
    from hf_bbpe.engine.files.atomic_write import replaced_folder

    target = tmp_path / "out"
    target.mkdir()
    (target / "a").write_text("old")
    with pytest.raises(RuntimeError), replaced_folder(target, {"a"}) as stage:
        (stage / "a").write_text("new")
        raise RuntimeError
    assert os.listdir(tmp_path) == ["out"] and (target / "a").read_text() == "old"


def test_stale_temps_of_dead_writers_go_and_live_ones_stay(tmp_path):
    from hf_bbpe.engine.files.atomic_write import remove_stale_temps

    dead = tmp_path / ".f.999999999.abc123.tmp"  # no process has that pid
    live = tmp_path / f".f.{os.getpid()}.abc123.tmp"
    other = tmp_path / ".g.999999999.abc123.tmp"
    for path in (dead, live, other):
        path.write_text("x")
    assert remove_stale_temps(tmp_path / "f") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


def test_a_link_to_a_folder_stays_a_link(tmp_path):
    from hf_bbpe.engine.files.atomic_write import replaced_folder

    real = tmp_path / "real"
    real.mkdir()
    (real / "a").write_text("old")
    (tmp_path / "link").symlink_to(real)
    with replaced_folder(tmp_path / "link", {"a"}) as stage:
        (stage / "a").write_text("new")
    assert (tmp_path / "link").is_symlink() and (real / "a").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]


def test_gpt2_files_are_replaced_as_a_pair(tmp_path):
    """conversion.to_gpt2_files switches encoder.json and vocab.bpe in together; other files stay."""
    import conversion
    from hf_bbpe import Tokenizer

    tok = Tokenizer.from_merges({(104, 105): 256}, pattern="gpt2")
    out = tmp_path / "gpt2"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    conversion.to_gpt2_files(tok, out)
    assert sorted(os.listdir(out)) == ["encoder.json", "notes.txt", "vocab.bpe"]
    assert os.listdir(tmp_path) == ["gpt2"] and conversion.load(out).merges == tok.merges
