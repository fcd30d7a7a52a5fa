"""Every way of loading a saved folder gives the engine's ids, on transformers 5.x and 4.57, with and without hf_bbpe.

a. ``BBPETokenizer.from_pretrained``; b. ``AutoTokenizer`` after ``import hf_bbpe``;
c. ``AutoTokenizer`` where hf_bbpe cannot be imported (the tokenizer.json twin);
d. the same with ``trust_remote_code=True``: on a default folder (no code) the same fast class;
   on a ``remote_code=True`` folder its code (BBPETokenizerFast, a fast class as vLLM and
   xgrammar need; BBPETokenizer with ``use_fast=False`` on 4.57), with hf_bbpe importable or not;
e. GPT-2-style folders from elsewhere (cl100k / o200k folders: test_tokenization_bbpe_converted.py).
Runs on transformers 5.x and, through scripts/test.sh, on 4.57; a folder saved by one major is
also loaded by the other when its virtual environment exists.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import transformers
from tests.support.hf import (
    EOT,
    gpt2_folder,
    load_elsewhere,
    mix_docs,
    run_python,
    tiktoken_gpt2,
    trained_engine,
)
from transformers import AddedToken, AutoTokenizer

from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat

FAST_CLASSES = {"PreTrainedTokenizerFast", "TokenizersBackend"}
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def engine():
    return trained_engine()


@pytest.fixture(scope="module")
def docs() -> list[str]:
    # real text plus the tokens the folder adds, so added-token matching is on every path
    return mix_docs() + [f"one{EOT}two {EOT}", "user <x> said [L]  hi<|im_end|>"]


def _saved(engine, path: Path, remote_code: bool) -> Path:
    hf = BBPETokenizer.from_engine(engine, eos_token=EOT, pad_token="<|pad|>",
                                   additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    hf.add_tokens(["<x>", AddedToken("[L]", lstrip=True)])
    hf.save_pretrained(path, remote_code=remote_code)
    return path


@pytest.fixture(scope="module")
def folder(engine, tmp_path_factory):
    """A folder saved with the defaults: tokenizer files, no code."""
    return _saved(engine, tmp_path_factory.mktemp("saved"), remote_code=False)


@pytest.fixture(scope="module")
def remote_folder(engine, tmp_path_factory):
    """The same tokenizer saved with ``remote_code=True``."""
    return _saved(engine, tmp_path_factory.mktemp("remote"), remote_code=True)


@pytest.fixture(scope="module")
def expected(folder, docs):
    """The engine's ids: added tokens by id, the text between them by ``encode_ordinary``."""
    hf = BBPETokenizer.from_pretrained(folder)
    engine = hf.engine
    added = {"<x>": hf.convert_tokens_to_ids("<x>"), "[L]": hf.convert_tokens_to_ids("[L]")}
    out = []
    for doc in docs:
        ids = engine.encode(doc, allowed_special="all") if "<x>" not in doc else (
            engine.encode("user ") + [added["<x>"]] + engine.encode(" said")  # "[L]" strips the spaces before it
            + [added["[L]"]] + engine.encode("  hi") + [engine.special_tokens["<|im_end|>"]])
        out.append(ids)
    return out


@pytest.fixture(scope="module")
def text_file(docs, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("text") / "docs.json"
    path.write_text(json.dumps(docs), encoding="utf-8")
    return path


def test_a_bbpe_from_pretrained(folder, docs, expected):
    hf = BBPETokenizer.from_pretrained(folder)
    assert [hf(doc)["input_ids"] for doc in docs] == expected
    assert hf(docs)["input_ids"] == expected


def test_b_auto_tokenizer_with_hf_bbpe_imported_gives_the_fast_twin(folder, docs, expected):
    import hf_bbpe  # noqa: F401  (registers BBPETokenizer with AutoTokenizer)

    tok = AutoTokenizer.from_pretrained(folder)
    assert type(tok).__name__ in FAST_CLASSES
    assert [tok(doc)["input_ids"] for doc in docs] == expected


def test_b_auto_tokenizer_resolves_the_registered_name(folder, docs, expected, tmp_path):
    """A folder or model config that names BBPETokenizer gets it once hf_bbpe is imported."""
    import shutil

    from hf_bbpe.hf.auto_registration import register_when_auto_tokenizer_loads

    register_when_auto_tokenizer_loads()  # what import hf_bbpe does; AutoTokenizer is loaded here
    named = tmp_path / "named"
    shutil.copytree(folder, named)
    config = json.loads((named / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["tokenizer_class"] = "BBPETokenizer"
    assert "auto_map" not in config  # a default folder carries no code
    (named / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    tok = AutoTokenizer.from_pretrained(named)
    assert type(tok) is BBPETokenizer
    assert [tok(doc)["input_ids"] for doc in docs] == expected


def test_registration_waits_for_auto_tokenizer_to_load(tmp_path):
    """Registering must not import AutoTokenizer (and with it torch) before the user does."""
    out = run_python(
        """
        import sys
        from hf_bbpe.hf.auto_registration import register_when_auto_tokenizer_loads
        register_when_auto_tokenizer_loads()
        print("transformers.models.auto.tokenization_auto" in sys.modules)
        from transformers import AutoTokenizer
        from transformers.models.auto.tokenization_auto import tokenizer_class_from_name
        from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
        print(tokenizer_class_from_name("BBPETokenizer") is BBPETokenizer)
        """,
        tmp_path, block_hf_bbpe=False)
    assert out.split() == ["False", "True"]


def test_importing_hf_bbpe_registers_the_class(tmp_path):
    out = run_python(
        """
        import sys
        import hf_bbpe
        print("transformers.models.auto.tokenization_auto" in sys.modules)
        from transformers import AutoTokenizer
        from transformers.models.auto.tokenization_auto import tokenizer_class_from_name
        print(tokenizer_class_from_name("BBPETokenizer") is hf_bbpe.BBPETokenizer)
        """,
        tmp_path, block_hf_bbpe=False)
    assert out.split() == ["False", "True"]


@pytest.fixture(scope="module")
def loaded_elsewhere(folder, text_file, tmp_path_factory) -> dict:
    return load_elsewhere(str(folder), text_file, tmp_path_factory.mktemp("elsewhere"))


def test_c_auto_tokenizer_without_hf_bbpe(loaded_elsewhere, expected):
    assert loaded_elsewhere["plain"]["class"] in FAST_CLASSES
    assert loaded_elsewhere["plain"]["ids"] == expected


def test_d_trust_remote_code_on_a_default_folder_gives_the_fast_class(loaded_elsewhere, expected):
    """vLLM and SGLang pass ``trust_remote_code=True``: harmless on a folder with no code."""
    for path in ("remote", "remote_slow"):
        assert loaded_elsewhere[path]["module"].startswith("transformers."), path
        assert loaded_elsewhere[path]["ids"] == expected, path
    assert loaded_elsewhere["remote"]["class"] in FAST_CLASSES and loaded_elsewhere["remote"]["fast"]


def _check_remote_code_paths(loaded: dict, expected: list, slow_class: str) -> None:
    """``trust_remote_code=True`` gives the folder's fast class (what vLLM asks for), and
    ``use_fast=False`` ``slow_class``; every path has the same ids and length."""
    remote, remote_slow = loaded["remote"], loaded["remote_slow"]
    assert remote["class"] == "BBPETokenizerFast" and remote["fast"]
    assert remote_slow["class"] == slow_class and remote_slow["fast"] == (slow_class == "BBPETokenizerFast")
    for path in ("plain", "remote", "remote_slow"):
        assert loaded[path]["module"].startswith("transformers" if path == "plain" else "transformers_modules."), path
        assert loaded[path]["ids"] == expected, path
        assert loaded[path]["len"] == loaded[path]["entries"] == loaded[path]["max_id"] + 1 == loaded["plain"]["len"]


# transformers 5.x ignores use_fast (its AutoTokenizer takes the fast class auto_map names)
SLOW_BY_REMOTE_CODE = "BBPETokenizer" if int(transformers.__version__.split(".")[0]) < 5 else "BBPETokenizerFast"


def test_d_trust_remote_code_without_hf_bbpe(remote_folder, text_file, expected, tmp_path):
    loaded = load_elsewhere(str(remote_folder), text_file, tmp_path)
    assert loaded["plain"]["class"] in FAST_CLASSES
    _check_remote_code_paths(loaded, expected, SLOW_BY_REMOTE_CODE)


def test_d_trust_remote_code_with_hf_bbpe_installed(remote_folder, text_file, expected, tmp_path):
    loaded = load_elsewhere(str(remote_folder), text_file, tmp_path, block_hf_bbpe=False)
    _check_remote_code_paths(loaded, expected, SLOW_BY_REMOTE_CODE)


def test_fast_twin_ids_and_offsets(folder, docs, expected):
    fast = AutoTokenizer.from_pretrained(folder)
    slow = BBPETokenizer.from_pretrained(folder)
    for doc, ids in zip(docs, expected):
        encoding = fast(doc, return_offsets_mapping=True)
        assert encoding["input_ids"] == ids
        offsets = encoding["offset_mapping"]
        assert [start for start, _ in offsets] == sorted(start for start, _ in offsets)
        for idx, (start, end) in zip(ids, offsets):
            assert 0 <= start <= end <= len(doc)
            piece = doc[start:end]
            if idx in slow.added_tokens_decoder:
                assert piece.strip() == slow.added_tokens_decoder[idx].content
                continue
            token = slow.engine.vocab[idx]
            try:
                assert piece == token.decode("utf-8")  # a whole-character token covers exactly its text
            except UnicodeDecodeError:  # a piece of a character points at that character
                assert token in piece.encode("utf-8")
    assert fast.decode(expected[0]) == slow.decode(expected[0]) == docs[0]


def test_fast_twin_keeps_bos_eos_and_pairs(engine, tmp_path):
    hf = BBPETokenizer.from_engine(engine, bos_token="<|bos|>", eos_token=EOT, add_bos_token=True,
                                   add_eos_token=True)
    hf.save_pretrained(tmp_path)
    fast = AutoTokenizer.from_pretrained(tmp_path)
    for args in (("hello there",), ("hello there", "and a pair")):
        assert fast(*args)["input_ids"] == hf(*args)["input_ids"]
        assert fast(*args, add_special_tokens=False)["input_ids"] == hf(*args, add_special_tokens=False)["input_ids"]


def test_gpt2_folder_from_elsewhere(tmp_path):
    folder = gpt2_folder(tmp_path / "gpt2", {"model_max_length": 1024, "bos_token": EOT, "eos_token": EOT,
                                             "unk_token": EOT, "add_prefix_space": False, "errors": "replace"})
    hf = BBPETokenizer.from_pretrained(folder)
    reference = tiktoken_gpt2()
    docs = mix_docs()
    assert [hf(doc)["input_ids"] for doc in docs] == [reference.encode_ordinary(doc) for doc in docs]
    assert hf(f"a{EOT}b")["input_ids"] == reference.encode(f"a{EOT}b", allowed_special="all")
    assert len(hf) == 50257 and hf.eos_token_id == 50256
    # the token strings are GPT-2's own: vocab.json maps each to the same id
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    assert hf.get_vocab() == vocab
    saved = tmp_path / "resaved"
    hf.save_pretrained(saved)
    assert json.loads((saved / "vocab.json").read_text(encoding="utf-8")) == {k: v for k, v in vocab.items() if k != EOT}
    assert (saved / "merges.txt").read_text(encoding="utf-8") == (folder / "merges.txt").read_text(encoding="utf-8")
    assert AutoTokenizer.from_pretrained(saved)(docs[3])["input_ids"] == reference.encode_ordinary(docs[3])


def test_folder_saved_by_transformers_gpt2_tokenizer(tmp_path):
    """A folder written by transformers' own GPT2Tokenizer: 4.57's slow one writes vocab.json + merges.txt,
    which BBPETokenizer loads; 5.x writes only tokenizer.json, which conversion.load reads."""
    from transformers import GPT2Tokenizer

    encoder, merges = REPO / "tests/data/gpt2/encoder.json", REPO / "tests/data/gpt2/vocab.bpe"
    if int(transformers.__version__.split(".")[0]) < 5:
        GPT2Tokenizer(vocab_file=str(encoder), merges_file=str(merges)).save_pretrained(tmp_path)
        assert (tmp_path / "merges.txt").exists()
        hf = BBPETokenizer.from_pretrained(tmp_path)
    else:  # 5.x takes the files as paths under new names and saves only tokenizer.json
        GPT2Tokenizer(vocab=str(encoder), merges=str(merges)).save_pretrained(tmp_path)
        assert not (tmp_path / "merges.txt").exists()
        import conversion

        hf = BBPETokenizer.from_engine(conversion.load(tmp_path), eos_token=EOT)
    reference = tiktoken_gpt2()
    docs = mix_docs()
    assert [hf(doc)["input_ids"] for doc in docs] == [reference.encode_ordinary(doc) for doc in docs]
    assert hf.eos_token == EOT


def _other_venv() -> Path | None:
    """The interpreter of the other transformers major, if scripts/setup.sh made it."""
    major = int(transformers.__version__.split(".")[0])
    candidates = [REPO / ".venv-tf457" / "bin" / "python"] if major >= 5 else [REPO / ".venv" / "bin" / "python"]
    for python in candidates:
        if python.exists() and python.parent.parent.resolve() != Path(sys.prefix).resolve():
            return python
    return None


def test_folder_saved_here_loads_in_the_other_transformers_major(folder, remote_folder, text_file, expected,
                                                                 tmp_path):
    python = _other_venv()
    if python is None:
        pytest.skip("the other transformers major's venv is not there (scripts/setup.sh makes .venv and .venv-tf457)")
    plain = load_elsewhere(str(folder), text_file, tmp_path, python=python)
    assert plain["plain"]["class"] in FAST_CLASSES and plain["plain"]["ids"] == expected
    loaded = load_elsewhere(str(remote_folder), text_file, tmp_path, python=python)
    assert loaded["plain"]["class"] in FAST_CLASSES
    _check_remote_code_paths(loaded, expected, "BBPETokenizerFast" if SLOW_BY_REMOTE_CODE == "BBPETokenizer"
                             else "BBPETokenizer")
