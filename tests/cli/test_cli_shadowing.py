"""``python -m hf_bbpe.cli`` run in a folder that has its own ``conversion`` package (llama.cpp's
source tree has one): Python puts the current folder first on sys.path, so that package would be
imported instead of ours. The CLI says which file shadows ours instead of failing inside it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.cli import GPT2_DIR, MODULE_CLI, assert_one_line_error, cli_env

REPO = Path(__file__).resolve().parents[2]


def test_a_conversion_package_in_the_current_folder_is_named(tmp_path):
    fake = tmp_path / "conversion" / "__init__.py"
    fake.parent.mkdir()
    fake.write_text("import torch_is_not_installed_here\n")
    proc = subprocess.run([*MODULE_CLI, "inspect", str(GPT2_DIR)], capture_output=True, cwd=tmp_path, env=cli_env(),
                          timeout=120)
    line = assert_one_line_error(proc, str(fake), "shadows hf_bbpe's conversion package")
    assert "torch_is_not_installed_here" not in line  # found before it ran


def test_a_folder_named_conversion_without_a_package_is_no_shadow(tmp_path):
    """A plain folder (a namespace portion) loses to a real package found later on sys.path, as
    one in site-packages is: the CLI just works. (An editable install is found by a finder that
    Python asks only after sys.path, so there even a plain folder wins, and the CLI says so.)"""
    (tmp_path / "conversion").mkdir()
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run([*MODULE_CLI, "inspect", str(GPT2_DIR)], capture_output=True, cwd=tmp_path, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().startswith("tokenizer: gpt2")
