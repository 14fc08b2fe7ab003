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

# Embeds the WIT doc comments (tool and parameter descriptions, ranges) into
# the component (the component toolchains drop them), with $LUDUS, else
# `ludus` on the PATH, else the one built from this checkout.
pack() { # IN OUT APP_WIT_DIR
    local ludus=(cargo run -q --release --manifest-path "$repo/Cargo.toml" -p ludus --)
    if [[ -n "${LUDUS:-}" ]]; then
        ludus=("$LUDUS")
    elif command -v ludus >/dev/null; then
        ludus=(ludus)
    fi
    "${ludus[@]}" pack "$1" "$2" "$repo/wit/plugin" "$3"
    echo "built $2 ($(stat -c %s "$2") bytes)" >&2
}
