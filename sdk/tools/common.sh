# Shared by build-python.sh and build-js.sh: paths, the tool cache, packing.

sdk="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo="$(dirname "$sdk")"
# Toolchains are installed once per version into this cache; a half-finished
# install (interrupted, failed) is detected by its version check and redone.
tools="${LUDUS_SDK_TOOLS:-$repo/target/sdk-tools}"
mkdir -p "$tools"

# Runs "$@" holding the tool cache's lock, so two builds never install at once.
with_tools_lock() {
    exec {lock}>"$tools/.lock"
    flock "$lock"
    "$@"
    flock -u "$lock"
}

# The ludus binary that packs docs: $LUDUS, else `ludus` on the PATH, else one
# already built in this checkout. Found before anything is built, and the
# server is never built here (minutes, unasked): without one, say how.
find_ludus() {
    if [[ -n "${LUDUS:-}" ]]; then
        ludus="$LUDUS"
    elif command -v ludus >/dev/null; then
        ludus=ludus
    elif [[ -x "$repo/target/release/ludus" ]]; then
        ludus="$repo/target/release/ludus"
    elif [[ -x "$repo/target/debug/ludus" ]]; then
        ludus="$repo/target/debug/ludus"
    else
        echo "$(basename "$0"): packing a game's docs needs the ludus binary, and there is none here;" >&2
        echo "  set LUDUS=/path/to/ludus, or put ludus on PATH, or build it once (about 10 minutes):" >&2
        echo "    cargo build --release -p ludus --manifest-path $repo/Cargo.toml" >&2
        echo "  then run this script again." >&2
        exit 1
    fi
}
find_ludus

# Embeds the WIT doc comments (tool and parameter descriptions, ranges) into
# the component (the component toolchains drop them).
pack() { # IN OUT APP_WIT_DIR
    "$ludus" pack "$1" "$2" "$repo/wit/plugin" "$3"
    echo "built $2 ($(stat -c %s "$2") bytes)" >&2
}
