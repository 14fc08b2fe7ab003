#!/usr/bin/env bash
# Builds nim.wasm (or the path given) from nim.js; see sdk/tools/build-js.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../../tools/build-js.sh" "$here" nim.js nim "${1:-nim.wasm}"
