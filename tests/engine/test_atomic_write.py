"""The one atomic writer: a failure names the path the caller gave, never the temp file or folder
made beside it."""

from __future__ import annotations

import pytest

from hf_bbpe.atomic_write import temp_dir_beside, write_bytes_atomic, write_text_atomic


@pytest.mark.parametrize("write", [temp_dir_beside, lambda p: write_text_atomic(p, "x"),
                                   lambda p: write_bytes_atomic(p, b"x")])
def test_a_path_that_cannot_be_made_is_named_as_given(write):
    with pytest.raises(OSError) as caught:
        write("/proc/nope")  # /proc takes no new entry, even from root
    assert caught.value.filename == "/proc/nope" and ".tmp" not in str(caught.value)


def test_nothing_is_left_when_the_block_fails(tmp_path):
    from hf_bbpe.atomic_write import atomic_open

    (tmp_path / "f").write_text("old")
    with pytest.raises(RuntimeError), atomic_open(tmp_path / "f") as handle:
        handle.write("new")
        raise RuntimeError
    assert [p.name for p in tmp_path.iterdir()] == ["f"] and (tmp_path / "f").read_text() == "old"
