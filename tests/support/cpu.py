"""Tests that need a CPU feature this machine may lack.

Such a test is not broken where the feature is missing: it skips with a reason that starts with
CPU_FEATURE_MISSING, and CI (tests/conftest.py) reports those skips as "could not run on this
CPU" instead of failing the run, while every other skip stays fatal. HF_BBPE_NO_AVX512=1 makes a
machine with AVX-512 behave as one without it (the SSE2 build then runs everywhere).
"""

from __future__ import annotations

import pytest

from hf_bbpe.engine.chunking import patterns

CPU_FEATURE_MISSING = "CPU feature missing: "
"""The start of the reason of every skip that only says this CPU lacks a feature."""

HAS_AVX512 = patterns._native.wide_windows()
"""The AVX-512 window scanners run in this process (CPU support, and HF_BBPE_NO_AVX512 unset)."""

needs_avx512 = pytest.mark.skipif(
    not HAS_AVX512, reason=CPU_FEATURE_MISSING + "AVX-512 BW/VL/VBMI (or HF_BBPE_NO_AVX512 is set)"
)


def is_cpu_feature_skip(report: pytest.TestReport) -> bool:
    """Whether a skipped test's report is a CPU-feature skip (see CPU_FEATURE_MISSING)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return CPU_FEATURE_MISSING in reason
