"""Tests that need a CPU feature the machine lacks report so, and do not fail CI (issue 27).

HF_BBPE_NO_AVX512=1 turns the AVX-512 window scanners off for a whole process, so that the
SSE2 build (the one CPUs without AVX-512 run) can be tested and measured on any machine.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]

PROBE = "from hf_bbpe.engine.chunking import patterns; print(patterns._native.wide_windows(), patterns._native.wide_windows(True))"


def _wide_windows_in_subprocess(no_avx512: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "HF_BBPE_NO_AVX512"}
    if no_avx512 is not None:
        env["HF_BBPE_NO_AVX512"] = no_avx512
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout.split()


def _cpu_has_avx512() -> bool:
    """What /proc/cpuinfo says: the features the AVX-512 window scanners need."""
    flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
    return {"avx512f", "avx512bw", "avx512vl", "avx512vbmi", "bmi1", "bmi2"} <= set(flags)


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="reads the CPU's flags from Linux's /proc/cpuinfo")
def test_no_avx512_variable_turns_the_wide_windows_off():
    """With HF_BBPE_NO_AVX512=1 the SSE2 scanners run and cannot be switched to AVX-512; unset
    (or 0) the AVX-512 ones run exactly where the CPU has what they need."""
    assert _wide_windows_in_subprocess("1") == ["False", "False"]
    assert _wide_windows_in_subprocess("0") == [str(_cpu_has_avx512())] * 2
    assert _wide_windows_in_subprocess(None) == [str(_cpu_has_avx512())] * 2


CI_SESSION = '''
import pytest
from tests.conftest import pytest_sessionfinish  # the project's CI rule, unchanged
from tests.support.cpu import CPU_FEATURE_MISSING

@pytest.mark.skipif(True, reason=CPU_FEATURE_MISSING + "AVX-512")
def test_needs_a_feature():
    pass

def test_runs():
    pass
'''


def test_ci_passes_a_cpu_feature_skip(pytester, monkeypatch):
    """In CI a test skipped for a missing CPU feature is reported and the run passes."""
    monkeypatch.setenv("CI", "true")
    pytester.makeconftest(CI_SESSION.split("\n@pytest")[0])
    pytester.makepyfile(test_cpu=CI_SESSION)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*1 test(s) need a CPU feature this machine lacks*"])


def test_ci_fails_any_other_skip(pytester, monkeypatch):
    """In CI any other skip still fails the run, beside a CPU-feature skip."""
    monkeypatch.setenv("CI", "true")
    pytester.makeconftest(CI_SESSION.split("\n@pytest")[0])
    pytester.makepyfile(test_cpu=CI_SESSION + "\ndef test_other():\n    pytest.skip('a reference system is missing')\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 test(s) skipped; in CI every test must run*"])
