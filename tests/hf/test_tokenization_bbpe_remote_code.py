"""The code a saved folder carries for ``trust_remote_code=True`` is complete and self-contained.

transformers copies ``tokenization_bbpe.py`` and, following ``from .x import`` lines, the modules
it needs. 4.57 copies only the modules a remote-code file imports *directly* (for a local folder),
so tokenization_bbpe.py must name the whole closure itself. Runs on 5.x and 4.57.
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
from hf_bbpe.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat

MODULE = Path(tokenization_bbpe.__file__)


def test_every_module_of_the_closure_is_imported_directly():
    closure = {Path(path).stem for path in get_relative_import_files(MODULE)}
    direct = set(get_relative_imports(MODULE))
    assert closure == direct, f"add to tokenization_bbpe.py's import list: {sorted(closure - direct)}"


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
    assert needed == {path.name for path in folder.glob("*.py")}
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
