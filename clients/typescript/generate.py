#!/usr/bin/env python3
"""Writes the generated layer of the TypeScript client from `clients/openapi.json`.

    python3 clients/typescript/generate.py          # (re)write the generated files
    python3 clients/typescript/generate.py --check  # exit 1 with a diff when they are stale

Owns: the command line, which files are generated (`src/generated.ts`, the barrel, and
`src/generated/{schemas,operations,document}.ts`) and the staleness check. The mapping
lives in `codegen/` (`tstypes.py`: schemas to types; `operations.py`: routes to
functions). Standard library only (Python 3.11). Must not: special-case a route or a
field; everything comes from the document.
"""

from __future__ import annotations

import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources

import argparse  # noqa: E402
import difflib  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

from codegen.operations import document_file, operations, operations_file  # noqa: E402
from codegen.tstypes import HEADER, GenerateError, Mapper, schemas_file  # noqa: E402

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent.parent
DOCUMENT = REPO / "clients" / "openapi.json"
GENERATED = PACKAGE / "src" / "generated"
MAX_DIFF_LINES = 400

BARREL = HEADER + """//
// The generated layer: schema types, one function per operation, the document's table.

export * from "./generated/schemas.js";
export * from "./generated/operations.js";
export * from "./generated/document.js";
"""


def render(doc: dict) -> dict[Path, str]:
    """Every generated file's path and text."""
    mapper = Mapper(doc)
    ops = operations(doc)
    return {
        PACKAGE / "src" / "generated.ts": BARREL,
        GENERATED / "schemas.ts": schemas_file(mapper),
        GENERATED / "operations.ts": operations_file(mapper, ops),
        GENERATED / "document.ts": document_file(doc, ops),
    }


def check(files: dict[Path, str], document: str) -> int:
    """0 when the files on disk are `files`; else prints a diff and returns 1."""
    stale = 0
    for path in sorted(set(GENERATED.glob("*.ts")) - set(files)):
        print(f"{path.relative_to(REPO)}: not generated any more; delete it")
        stale += 1
    for path, text in files.items():
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        stale += 1
        rel = str(path.relative_to(REPO))
        diff = list(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                         f"{rel} (committed)", f"{rel} (from the document)"))
        sys.stdout.writelines(diff[:MAX_DIFF_LINES])
        if len(diff) > MAX_DIFF_LINES:
            print(f"... {len(diff) - MAX_DIFF_LINES} more diff lines")
    if stale:
        print(f"\n{stale} generated file(s) differ from {document}; run "
              "`python3 clients/typescript/generate.py` and commit the result.")
        return 1
    print(f"clients/typescript: the generated files are current with {document}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 with a diff when the committed files are stale")
    parser.add_argument("--document", type=Path, default=DOCUMENT,
                        help="the OpenAPI document (default: clients/openapi.json)")
    args = parser.parse_args()
    try:
        files = render(json.loads(args.document.read_text()))
    except (OSError, ValueError, KeyError, GenerateError) as e:
        print(f"generate.py: {args.document}: {e}", file=sys.stderr)
        return 2
    if args.check:
        shown = args.document.resolve()
        return check(files, str(shown.relative_to(REPO) if shown.is_relative_to(REPO) else shown))
    GENERATED.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
