"""The one place that imports Ray, with an error that names the extra to install."""

from __future__ import annotations

from types import ModuleType

RAY_EXTRA_HINT = "pip install 'hf_bbpe[ray]'"


def require_ray() -> ModuleType:
    """``ray`` with Ray Data loaded; ImportError naming the ``ray`` extra if it is not installed."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"hf_bbpe.distributed needs Ray Data, which is not installed ({error}); install the extra: {RAY_EXTRA_HINT}"
        ) from error
    return ray


def cluster_cpus() -> int:
    """CPUs of the running Ray cluster (starting a local one if none is running), at least 1."""
    ray = require_ray()
    if not ray.is_initialized():
        ray.init()
    return max(1, int(ray.cluster_resources().get("CPU", 1)))
