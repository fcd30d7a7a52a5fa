"""The code a saved folder carries for ``trust_remote_code=True`` is complete and self-contained.

``saved_folder.REMOTE_CODE_MODULES`` lists it; saving copies exactly that list, which must be
``tokenization_bbpe.py`` and its whole relative-import closure. When transformers loads the
folder, 4.57 copies only the modules a local remote-code file imports *directly*, so
tokenization_bbpe.py must name the whole closure itself. Runs on 5.x and 4.57.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from tests.support.hf import EOT, mix_docs, run_python, trained_engine
from transformers.dynamic_module_utils import get_imports, get_relative_import_files, get_relative_imports

import hf_bbpe.tokenization_bbpe as tokenization_bbpe
from hf_bbpe import RegexTokenizer
from hf_bbpe.saved_folder import REMOTE_CODE_MODULES
from hf_bbpe.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat

MODULE = Path(tokenization_bbpe.__file__)


def test_every_module_of_the_closure_is_imported_directly():
    # the closure holds tokenization_bbpe itself too (helpers name BBPETokenizer for type hints)
    closure = {Path(path).stem for path in get_relative_import_files(MODULE)} - {MODULE.stem}
    direct = set(get_relative_imports(MODULE))
    assert closure == direct, f"add to tokenization_bbpe.py's import list: {sorted(closure - direct)}"


def _import_closure(module: Path) -> set[str]:
    """Flat sibling modules that ``module`` imports relatively, transitively (read with ast)."""
    seen, todo = set(), [module.stem]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = ast.parse((module.parent / f"{name}.py").read_text(encoding="utf-8"))
        todo += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 1]
    return seen


def test_the_remote_code_list_is_the_import_closure():
    listed = set(REMOTE_CODE_MODULES)
    assert len(listed) == len(REMOTE_CODE_MODULES)
    closure = _import_closure(MODULE)
    assert listed == closure, (f"saved_folder.REMOTE_CODE_MODULES lacks {sorted(closure - listed)} "
                               f"and lists {sorted(listed - closure)} that tokenization_bbpe.py does not need")
    assert closure == {MODULE.stem} | {Path(path).stem for path in get_relative_import_files(MODULE)}


def test_the_closure_imports_only_siblings_stdlib_and_installed_packages():
    for path in [MODULE] + [Path(p) for p in get_relative_import_files(MODULE)]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and node.module and "." not in node.module, (
                    f"{path.name}: 'from {'.' * node.level}{node.module} import' is not a flat sibling import")
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for name in names:
                assert name.split(".")[0] not in ("hf_bbpe", "conversion"), f"{path.name} imports {name}"
        for name in get_imports(path):  # what transformers' check_imports will import
            assert name in sys.stdlib_module_names or __import__(name), name


def test_saved_folder_holds_the_closure_and_runs_it_alone(tmp_path):
    hf = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT)
    folder = tmp_path / "folder"
    hf.save_pretrained(folder)
    needed = {"tokenization_bbpe.py"} | {Path(path).name for path in get_relative_import_files(MODULE)}
    assert needed == {path.name for path in folder.glob("*.py")} == {f"{name}.py" for name in REMOTE_CODE_MODULES}
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
    """A folder holds no compiled module, so its trainer.py runs merge_loop.py: same merges as C."""
    folder = tmp_path / "folder"
    BBPETokenizer.from_engine(trained_engine(), eos_token=EOT).save_pretrained(folder)
    docs = mix_docs()[:80]
    out = run_python(
        f"""
        import importlib, json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        engine = importlib.import_module("folder.tokenizer")
        kernel = importlib.import_module("folder.trainer").merge_kernel()
        tok = engine.RegexTokenizer("gpt4")
        tok.train({docs!r}, 600, progress=False)
        print(json.dumps([kernel.__name__, [[a, b, new] for (a, b), new in tok.merges.items()]]))
        """,
        tmp_path, block_hf_bbpe=True)
    kernel, merges = json.loads(out.splitlines()[-1])
    assert kernel == "folder.merge_loop"
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
    hf.save_pretrained(folder)
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
