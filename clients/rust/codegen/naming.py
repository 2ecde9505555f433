"""Rust names and doc comments from the OpenAPI document's names and descriptions.

Owns: identifiers (snake_case fields and functions, PascalCase types and variants, raw
identifiers for keywords) and doc comment text. Must not: decide which types exist.
"""

import re

# Strict and reserved keywords of Rust 2024; `r#` makes them identifiers, except these.
KEYWORDS = {
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move",
    "mut", "pub", "ref", "return", "static", "struct", "trait", "true", "type", "unsafe",
    "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
}
NOT_RAW = {"self", "Self", "super", "crate", "_"}


def words(text):
    """The words of `text`: split at non-alphanumerics and at lower-to-upper changes."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w for w in re.split(r"[^A-Za-z0-9]+", text) if w]


def pascal(text):
    """`list_jobs` -> `ListJobs`, `JobView` -> `JobView`, `+1` -> `Plus1`."""
    text = text.replace("+", " plus ").replace("-", " minus ") if re.fullmatch(
        r"[+-]?[0-9.]+", text) else text
    out = "".join(w[:1].upper() + w[1:] for w in words(text))
    if not out:
        out = "Empty"
    if out[0].isdigit():
        out = "V" + out
    return out


def snake(text):
    """`maxAttempts` -> `max_attempts`, `X-Sluice-Tenant` -> `x_sluice_tenant`."""
    out = "_".join(w.lower() for w in words(text))
    if not out:
        out = "value"
    if out[0].isdigit():
        out = "n" + out
    return out


def ident(name):
    """A Rust identifier for a field, argument or function named `name`."""
    out = snake(name)
    if out in NOT_RAW:
        return out + "_"
    if out in KEYWORDS:
        return "r#" + out
    return out


def bare(identifier):
    """The name serde gives an identifier (without `r#`)."""
    return identifier[2:] if identifier.startswith("r#") else identifier


def doc_lines(text, indent=""):
    """`text` as `///` lines (nothing for no text). Indented lines would be code blocks
    to rustdoc, and fences doctests, so both are neutralised; a list item's continuation
    lines are indented under it (rustdoc and clippy read them as part of the item)."""
    if not text:
        return []
    out = []
    item = 0  # the indentation of the current list item's text, 0 outside a list
    for line in text.strip().splitlines():
        line = line.strip().replace("```", "\'\'\'")
        marker = re.match(r"([-*+]|[0-9]+[.)]) ", line)
        if not line:
            item = 0
        elif marker:
            item = marker.end()
        elif item:
            line = " " * item + line
        out.append(f"{indent}///{' ' if line else ''}{line}")
    return out
