#!/usr/bin/env bash
# Install what the JavaScript tests need (idempotent: does nothing when installed): Hugging Face's
# tokenizers.js, @huggingface/tokenizers (no dependencies; transformers.js 4 tokenizes with it), from
# the npm registry with npm. The tests run it under Node (.ci/run installs nodejs and npm).
#   scripts/install_tokenizers_js.sh [DIR]   DIR default: $HF_BBPE_TOKENIZERS_JS_DIR, else ~/.cache/hf_bbpe/tokenizers-js-VERSION
# Prints DIR on success; the package is DIR/node_modules/@huggingface/tokenizers.
set -euo pipefail
VERSION=0.2.0
DIR=${1:-${HF_BBPE_TOKENIZERS_JS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hf_bbpe/tokenizers-js-$VERSION}}
PACKAGE="$DIR/node_modules/@huggingface/tokenizers/package.json"
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9  # one install at a time (test sessions and setup.sh may start together)
if [ -f "$PACKAGE" ] && grep -q "\"version\": \"$VERSION\"" "$PACKAGE"; then
  echo "$DIR"
  exit 0
fi
for tool in node npm; do
  if ! command -v "$tool" > /dev/null; then
    echo "install_tokenizers_js.sh: $tool not found: the JavaScript tests run tokenizers.js under Node" \
      "(Debian/Ubuntu: apt-get install nodejs npm; .ci/run installs them)" >&2
    exit 1
  fi
done
start=$(date +%s)
npm install --prefix "$DIR" --no-audit --no-fund --no-save --loglevel=error "@huggingface/tokenizers@$VERSION" >&2
echo "tokenizers.js $VERSION installed in $(( $(date +%s) - start )) s: $DIR" >&2
echo "$DIR"
