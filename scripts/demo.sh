#!/usr/bin/env bash
# Set up .venv-demo (hf_bbpe and transformers only: scripts/setup.sh --demo), then train a
# tokenizer on the bundled sample and show it working.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
.venv-demo/bin/python scripts/demo.py "$@"
