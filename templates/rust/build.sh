#!/usr/bin/env sh
# Builds build/{{name}}.wasm with cargo (rustup target add wasm32-wasip2).
set -eu
cd "$(dirname "$0")"
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || {
  echo "the wasm32-wasip2 target is missing: rustup target add wasm32-wasip2" >&2
  exit 1
}
cargo build --release --target wasm32-wasip2
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p build
cp "$target_dir/wasm32-wasip2/release/{{crate_name}}.wasm" build/{{name}}.wasm
echo "built build/{{name}}.wasm"
