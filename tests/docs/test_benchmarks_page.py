"""docs/benchmarks.md's rendered part equals what scripts/render_benchmarks.py makes from the
benchmarks' JSON in docs/bench-results/ (the run's machine, load and date included), so those
figures are never typed by hand."""

from __future__ import annotations

import subprocess
import sys

from tests.docs.doc_examples import ROOT


def test_benchmarks_page_equals_the_rendered_json():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "render_benchmarks.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
