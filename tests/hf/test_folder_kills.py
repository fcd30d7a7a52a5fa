"""A tokenizer folder is replaced whole or not at all (issue 41).

Saves into an existing folder (the CLI's ``train --out`` and ``extend --out``, and
``save_pretrained``) are SIGKILLed for real (tests/support/killed_saves.py: a forked child kills
itself at the step the test hook names) mid-write of each file and after each step of the folder
switch, by ``renameat2(RENAME_EXCHANGE)`` and by the two-rename fallback. After every kill, every
loader (ours, AutoTokenizer, BBPETokenizer, ``tokenizers``) sees the same tokenizer, the old one
or the new one as the step says; the folder's other files (weights, README) are kept; the next
save leaves no temporary folder. A folder of mixed files is refused with one line naming them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import signal
from pathlib import Path

import pytest
import tokenizers
from transformers import AutoTokenizer

import conversion
from hf_bbpe.engine.files.atomic_write import KILL_AT_ENV, NO_EXCHANGE_ENV, recover_folder
from hf_bbpe.cli.tokenizer_spec import load_tokenizer
from hf_bbpe.hf.saved_folder import MixedFolderError, check_folder_agrees
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
from tests.support.cli import TAYLOR, assert_one_line_error, run_cli
from tests.support.killed_saves import SaveKiller

SAMPLE = "Hello world, the quick brown fox. She said: we are never ever getting back together!"
FOREIGN = {"README.md": b"my model card\n", "config.json": b'{"model_type": "gpt2"}\n'}
BIG = "model.safetensors"  # over atomic_write.LINK_MIN_BYTES: carried over as a hard link

# the steps, each with the tokenizer a kill there leaves ("old" or "new"), for the exchange switch
# and (last three) for the fallback's two renames
FILE_STEPS = ["vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"]
SWITCH_STEPS = [("built", False, "old"), ("ready", False, "old"), ("exchanged", False, "new"),
                ("ready", True, "old"), ("moved-aside", True, "new"), ("moved-in", True, "new")]


@pytest.fixture(scope="module")
def killer():
    helper = SaveKiller()
    yield helper
    helper.close()


@pytest.fixture(scope="module")
def inputs(killer, tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("kill-inputs")
    corpus = base / "corpus.txt"
    corpus.write_text(TAYLOR.read_text(encoding="utf-8")[:40000], encoding="utf-8")
    for name, size in (("small", 300), ("large", 340)):
        argv = ["train", str(corpus), "--vocab-size", str(size), "--special", "<|endoftext|>", "--out", str(base / name)]
        assert killer.run({"argv": argv}) == {"signal": None, "code": 0}
    return {"corpus": corpus, "small": base / "small", "large": base / "large"}


def request(writer: str, inputs: dict, which: str, folder: Path) -> dict:
    """The save that writes the ``which`` ("old"/"new") tokenizer of ``writer`` into ``folder``."""
    if writer == "train":
        size = {"old": 300, "new": 340}[which]
        return {"argv": ["train", str(inputs["corpus"]), "--vocab-size", str(size), "--special", "<|endoftext|>",
                         "--out", str(folder)]}
    if writer == "extend":
        merges = {"old": 20, "new": 40}[which]
        return {"argv": ["extend", str(inputs["small"]), str(inputs["corpus"]), "--new-merges", str(merges),
                         "--out", str(folder)]}
    model = inputs["small" if which == "old" else "large"] / "tokenizer.model"
    return {"save_pretrained": str(model), "folder": str(folder)}


def seen_by_every_loader(folder: Path, cli_folder: bool) -> list[int]:
    """The ids of SAMPLE by every loader; asserts that they all agree."""
    ids = {"conversion.load": conversion.load(folder).encode(SAMPLE, allowed_special="all")}
    if cli_folder:
        ids["hf-bbpe's folder loader"] = load_tokenizer(str(folder)).tokenizer.encode(SAMPLE, allowed_special="all")
    ids["BBPETokenizer"] = BBPETokenizer.from_pretrained(folder)(SAMPLE)["input_ids"]
    ids["AutoTokenizer fast"] = AutoTokenizer.from_pretrained(folder)(SAMPLE)["input_ids"]
    ids["AutoTokenizer slow"] = AutoTokenizer.from_pretrained(folder, use_fast=False)(SAMPLE)["input_ids"]
    ids["tokenizers"] = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).encode(SAMPLE).ids
    first = next(iter(ids.values()))
    assert all(value == first for value in ids.values()), ids
    return first


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def references(killer, inputs, tmp_path_factory) -> dict:
    """Per writer: the old folder (with foreign files) and the ids old and new give."""
    refs = {}
    for writer in ("train", "save_pretrained", "extend"):
        base = tmp_path_factory.mktemp(f"ref-{writer}")
        for which in ("old", "new"):
            folder = base / which
            folder.mkdir()
            for name, data in FOREIGN.items():
                (folder / name).write_bytes(data)
            (folder / BIG).write_bytes(os.urandom(1 << 20))
            assert killer.run(request(writer, inputs, which, folder)) == {"signal": None, "code": 0}
        cli_folder = writer != "save_pretrained"
        refs[writer] = {"old": base / "old", "cli_folder": cli_folder, "snapshot": snapshot(base / "old"),
                        "ids": {which: seen_by_every_loader(base / which, cli_folder) for which in ("old", "new")}}
        assert refs[writer]["ids"]["old"] != refs[writer]["ids"]["new"]
    return refs


FAST_CASES = {("train", "write:tokenizer.json"), ("train", "write:tokenizer.model"), ("train", "built"),
              ("train", "ready"), ("train", "exchanged"), ("train", "moved-aside"), ("train", "moved-in"),
              ("save_pretrained", "exchanged"), ("save_pretrained", "moved-aside"), ("extend", "exchanged"),
              ("extend", "moved-aside")}
"""The cases CI runs every time; the others (the same folder code reached by other writers, or
another file of the same stage) are marked slow. A save is about half a second of CPU."""


def _cases():
    for writer in ("train", "save_pretrained", "extend"):
        steps = FILE_STEPS + (["tokenizer.model", "tokenizer.vocab"] if writer != "save_pretrained" else [])
        cases = [(f"write:{name}", False, "old") for name in steps] + SWITCH_STEPS
        for step, fallback, result in cases:
            fast = (writer, step) in FAST_CASES and (step != "ready" or fallback)
            yield pytest.param(writer, step, fallback, result, marks=() if fast else (pytest.mark.slow,))


@pytest.mark.parametrize("writer,step,fallback,result", list(_cases()))
def test_a_killed_save_leaves_one_whole_tokenizer(killer, inputs, references, tmp_path, caplog,
                                                  writer, step, fallback, result):
    ref = references[writer]
    folder = tmp_path / "out"
    shutil.copytree(ref["old"], folder)
    big = os.stat(folder / BIG)
    env = {KILL_AT_ENV: step, **({NO_EXCHANGE_ENV: "1"} if fallback else {})}
    ended = killer.run({**request(writer, inputs, "new", folder), "env": env})
    assert ended["signal"] == signal.SIGKILL, ended  # the step was reached and the kill was real
    if step != "moved-aside":  # other readers first, before ours tidies anything
        assert AutoTokenizer.from_pretrained(folder)(SAMPLE)["input_ids"] == ref["ids"][result]
        assert tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).encode(SAMPLE).ids == ref["ids"][result]
    with caplog.at_level(logging.WARNING, logger="hf_bbpe"):
        assert seen_by_every_loader(folder, ref["cli_folder"]) == ref["ids"][result]
    if step == "moved-aside":  # the one kill that leaves no folder: our loader finished the switch, and said so
        assert "finished the switch" in caplog.text
    for name, data in FOREIGN.items():
        assert (folder / name).read_bytes() == data
    assert os.stat(folder / BIG).st_ino == big.st_ino  # the weights are linked into a new folder, not copied
    # the next save completes and leaves nothing beside the folder
    assert killer.run(request(writer, inputs, "old", folder)) == {"signal": None, "code": 0}
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert snapshot(folder) == ref["snapshot"]


def test_recovery_rolls_back_when_no_new_folder_is_complete(tmp_path, caplog):
    """The fallback's first rename done, the new folder gone: the old one is renamed back, and
    the line says so."""
    folder = tmp_path / "out"
    aside = tmp_path / ".out.999999999.abcd1234.old"  # a pid that cannot be alive
    aside.mkdir()
    (aside / "a").write_text("old")
    with caplog.at_level(logging.WARNING, logger="hf_bbpe"):
        note = recover_folder(folder)
    assert note is not None and "rolled it back" in note and note in caplog.text
    assert (folder / "a").read_text() == "old" and sorted(os.listdir(tmp_path)) == ["out"]


def test_save_pretrained_keeps_foreign_files_and_drops_stale_tokenizer_files(inputs, tmp_path):
    """A save owns the tokenizer files (saved_folder.saved_files): a CLI folder saved again with
    save_pretrained loses its old tokenizer.model instead of keeping a second tokenizer."""
    folder = tmp_path / "model"
    shutil.copytree(inputs["small"], folder)
    (folder / "README.md").write_text("mine")
    (folder / "weights.bin").write_bytes(b"w" * 10)
    BBPETokenizer.from_engine(conversion.load(inputs["large"])).save_pretrained(folder)
    assert not (folder / "tokenizer.model").exists() and not (folder / "tokenizer.vocab").exists()
    assert (folder / "README.md").read_text() == "mine" and (folder / "weights.bin").read_bytes() == b"w" * 10
    assert sorted(os.listdir(tmp_path)) == ["model"]
    check_folder_agrees(folder)


@pytest.mark.parametrize("stale,into", [("tokenizer.model", "large"), ("tokenizer.model", "small"),
                                        ("tokenizer.json", "large"), ("merges.txt", "large")])
def test_a_folder_of_mixed_files_is_refused_by_every_loader_of_ours(inputs, tmp_path, stale, into):
    folder = tmp_path / "mixed"
    shutil.copytree(inputs[into], folder)
    shutil.copy(inputs["small" if into == "large" else "large"] / stale, folder / stale)
    with pytest.raises(MixedFolderError) as caught:
        check_folder_agrees(folder)
    message = str(caught.value)
    assert "\n" not in message and stale in message and "different tokenizers" in message
    with pytest.raises(MixedFolderError, match=stale):
        BBPETokenizer.from_pretrained(folder)
    with pytest.raises(conversion.FormatError, match=stale):
        conversion.load(folder)
    assert_one_line_error(run_cli("inspect", folder, check=False), stale, "different tokenizers")


def test_a_converted_ranks_mode_folder_is_not_mixed(tmp_path):
    """A ranks-mode tokenizer.json lists more merges than merges.txt (merges that rebuild tokens no
    single merge makes): the same tokenizer, not two; a merges.txt with one merge gone still is."""
    from hf_bbpe.hf.saved_folder import folder_disagreement

    from tests.support.cli import run_cli

    source = Path(__import__("llama_models").__file__).parent / "llama3" / "tokenizer.model"
    out = tmp_path / "llama3"
    run_cli("convert", source, "--to", "hf", "--out", out)
    assert folder_disagreement(out) is None
    lines = (out / "merges.txt").read_text(encoding="utf-8").splitlines()
    del lines[5000]
    (out / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert "vocab.json + merges.txt, tokenizer.json: 127,065 merges" in folder_disagreement(out)
