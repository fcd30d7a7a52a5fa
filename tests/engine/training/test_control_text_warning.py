"""Training on text that is mostly control characters (a binary file read as text: a file of NUL
bytes is valid UTF-8) warns, naming the share and the characters; real text, tabs and newlines do
not. Every way in: train, extend, train_from_counts (str or bytes keys), and the CLI."""

from __future__ import annotations

import warnings

import pytest

from hf_bbpe import BasicTokenizer, RegexTokenizer
from tests.support.cli import MIX, run_cli
from tests.support.hf import mix_docs

NULS = "\x00" * 4096
BINARY = "".join(map(chr, range(32))) * 64 + "some text"


def _control_warnings(record) -> list[str]:
    return [str(w.message) for w in record if "control characters" in str(w.message)]


@pytest.mark.parametrize("make", [lambda: RegexTokenizer("gpt4"), BasicTokenizer])
@pytest.mark.parametrize("text, share", [(NULS, "100%"), (BINARY, "84%")])
def test_training_on_control_characters_warns(make, text, share):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        make().train(text, 300, num_workers=1)
    found = _control_warnings(record)
    assert len(found) == 1 and f"({share})" in found[0] and "'\\x00' x" in found[0], found


def test_extend_and_counts_warn_too():
    base = RegexTokenizer("gpt4")
    base.train(mix_docs()[:50], 300, num_workers=1)
    for job in (lambda: base.extend(NULS, 10, num_workers=1),
                lambda: RegexTokenizer().train_from_counts({b"\x00\x01": 100, b"ab": 1}, 260),
                lambda: RegexTokenizer().train_from_counts({"\x7f\x1b": 100, "ab": 1}, 260)):
        with pytest.warns(UserWarning, match="are control characters"):
            job()


def test_real_text_tabs_and_newlines_do_not_warn():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        RegexTokenizer("gpt4").train(mix_docs() + ["\t\n\r\x0b\x0c\x85" * 1000], 400, num_workers=1)
        RegexTokenizer().train_from_counts({"\x1b[0m": 3, " colour": 10}, 260)  # a little is fine
    assert _control_warnings(record) == []


def test_cli_train_warns_on_a_file_of_nul_bytes(tmp_path):
    (tmp_path / "zeros.bin").write_bytes(NULS.encode())
    proc = run_cli("train", "zeros.bin", "--vocab-size", 260, "--out", "tok", "--no-progress", cwd=tmp_path)
    assert "hf-bbpe: warning: 4,096 of the 4,096 characters of the training text (100%) are control characters" \
        in proc.stderr.decode()
    quiet = run_cli("train", MIX, "--vocab-size", 260, "--out", "tok2", "--no-progress", cwd=tmp_path)
    assert "control characters" not in quiet.stderr.decode()


def test_keys_that_are_not_text_are_refused_without_a_control_warning():
    with warnings.catch_warnings(record=True) as record, pytest.raises(TypeError):
        warnings.simplefilter("always")
        RegexTokenizer().train_from_counts({5: 3, "ab": 2}, 258)  # 5 is not b"\x00" * 5
    assert _control_warnings(record) == []
