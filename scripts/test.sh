#!/usr/bin/env bash
# Set everything up (scripts/setup.sh) and run the whole test suite: on transformers 5.x in
# .venv, then the transformers-integration tests again on transformers 4.57 in .venv-tf457.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# one pytest worker per core (pytest-xdist); the Ray tests share one worker (tests/distributed/conftest.py)
.venv/bin/python -m pytest -q -n auto --dist loadgroup "$@"
if [ "${HF_BBPE_SKIP_TF457:-0}" != "1" ]; then
  echo "--- transformers 4.57 ---"
  .venv-tf457/bin/python -m pytest -q -n auto --dist loadgroup -m transformers_compat "$@"
fi
