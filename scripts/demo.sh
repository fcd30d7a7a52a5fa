#!/usr/bin/env bash
# Set everything up, then train a tokenizer on the bundled sample and show it working.
set -euo pipefail
cd "$(dirname "$0")/.."
HF_BBPE_SKIP_TF457=1 bash scripts/setup.sh
.venv/bin/python scripts/demo.py "$@"
