#!/usr/bin/env bash
# Builds connect_four.wasm (or the path given) from app.py; see sdk/tools/build-python.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../../tools/build-python.sh" "$here" app ludus:connect-four/connect-four "${1:-connect_four.wasm}"
