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
# The task's cases (cases.json: payloads and what each must give), run with no database
# and no network by `sluice test` when it is on the PATH (docs/task-authors.md).
if command -v sluice >/dev/null 2>&1; then
  sluice test cases.json --component build/{{name}}.wasm
else
  echo "sluice is not on the PATH: cases.json not run (sluice test cases.json --component build/{{name}}.wasm)"
fi
