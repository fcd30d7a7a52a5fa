"""The installed ``hf-bbpe`` console script and ``python -m hf_bbpe.cli`` are the same program."""

import subprocess

from tests.support.cli import CLI, MODULE_CLI, SCRIPT, cli_env, run_cli


def test_console_script_and_module_are_the_same_program():
    """The installed ``hf-bbpe`` entry point runs hf_bbpe.cli:main, like ``python -m hf_bbpe.cli``."""
    assert SCRIPT.exists(), "the hf-bbpe console script is not installed (pip install -e .)"
    via_module = subprocess.run(MODULE_CLI + ["--help"], capture_output=True, env=cli_env(), timeout=60)
    via_script = run_cli("--help")
    assert CLI == [str(SCRIPT)]
    assert via_module.returncode == 0 and b"usage: hf-bbpe" in via_script.stdout
    assert via_script.stdout == via_module.stdout
