#!/usr/bin/env sh
# Builds build/{{name}}.wasm from app.py with componentize-py
# (pip install componentize-py=={{componentize_py_version}}).
set -eu
cd "$(dirname "$0")"
command -v componentize-py >/dev/null 2>&1 || {
  echo "componentize-py not found: pip install componentize-py=={{componentize_py_version}}" >&2
  exit 1
}
mkdir -p build
componentize-py -d wit -w task componentize -p . app -o build/{{name}}.wasm
echo "built build/{{name}}.wasm"
# The task's cases (cases.json: payloads and what each must give), run with no database
# and no network by `sluice test` when it is on the PATH (docs/task-authors.md).
if command -v sluice >/dev/null 2>&1; then
  sluice test cases.json --component build/{{name}}.wasm
else
  echo "sluice is not on the PATH: cases.json not run (sluice test cases.json --component build/{{name}}.wasm)"
fi
