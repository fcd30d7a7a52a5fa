"""The local Ray cluster the tests of this folder share: started once per session (Ray's start-up
is the slow part of these tests), shut down at the end. Ray is an optional extra: without it the
tests here skip, except in CI, where it must run."""

from __future__ import annotations

import os

import pytest

try:
    import ray
except ImportError:
    if os.environ.get("CI") == "true":
        raise
    ray = None


@pytest.fixture(scope="session")
def cluster():
    """A local two-CPU Ray cluster (``ray.init(num_cpus=2)``)."""
    if ray is None:
        pytest.skip("Ray is not installed (pip install 'hf_bbpe[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), every test of this folder runs in one worker, so
    that the session starts one Ray cluster, not one per worker."""
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.xdist_group("ray"))
