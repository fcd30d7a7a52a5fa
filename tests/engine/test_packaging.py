"""What installing and importing the package brings: declared dependencies, and a light import.

* Every third-party module that hf_bbpe or conversion imports belongs to a distribution that
  pyproject.toml declares (numpy was imported by conversion/ without being declared).
* ``import hf_bbpe`` and encoding load no third-party module but ``regex`` (tqdm and
  multiprocessing used to load with the engine; they now load when training first needs them).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hf_bbpe", "conversion")


def _imported_top_level_modules() -> dict[str, str]:
    """``{third-party module: a file importing it}`` over the package sources."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PACKAGES:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_every_imported_third_party_package_is_declared():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml with the standard library")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {_requirement_name(r) for r in project["dependencies"]}
    declared |= {_requirement_name(r) for extra, reqs in project["optional-dependencies"].items()
                 if extra != "test" for r in reqs}
    distributions = importlib.metadata.packages_distributions()
    imported = _imported_top_level_modules()
    assert {"regex", "numpy"} <= imported.keys()
    for module, where in imported.items():
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        assert names & declared, f"{where} imports {module!r}, which pyproject.toml does not declare"


def test_importing_and_encoding_load_only_regex():
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "import hf_bbpe\n"
        "tok = hf_bbpe.RegexTokenizer('gpt4')\n"
        "tok.register_special_tokens({'<|x|>': 300})\n"
        "tok.encode('hello world <|x|>', allowed_special='all')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    loaded = set(json.loads(out))
    third_party = {m for m in loaded if m not in sys.stdlib_module_names and not m.startswith("_")} - {"hf_bbpe"}
    assert third_party == {"regex"}
    assert "multiprocessing" not in loaded
