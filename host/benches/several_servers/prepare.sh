#!/usr/bin/env bash
# Packs what run.sh needs into .devbench/ at the project root (git-ignored), so that the folder can travel to a
# machine with more cores: the release ludus binary (stripped, xz), Debian's redis-server with its
# libraries and loader, and the C load client built statically. Run from the project root after
# `cargo build --release -p ludus` and `apt-get install -y redis-server xz-utils`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
D=.devbench; rm -rf "$D"; mkdir -p "$D/lib"
strip -o "$D/ludus" target/release/ludus && xz -T0 -6 -f "$D/ludus"
R=$(readlink -f /usr/bin/redis-server); cp "$R" "$D/redis-server"
for l in $(ldd "$R" | awk '{print $3}' | grep -v '^$') /lib64/ld-linux-x86-64.so.2; do cp -L "$l" "$D/lib/"; done
cc -O2 -static -o "$D/cload" "$here/cload.c"
cp "$here/run.sh" "$D/run.sh"
du -sh "$D"
