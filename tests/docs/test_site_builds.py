"""The documentation site builds with ``mkdocs build --strict`` (mkdocs.yml sets strict too), so a
broken link, a missing anchor, a page left out of the nav or an API reference to a name that no
longer exists fails CI. Offline: the theme and mkdocstrings need no network."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.docs.doc_examples import ROOT

pytest.importorskip("mkdocs", reason="the test extra installs mkdocs (bash scripts/setup.sh)")
pytest.importorskip("mkdocstrings", reason="the test extra installs mkdocstrings (bash scripts/setup.sh)")


def test_mkdocs_build_strict(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_MKDOCS_2_WARNING="1", HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8").count("from_engine") > 0
