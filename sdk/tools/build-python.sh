#!/usr/bin/env bash
# Builds a Ludus game written in Python into a packaged component.
#
# usage: sdk/tools/build-python.sh APP_DIR MODULE WORLD OUT.wasm
#   APP_DIR  holds MODULE.py and wit/ (your game's WIT package)
#   WORLD    your world, e.g. ludus:connect-four/connect-four
#
# Needs python3 (3.10 or newer, with venv). Installs componentize-py from
# PyPI into the tool cache on first use ($LUDUS_SDK_TOOLS, default
# target/sdk-tools); packs docs with `ludus pack` ($LUDUS, else `ludus` on
# the PATH, else one built in this checkout; with none, it says how to build it).
set -euo pipefail
source "$(dirname "$0")/common.sh"
[[ $# -eq 4 ]] || { sed -n '2,12p' "$0" >&2; exit 2; }
app="$(cd "$1" && pwd)" module=$2 world=$3 out=$4

version=0.25.1
venv="$tools/componentize-py-$version"
install() {
    if "$venv/bin/componentize-py" --version 2>/dev/null | grep -qx "componentize-py $version"; then
        return
    fi
    echo "installing componentize-py $version into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "componentize-py==$version"
}
with_tools_lock install

raw="$(mktemp --suffix=.wasm)"
trap 'rm -f "$raw"' EXIT
"$venv/bin/componentize-py" -q -d "$repo/wit/plugin" -d "$app/wit" -w "$world" \
    componentize -p "$app" "$module" -o "$raw"
pack "$raw" "$out" "$app/wit"
