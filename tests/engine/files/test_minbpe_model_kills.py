"""``Tokenizer.save(prefix)`` under SIGKILL (issue 42, point 2): ``.model`` and ``.vocab`` are one
tokenizer after any kill, and what a killed save leaves is removed by the next save.

A helper process (tests/support/killed_saves.py) forks a child that saves two tokenizers into one
prefix by turns until it is SIGKILLed at a random moment (seeded), or at a chosen step through
the test hook. ``.vocab`` names the sha256 of the ``.model`` it lists; loading rewrites one that
lists another ``.model`` (a kill between the two files), saying so in one line.
"""

from __future__ import annotations

import logging
import os
import random
import signal

import pytest

from hf_bbpe import Tokenizer
from hf_bbpe.engine.files.atomic_write import KILL_AT_ENV
from tests.support.cli import TAYLOR
from tests.support.killed_saves import SaveKiller


@pytest.fixture(scope="module")
def killer():
    helper = SaveKiller()
    yield helper
    helper.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict:
    """Two tokenizers saved under prefixes ``a`` and ``b``: their ``.model`` and ``.vocab`` bytes."""
    base = tmp_path_factory.mktemp("pair")
    text = TAYLOR.read_text(encoding="utf-8")[:50000]
    saved = {}
    for name, size in (("a", 400), ("b", 700)):
        tok = Tokenizer(pattern="gpt4")
        tok.train(text, size, progress=False)
        tok.save(base / name)
        saved[name] = {suffix: (base / f"{name}{suffix}").read_bytes() for suffix in (".model", ".vocab")}
        saved[name]["path"] = str(base / f"{name}.model")
    return saved


def _files(prefix) -> tuple[bytes, bytes]:
    return prefix.with_name("tok.model").read_bytes(), prefix.with_name("tok.vocab").read_bytes()


def _assert_one_tokenizer(prefix, pair) -> None:
    model, listing = _files(prefix)
    which = next((name for name in pair if pair[name][".model"] == model), None)
    assert which is not None, "tok.model is neither tokenizer"
    assert listing.split(b"\n", 1)[1] == pair[which][".vocab"].split(b"\n", 1)[1], "tok.vocab lists another tokenizer"


@pytest.mark.parametrize("seed", range(10))
def test_save_killed_at_a_random_moment_leaves_one_tokenizer(killer, pair, tmp_path, seed):
    prefix = tmp_path / "tok"
    Tokenizer.from_file(pair["a"]["path"]).save(prefix)
    delay = random.Random(seed).uniform(0, 0.3)  # about ten saves
    ended = killer.run({"tok_save": [pair["a"]["path"], pair["b"]["path"]], "prefix": str(prefix), "loop": 100000,
                        "kill_after": delay})
    assert ended["signal"] == signal.SIGKILL, ended
    loaded = Tokenizer.from_file(prefix)  # rewrites a .vocab that lists another .model
    _assert_one_tokenizer(prefix, pair)
    loaded.save(prefix)  # the next save removes the killed one's temp files
    assert sorted(os.listdir(tmp_path)) == ["tok.model", "tok.vocab"]


@pytest.mark.parametrize("step", ["write:tok.model", "write:tok.vocab"])
def test_save_killed_at_each_file(killer, pair, tmp_path, caplog, step):
    prefix = tmp_path / "tok"
    Tokenizer.from_file(pair["a"]["path"]).save(prefix)
    ended = killer.run({"tok_save": [pair["b"]["path"]], "prefix": str(prefix), "env": {KILL_AT_ENV: step}})
    assert ended["signal"] == signal.SIGKILL, ended
    assert any(name.startswith(".tok.") for name in os.listdir(tmp_path))  # the killed write's temp file
    with caplog.at_level(logging.WARNING, logger="hf_bbpe"):
        loaded = Tokenizer.from_file(prefix)
    _assert_one_tokenizer(prefix, pair)
    if step == "write:tok.vocab":  # tok.model was new, tok.vocab old: rewritten, and said in one line
        assert _files(prefix)[0] == pair["b"][".model"]
        assert "tok.vocab listed another tok.model" in caplog.text and "rewrote it" in caplog.text
    else:
        assert _files(prefix)[0] == pair["a"][".model"]
    loaded.save(prefix)
    assert sorted(os.listdir(tmp_path)) == ["tok.model", "tok.vocab"]
