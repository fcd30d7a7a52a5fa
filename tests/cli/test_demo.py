"""``scripts/demo.py`` (what ``bash scripts/demo.sh`` runs once its venv is set up) works, and shows
tokens as the audit and inspect do: escaped once, part of a character as \\xNN."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.cli import cli_env

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_and_shows_tokens_escaped_once():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], capture_output=True, env=cli_env(),
                          timeout=300)
    out = proc.stdout.decode("utf-8")
    assert proc.returncode == 0, proc.stderr.decode("utf-8")
    assert r"'\xd0' '\x9f' 'р' 'и'" in out and "\\\\" not in out, out  # the first letter of Привет in two bytes
    assert "same ids as the engine on 200 documents" in out


FAKE_PYTHON = """#!/usr/bin/env bash
# stands in for python: makes a venv's bin/python (a copy of itself), and logs every other call
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0
fi
echo "$0 $*" >> "$PIP_LOG"
"""

FAKE_LLAMA_CPP_BUILD = """#!/usr/bin/env bash
# stands in for scripts/build_llama_cpp.sh (a real build takes minutes): logs that it was asked
echo "build_llama_cpp.sh PYTHON=$PYTHON" >> "$PIP_LOG"
echo "llama.cpp built (stand-in)" >&2
"""

FAKE_TOKENIZERS_JS_INSTALL = """#!/usr/bin/env bash
# stands in for scripts/install_tokenizers_js.sh (npm): logs that it was asked
echo "install_tokenizers_js.sh" >> "$PIP_LOG"
"""


def _run_script(tmp_path, script: str, *args: str) -> list[str]:
    """Run a copy of scripts/SCRIPT in an empty clone-like folder with python, the llama.cpp
    build and the tokenizers.js install replaced by fakes that log what they are asked to do (installing and building for real
    need the registries and minutes); its log lines."""
    (tmp_path / "scripts").mkdir(exist_ok=True)
    for name in ("setup.sh", "demo.sh"):
        (tmp_path / "scripts" / name).write_bytes((ROOT / "scripts" / name).read_bytes())
    (tmp_path / "scripts" / "build_llama_cpp.sh").write_text(FAKE_LLAMA_CPP_BUILD)
    (tmp_path / "scripts" / "install_tokenizers_js.sh").write_text(FAKE_TOKENIZERS_JS_INSTALL)
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {**cli_env(), "PYTHON": str(fake), "PIP_LOG": str(log)}
    env.pop("HF_BBPE_SKIP_TF457", None)
    subprocess.run(["bash", str(tmp_path / "scripts" / script), *args], check=True, env=env, timeout=60)
    return log.read_text().splitlines()


def test_demo_sets_up_hf_bbpe_alone(tmp_path):
    """bash scripts/demo.sh installs the clone (hf_bbpe, with transformers as its dependency) into
    .venv-demo, and nothing of the test stack: no torch, no extras (Ray, Gradio, Whisper, ...)."""
    calls = _run_script(tmp_path, "demo.sh")
    installs = [c for c in calls if " pip install " in c and "--upgrade pip" not in c]
    assert installs == [".venv-demo/bin/python -m pip install -q -e ."], calls
    assert calls[-1] == ".venv-demo/bin/python scripts/demo.py"
    assert not any("build_llama_cpp" in c or "tokenizers_js" in c for c in calls), calls
    assert not (tmp_path / ".venv").exists()


def test_the_test_setup_still_installs_everything(tmp_path):
    calls = _run_script(tmp_path, "setup.sh")
    assert any(c.endswith('pip install -q -e .[torch,test,app,ray,datatrove]') for c in calls), calls
    assert any(".venv-tf457/bin/python -m pip install -q -e .[test]" in c for c in calls), calls
    assert "build_llama_cpp.sh PYTHON=.venv/bin/python" in calls, calls  # the GGUF tests' llama.cpp
    if shutil.which("node") and shutil.which("npm"):  # the JavaScript tests' tokenizers.js (CI installs Node)
        assert "install_tokenizers_js.sh" in calls, calls
