#!/usr/bin/env bash
# Build the C kernels with AddressSanitizer and UBSan and run the engine tests against them.
#
#   bash scripts/sanitize.sh                 # tests/engine, slow tests left out
#   bash scripts/sanitize.sh tests/engine/training/test_merge_loop.py -m ""   # any pytest arguments
#
# The build happens in a temporary copy of the checkout, so the working tree keeps its normal
# kernels. Any sanitizer report fails the run (UBSan does not recover; ASan stops at its first
# error). Leak checks are off: CPython's own allocations would drown them. Needs .venv
# (scripts/setup.sh) and gcc.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY="$REPO/.venv/bin/python"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hf_bbpe-sanitize.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

tar --exclude=.git --exclude='.venv*' --exclude=build --exclude='*.so' --exclude=__pycache__ \
    -cf - hf_bbpe conversion tests scripts setup.py pyproject.toml README.md | tar -xf - -C "$WORK"
cd "$WORK"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-wrapv -fno-omit-frame-pointer -g"  # (-fno-wrapv: Python's flags make signed overflow defined, which hides it from UBSan)
CFLAGS="$SAN" LDFLAGS="$SAN" "$PY" setup.py -q build_ext --inplace > build.log 2>&1 || { cat build.log >&2; exit 1; }

ASAN_LIB=$(gcc -print-file-name=libasan.so)
UBSAN_LIB=$(gcc -print-file-name=libubsan.so)
if [ $# -eq 0 ]; then set -- tests/engine -m "not slow"; fi
LD_PRELOAD="$ASAN_LIB $UBSAN_LIB" \
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
PYTHONPATH="$WORK" PYTHONMALLOC=malloc \
  "$PY" -m pytest -q -p no:cacheprovider -x "$@"
