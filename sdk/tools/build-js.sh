#!/usr/bin/env bash
# Builds a Ludus game written in JavaScript into a packaged component.
#
# usage: sdk/tools/build-js.sh APP_DIR ENTRY.js WORLD OUT.wasm
#   APP_DIR  holds ENTRY.js (an ES module) and wit/ (your game's WIT package)
#   WORLD    your world's name, e.g. nim
#
# Needs Node.js 18+ and npm. Installs @bytecodealliance/componentize-js from
# npm into the tool cache on first use ($LUDUS_SDK_TOOLS, default
# target/sdk-tools); packs docs with `ludus pack` ($LUDUS, else `ludus` on
# the PATH, else one built in this checkout; with none, it says how to build it).
set -euo pipefail
source "$(dirname "$0")/common.sh"
[[ $# -eq 4 ]] || { sed -n '2,12p' "$0" >&2; exit 2; }
app="$(cd "$1" && pwd)" entry=$2 world=$3 out=$4

version=0.23.0
prefix="$tools/componentize-js-$version"
bin="$prefix/node_modules/.bin/componentize-js"
install() {
    if [[ "$("$bin" --version 2>/dev/null)" == "$version" ]]; then
        return
    fi
    echo "installing @bytecodealliance/componentize-js $version into $prefix" >&2
    rm -rf "$prefix"
    mkdir -p "$prefix"
    npm install -s --no-audit --no-fund --prefix "$prefix" "@bytecodealliance/componentize-js@$version"
}
with_tools_lock install

# componentize-js reads one WIT directory: the game's package, with the
# Ludus contract under deps/.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/wit/deps"
cp "$app"/wit/*.wit "$work/wit/"
cp -r "$repo/wit/plugin" "$work/wit/deps/plugin"
# No wasi:http (the host grants none): drop the fetch API and the HTTP handler.
(cd "$app" && "$bin" "$entry" --wit "$work/wit" --world-name "$world" \
    --disable http fetch-event -o "$work/raw.wasm" >/dev/null)
pack "$work/raw.wasm" "$out" "$app/wit"
