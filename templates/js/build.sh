#!/usr/bin/env sh
# Builds build/{{name}}.wasm from task.js with componentize-qjs (QuickJS)
# (npm install -g componentize-qjs@{{componentize_qjs_version}}).
set -eu
cd "$(dirname "$0")"
command -v componentize-qjs >/dev/null 2>&1 || {
  echo "componentize-qjs not found: npm install -g componentize-qjs@{{componentize_qjs_version}}" >&2
  exit 1
}
mkdir -p build
componentize-qjs --wit wit --world task --sync --js task.js -o build/{{name}}.wasm
