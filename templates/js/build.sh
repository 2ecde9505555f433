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
echo "built build/{{name}}.wasm"
# The task's cases (cases.json: payloads and what each must give), run with no database
# and no network by `sluice test` when it is on the PATH (docs/task-authors.md).
if command -v sluice >/dev/null 2>&1; then
  sluice test cases.json --component build/{{name}}.wasm
else
  echo "sluice is not on the PATH: cases.json not run (sluice test cases.json --component build/{{name}}.wasm)"
fi
