#!/usr/bin/env bash
# ctest driver for the browser test of the web UI: checks that node, Debian's chromium and
# `npm ci` (puppeteer-core, pinned in package-lock.json) are there, then runs test.mjs, which
# starts and stops its own cluster and browser. Screenshots go to BATON_WEBUI_SCREENSHOTS (the
# docs/img of this tree when set to "docs"), else to a temporary directory.
# Usage: run.sh BIN_DIR SHARED_DIR (the environment's BATON_SHARED wins)
set -euo pipefail
bin=$1
model=${BATON_SHARED:-$2}/models/stories260K.gguf
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "node is not installed (Node 20 is needed for this test)" >&2; exit 1; }
chromium=${BATON_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "$chromium is missing: apt-get install chromium (scripts/setup-deps.sh does)" >&2; exit 1; }
if [ ! -d "$here/node_modules/puppeteer-core" ]; then
  echo "tests/webui/node_modules is missing: run 'npm ci' there (scripts/test.sh does)" >&2
  exit 1
fi
shots=${BATON_WEBUI_SCREENSHOTS:-}
if [ "$shots" = docs ]; then
  shots="$here/../../docs/img"
  mkdir -p "$shots"
elif [ -z "$shots" ]; then
  shots=$(mktemp -d)
  trap 'rm -rf "$shots"' EXIT
fi
timeout 290 node "$here/test.mjs" "$bin" "$model" "$shots"
