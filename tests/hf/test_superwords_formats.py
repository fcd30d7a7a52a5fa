"""A trained SuperBPE tokenizer (and a real one extended with superwords) through every format
that holds it, against the real ``tokenizers`` library, on multilingual text and code.

* tokenizer.json is ``Sequence[Split(stage-2 pattern, "Isolated"), ByteLevel(use_regex=false)]``
  and ``tokenizers`` gives the engine's ids on every document;
* so does ``tokenizers`` running the saved vocab.json + merges.txt with the paper's own pipeline
  (the shared README's ``superbpe_tokenizer``), as the paper's code runs its released files;
* the ``.model`` file, ``conversion.load`` of the tokenizer.json and of the saved folder, and
  ``save_pretrained``'s folder through BBPETokenizer, the fast twin ``AutoTokenizer`` gives and a
  fresh interpreter without hf_bbpe (``trust_remote_code``, the pure-Python paths) all give the
  same ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.families import LLAMA3_MODEL, mix_documents
from tests.support.hf import load_elsewhere
from tests.support.superbpe import paper_tokenizer
from tokenizers import Tokenizer as HFTokenizer
from transformers import AutoTokenizer

import conversion
from hf_bbpe import RegexTokenizer, SuperwordConfig, Tokenizer
from hf_bbpe.engine.chunking.patterns import SUPERBPE_STAGE2_SPLIT_PATTERN
from hf_bbpe.engine.training.superwords import count_superwords
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
from hf_bbpe.hf.tokenizer_json_writer import tokenizer_json_dict

pytestmark = pytest.mark.transformers_compat

DATA = Path(__file__).resolve().parents[1] / "data" / "text"
TAYLOR = (DATA / "taylorswift.txt").read_text(encoding="utf-8")
DOCS = mix_documents()
TRAIN, HELD_OUT = DOCS[::2], DOCS[1::2]
TEXTS = HELD_OUT + [
    "def f(x):\n    return x ** 2  # comment\n\n\nclass A:\n\tpass\n",
    "one two three four five six seven: eight nine... 1234567 , , ,  \n\n   x  ",
    "日本語のテキスト、中文文本，한국어 텍스트。 Ελληνικά κείμενα, русский текст.",
    TAYLOR[:20_000],
]


@pytest.fixture(scope="module")
def trained() -> RegexTokenizer:
    tok = RegexTokenizer("superbpe_stage1")
    tok.train([TAYLOR, *TRAIN], 3000, superwords=SuperwordConfig(transition=2000))
    tok.register_special_tokens({"<|endoftext|>": 3000})
    assert count_superwords(tok) > 100
    return tok


@pytest.fixture(scope="module")
def extended_llama3() -> Tokenizer:
    return conversion.load_preset("llama3", LLAMA3_MODEL).extend([TAYLOR, *TRAIN], 500, superwords=True)


@pytest.fixture(params=["trained", "extended_llama3"])
def tok(request) -> Tokenizer:
    return request.getfixturevalue(request.param)


def ids(tok: Tokenizer) -> list[list[int]]:
    return [tok.encode_ordinary(text) for text in TEXTS]


def test_tokenizer_json_runs_in_tokenizers_with_the_engines_ids(tok):
    data = tokenizer_json_dict(tok)
    split, byte_level = data["pre_tokenizer"]["pretokenizers"]
    assert split == {"type": "Split", "pattern": {"Regex": SUPERBPE_STAGE2_SPLIT_PATTERN}, "behavior": "Isolated",
                     "invert": False}
    assert byte_level["type"] == "ByteLevel" and byte_level["use_regex"] is False
    hf = HFTokenizer.from_str(json.dumps(data))
    assert [hf.encode(text, add_special_tokens=False).ids for text in TEXTS] == ids(tok)


def test_the_papers_pipeline_on_the_saved_files_gives_the_engines_ids(trained, tmp_path):
    BBPETokenizer.from_engine(trained).save_pretrained(tmp_path)
    hf = paper_tokenizer(tmp_path)
    assert [hf.encode(text).ids for text in TEXTS] == ids(trained)


def test_model_file_round_trip(tok, tmp_path):
    tok.save(tmp_path / "super")
    loaded = Tokenizer.from_file(tmp_path / "super.model")
    assert loaded.merges == tok.merges and loaded.special_tokens == tok.special_tokens
    assert loaded.chunks(TEXTS[1]) == tok.chunks(TEXTS[1])
    assert ids(loaded) == ids(tok)


def test_conversion_load_of_the_tokenizer_json_and_the_folder(trained, tmp_path):
    conversion.to_tokenizer_json(trained, tmp_path / "tokenizer.json")
    BBPETokenizer.from_engine(trained).save_pretrained(tmp_path / "folder")
    for source in (tmp_path / "tokenizer.json", tmp_path / "folder"):
        loaded = conversion.load(source)
        loaded = getattr(loaded, "tokenizer", loaded)
        assert ids(loaded) == ids(trained), source


def test_save_pretrained_and_its_fast_twin(tok, tmp_path):
    BBPETokenizer.from_engine(tok).save_pretrained(tmp_path)
    expected = ids(tok)
    slow = BBPETokenizer.from_pretrained(tmp_path)
    fast = AutoTokenizer.from_pretrained(tmp_path)
    assert type(fast).__name__ != "BBPETokenizer" and fast.is_fast
    assert [slow(text, add_special_tokens=False)["input_ids"] for text in TEXTS] == expected
    assert [fast(text, add_special_tokens=False)["input_ids"] for text in TEXTS] == expected


@pytest.mark.slow
def test_a_saved_folder_loads_where_hf_bbpe_is_not_installed(trained, tmp_path):
    """The remote code's pure-Python paths: the merge loop's twin is not needed, but the chunk
    encoder's and the isolated Split's are."""
    folder = tmp_path / "folder"
    BBPETokenizer.from_engine(trained).save_pretrained(folder)
    texts = TEXTS[:40] + TEXTS[-4:-1]
    text_file = tmp_path / "texts.json"
    text_file.write_text(json.dumps(texts), encoding="utf-8")
    loaded = load_elsewhere(str(folder), text_file, tmp_path)
    expected = [trained.encode(text, allowed_special="all") for text in texts]
    for name in ("plain", "remote", "remote_slow"):
        assert loaded[name]["ids"] == expected, name
