#!/usr/bin/env bash
# Create the virtual environments (idempotent; safe to re-run).
#   bash scripts/setup.sh         .venv        transformers 5.x, torch 2.13.0 (CPU), every test reference
#                                 .venv-tf457  transformers 4.57, for the transformers-integration tests
#                                              on the old major (HF_BBPE_SKIP_TF457=1 skips it)
#   bash scripts/setup.sh --demo  .venv-demo   hf_bbpe and its own dependencies only (transformers,
#                                              tokenizers, numpy: no torch, no test stack), what
#                                              scripts/demo.py needs
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

make_venv() {  # make_venv DIR
  if [ ! -x "$1/bin/python" ]; then
    "$PYTHON" -m venv "$1"
    "$1/bin/python" -m pip install -q --upgrade pip
  fi
}

if [ "${1:-}" = "--demo" ]; then
  make_venv .venv-demo
  .venv-demo/bin/python -m pip install -q -e .
  exit 0
elif [ -n "${1:-}" ]; then
  echo "usage: bash scripts/setup.sh [--demo]" >&2
  exit 2
fi

make_venv .venv
# llama.cpp for the GGUF tests, built from source in the background while the rest installs (the
# script skips a finished build; its stderr says how long it took)
PYTHON=.venv/bin/python bash scripts/build_llama_cpp.sh > /dev/null 2> .venv/build_llama_cpp.log &
LLAMA_CPP_BUILD=$!
# torch first and pinned: 2.13.0 is the CPU build on these machines; anything newer is CUDA.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[torch,test,app,ray,datatrove]"

if [ "${HF_BBPE_SKIP_TF457:-0}" != "1" ]; then
  make_venv .venv-tf457
  .venv-tf457/bin/python -m pip install -q "transformers>=4.57,<4.58" "torch==2.13.0"
  .venv-tf457/bin/python -m pip install -q -e ".[test]"
fi

# tokenizers.js for the JavaScript tests, from npm (the script skips a finished install; about a second)
if command -v node > /dev/null && command -v npm > /dev/null; then
  bash scripts/install_tokenizers_js.sh > /dev/null
else
  echo "setup: node/npm not found: the JavaScript tests (tests/hf/test_tokenizers_js.py) will skip" >&2
fi

if ! wait "$LLAMA_CPP_BUILD"; then
  cat .venv/build_llama_cpp.log >&2
  echo "setup: building llama.cpp failed (scripts/build_llama_cpp.sh)" >&2
  exit 1
fi
grep -h "llama.cpp built" .venv/build_llama_cpp.log >&2 || true
