"""The one place that imports Ray, with an error that names the extra to install, and what the
Ray jobs of this package share."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ray.data

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


def ensure_cluster(address: str | None = None, *, quiet: bool = False) -> ModuleType:
    """``ray``, connected: to the running cluster if this process has one, else to ``address``
    (``None`` or ``"local"`` starts a local cluster here). ``quiet`` keeps workers' logs and Ray's
    info lines off the terminal, for commands that draw their own progress."""
    ray = require_ray()
    if not ray.is_initialized():
        options = {"log_to_driver": False, "logging_level": "ERROR"} if quiet else {}
        if address in (None, "local"):
            ray.init(include_dashboard=False, **options)
        else:
            ray.init(address=address, **options)
    return ray


def cluster_cpus() -> int:
    """CPUs of the running Ray cluster (starting a local one if none is running), at least 1."""
    ray = ensure_cluster()
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def blocks_of_at_most(ds: ray.data.Dataset, rows: int | None) -> ray.data.Dataset:
    """``ds`` cut into blocks of at most ``rows`` rows as it streams (no shuffle; ``None``: as it is).

    A ``map_batches`` task or actor call takes whole blocks, and a reader may put many small files
    in one block (Ray 2.60 reads 32 parquet files of 1.5 MB as one 50 MB block): without this, one
    worker would do all the work while the others wait.
    """
    return ds if rows is None else ds.repartition(target_num_rows_per_block=rows)
