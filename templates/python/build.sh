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
