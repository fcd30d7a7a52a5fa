"""What every benchmark's JSON records beside its figures: the machine, its load and the date of
the run, and the commit measured. scripts/render_benchmarks.py renders docs/benchmarks.md's
tables from these files, so no figure on that page is typed by hand.

    from bench_results import machine, write_results
    started = machine()
    ...
    write_results(args.json, "bench_train", vars(args), summary, started)

Imported by the bench scripts (scripts/ is on ``sys.path`` when they run).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags() -> list[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return sorted(f for f in line.split(":", 1)[1].split() if f.startswith(("avx512f", "avx2", "sse4_2")))
    except OSError:
        pass
    return []


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except OSError:
        return None
    return out.stdout.strip() or None


def machine() -> dict[str, Any]:
    """The run's context now: UTC date, CPU model and flags, CPUs this process may use, the load
    average (1, 5, 15 minutes), Python, and the commit of the checkout."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cpu_flags": _cpu_flags(),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "commit": _commit(),
    }


def write_results(path: str | os.PathLike, script: str, args: dict[str, Any], results: Any,
                  started: dict[str, Any]) -> None:
    """Write one run's JSON atomically: the script, its arguments, the machine at the start, the
    load average at the end, and the script's own results."""
    sys.path.insert(0, str(ROOT))
    from hf_bbpe.engine.files.atomic_write import write_text_atomic

    record = {"script": script, "args": {k: v for k, v in args.items() if not k.startswith("_")},
              "machine": started, "load_average_end": machine()["load_average"], "results": results}
    write_text_atomic(path, json.dumps(record, indent=1, default=str) + "\n")
