"""Saved folders are standard: no code unless ``remote_code=True``, and then code that is whole.

By default a folder holds tokenizer files only, as every other tokenizer repository does. With
``save_pretrained(..., remote_code=True)`` it holds tokenization_bbpe.py and its relative-import
closure, flattened (remote_code.py computes it when saving). transformers 4.57 copies only the
modules a local remote-code file imports *directly*, so the saved tokenization_bbpe.py must name
the whole closure itself; transformers' own closure walker checks the saved copy. Runs on 5.x
and 4.57.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from tests.support.hf import EOT, mix_docs, run_python, trained_engine
from transformers.dynamic_module_utils import get_imports, get_relative_import_files, get_relative_imports

from hf_bbpe import RegexTokenizer
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat


def _remote_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "folder"
    BBPETokenizer.from_engine(trained_engine(), eos_token=EOT).save_pretrained(folder, remote_code=True)
    return folder


def test_a_default_save_holds_no_code_and_loads_without_hf_bbpe(tmp_path):
    hf = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT)
    folder = tmp_path / "folder"
    hf.save_pretrained(folder)
    assert not list(folder.glob("*.py"))
    assert "auto_map" not in json.loads((folder / "tokenizer_config.json").read_text())
    docs = mix_docs()[:40]
    out = run_python(
        f"""
        import json
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained({str(folder)!r}, trust_remote_code=True)
        print(json.dumps([type(tok).__name__, [tok(doc)["input_ids"] for doc in {docs!r}]]))
        """,
        tmp_path, block_hf_bbpe=True)
    name, ids = json.loads(out.splitlines()[-1])
    assert name in ("PreTrainedTokenizerFast", "TokenizersBackend")
    assert ids == [hf(doc)["input_ids"] for doc in docs]


def test_a_default_save_over_a_remote_code_folder_removes_the_code(tmp_path):
    folder = _remote_folder(tmp_path)
    assert list(folder.glob("*.py"))
    BBPETokenizer.from_pretrained(folder).save_pretrained(folder, remote_code=False)
    assert not list(folder.glob("*.py"))
    assert "auto_map" not in json.loads((folder / "tokenizer_config.json").read_text())


def test_the_saved_code_is_the_closure_and_names_it_directly(tmp_path):
    folder = _remote_folder(tmp_path)
    entry = folder / "tokenization_bbpe.py"
    closure = {Path(path).name for path in get_relative_import_files(entry)}
    assert {path.name for path in folder.glob("*.py")} == {entry.name} | closure
    direct = {f"{name}.py" for name in get_relative_imports(entry)}
    assert closure - {entry.name} == direct - {entry.name}, "transformers 4.57 would miss modules"


def test_the_saved_code_imports_only_siblings_stdlib_and_installed_packages(tmp_path):
    folder = _remote_folder(tmp_path)
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and (node.module is None or "." not in node.module), (
                    f"{path.name}, line {node.lineno}: not a flat sibling import")
                if node.module is None:
                    assert all((folder / f"{alias.name}.py").is_file() for alias in node.names), path.name
                else:
                    assert (folder / f"{node.module}.py").is_file() or node.module.startswith("_"), (
                        f"{path.name} imports .{node.module}, which the folder lacks")
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for name in names:
                assert name.split(".")[0] not in ("hf_bbpe", "conversion"), f"{path.name} imports {name}"
        for name in get_imports(path):  # what transformers' check_imports will import
            assert name in sys.stdlib_module_names or __import__(name), name


def test_saved_folder_holds_the_closure_and_runs_it_alone(tmp_path):
    hf = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT)
    folder = tmp_path / "folder"
    hf.save_pretrained(folder, remote_code=True)
    # the copied modules import as a package of their own, without hf_bbpe, and encode alike
    docs = mix_docs()[:50]
    out = run_python(
        f"""
        import importlib, json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        module = importlib.import_module("folder.tokenization_bbpe")
        tok = module.BBPETokenizer.from_pretrained({str(folder)!r})
        print(json.dumps([tok(doc)["input_ids"] for doc in {docs!r}]))
        """,
        tmp_path, block_hf_bbpe=True)
    assert json.loads(out.splitlines()[-1]) == [hf(doc)["input_ids"] for doc in docs]


def test_saved_folder_trains_with_the_python_merge_loop(tmp_path):
    """A folder holds no compiled module, so its merge_loop.py runs merge_loop_reference.py: same merges as C."""
    folder = _remote_folder(tmp_path)
    docs = mix_docs()[:80]
    out = run_python(
        f"""
        import importlib, json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        engine = importlib.import_module("folder.tokenizer")
        kernel = importlib.import_module("folder.merge_loop").merge_kernel()
        tok = engine.RegexTokenizer("gpt4")
        tok.train({docs!r}, 600, progress=False)
        print(json.dumps([kernel.__name__, [[a, b, new] for (a, b), new in tok.merges.items()]]))
        """,
        tmp_path, block_hf_bbpe=True)
    kernel, merges = json.loads(out.splitlines()[-1])
    assert kernel == "folder.merge_loop_reference"
    expected = RegexTokenizer("gpt4")
    expected.train(docs, 600, progress=False)
    assert merges == [[a, b, new] for (a, b), new in expected.merges.items()] and len(merges) == 600 - 256


def test_a_folder_loaded_as_remote_code_saves_the_same_folder(tmp_path):
    """BBPETokenizer loaded as remote code where hf_bbpe cannot be imported (the class auto_map
    names for ``use_fast=False``; transformers 5.x's AutoTokenizer always takes the fast one, so
    it is asked for by name) saves itself again from transformers' module cache: the same files,
    and the copy loads and encodes alike."""
    hf = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, pad_token="<|pad|>")
    hf.add_tokens(["<x>"])
    folder, again = tmp_path / "folder", tmp_path / "again"
    hf.save_pretrained(folder, remote_code=True)
    docs = mix_docs()[:30] + [f"a{EOT}b <x>"]
    out = run_python(
        f"""
        import json
        from transformers.dynamic_module_utils import get_class_from_dynamic_module

        def load(path):
            slow = json.load(open(f"{{path}}/tokenizer_config.json"))["auto_map"]["AutoTokenizer"][0]
            return get_class_from_dynamic_module(slow, path).from_pretrained(path)

        tok = load({str(folder)!r})
        tok.save_pretrained({str(again)!r})
        copy = load({str(again)!r})
        print(json.dumps([type(tok).__name__, type(copy).__name__, [copy(doc)["input_ids"] for doc in {docs!r}]]))
        """,
        tmp_path, block_hf_bbpe=True)
    first, second, ids = json.loads(out.splitlines()[-1])
    assert first == second == "BBPETokenizer"
    assert ids == [hf(doc)["input_ids"] for doc in docs]
    names = sorted(path.name for path in folder.iterdir())
    assert names == sorted(path.name for path in again.iterdir())
    for name in names:
        assert (folder / name).read_bytes() == (again / name).read_bytes(), name
