#!/usr/bin/env bash
# Create .venv with hf_bbpe and everything its tests need (idempotent; safe to re-run).
#   .venv        transformers 5.x, torch 2.13.0 (CPU), test references (tiktoken, rustbpe)
#   .venv-tf457  transformers 4.57, for the transformers-integration tests on the old major
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

make_venv() {  # make_venv DIR
  if [ ! -x "$1/bin/python" ]; then
    "$PYTHON" -m venv "$1"
    "$1/bin/python" -m pip install -q --upgrade pip
  fi
}

make_venv .venv
# torch first and pinned: 2.13.0 is the CPU build on these machines; anything newer is CUDA.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[torch,test,app,ray,datatrove]"

if [ "${HF_BBPE_SKIP_TF457:-0}" != "1" ]; then
  make_venv .venv-tf457
  .venv-tf457/bin/python -m pip install -q "transformers>=4.57,<4.58" "torch==2.13.0"
  .venv-tf457/bin/python -m pip install -q -e ".[test]"
fi
