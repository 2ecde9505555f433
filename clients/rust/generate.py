#!/usr/bin/env python3
"""Writes the generated layer of the Rust client (clients/rust/src/generated/) from the
OpenAPI document clients/openapi.json: a Rust type for every component schema (and every
closed string set, union or object met inline), and one method of `Api` per operation.
The output goes through `rustfmt --edition 2024`, so `cargo fmt --check` passes.

    python3 clients/rust/generate.py           # (re)write the files
    python3 clients/rust/generate.py --check   # exit 1 with a diff when they are stale

Python 3.11, standard library only. The generator itself lives in clients/rust/codegen/.
"""

import argparse
import difflib
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from codegen.model import Model  # noqa: E402
from codegen.render import render  # noqa: E402

DOCUMENT = ROOT / "clients" / "openapi.json"
OUT = HERE / "src" / "generated"


def rustfmt(text, name):
    """`text` formatted as rustfmt (edition 2024) would, with the repository's config."""
    binary = shutil.which("rustfmt")
    if binary is None:
        sys.exit("generate.py: rustfmt not found (rustup component add rustfmt)")
    command = [binary, "--edition", "2024", "--emit", "stdout"]
    result = subprocess.run(command, input=text, capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0:
        sys.exit(f"generate.py: rustfmt refused {name}:\n{result.stderr}")
    return result.stdout


def generate():
    document = json.loads(DOCUMENT.read_text())
    return dict(sorted(render(Model(document), rustfmt).items()))


def check(files):
    """0 when OUT holds exactly `files`, else 1 with a unified diff on stdout."""
    stale = False
    present = {p.name for p in OUT.glob("*.rs")} if OUT.is_dir() else set()
    for name in sorted(present | set(files)):
        path = OUT / name
        old = path.read_text() if path.exists() else ""
        new = files.get(name, "")
        if old != new:
            stale = True
            rel = path.relative_to(ROOT)
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                f"a/{rel}", f"b/{rel}"))
    if stale:
        print("\nclients/rust/src/generated/ is stale for clients/openapi.json: "
              "run python3 clients/rust/generate.py", file=sys.stderr)
        return 1
    print("clients/rust/src/generated/ matches clients/openapi.json")
    return 0


def write(files):
    OUT.mkdir(parents=True, exist_ok=True)
    for path in OUT.glob("*.rs"):
        if path.name not in files:
            path.unlink()
    for name, text in files.items():
        (OUT / name).write_text(text)
    print(f"wrote {len(files)} files to {OUT.relative_to(ROOT)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 with a diff when the generated files are stale")
    args = parser.parse_args()
    files = generate()
    sys.exit(check(files) if args.check else write(files))


if __name__ == "__main__":
    main()
