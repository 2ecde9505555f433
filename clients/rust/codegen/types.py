"""From JSON Schemas (OpenAPI 3.1) to Rust types: which type expression a schema becomes,
and which named types exist. Every component schema becomes a named type (struct, string
enum, untagged union or alias); a closed string set, a union or an object met inline (a
property, an item, a parameter) becomes a named type too, shared by every place with the
same shape and named after the field and its owner (`JobView.state` -> `JobState`).

Owns: the `Registry` (definitions, inline groups and their names). Must not: write Rust
text (render.py does) or know any particular route or schema of Sluice.
"""

import json
from collections import Counter

from .naming import pascal, words

ANY = "serde_json::Value"
# A closed string set larger than this stays a `String` (e.g. every IANA time zone).
MAX_ENUM_VALUES = 100
# Keys that document a schema without changing its shape.
DOC_KEYS = {"description", "examples", "example", "title", "default", "deprecated"}
ALL_JSON = {"boolean", "number", "string", "array", "object"}
RESERVED = {"Option", "Result", "String", "Vec", "Box", "Some", "None", "Ok", "Err", "Default",
            "Self", "Error", "Api", "Client", "Reply", "Operation", "Enqueue", "Enqueued",
            "ListParams", "Pages"}


class Def:
    """A named Rust type to emit: `kind` is struct, enum, union or alias."""

    def __init__(self, name, kind, doc=None):
        self.name = name
        self.kind = kind
        self.doc = doc
        self.fields = []  # struct: (json name, rust type, required, nullable, doc)
        self.values = []  # enum: wire values
        self.variants = []  # union: (variant name, rust type)
        self.target = None  # alias: rust type
        self.uses = set()  # names of the named types it refers to


def ref_name(ref):
    prefix = "#/components/schemas/"
    if not ref.startswith(prefix):
        raise SystemExit(f"unsupported $ref {ref!r}: only {prefix}NAME")
    return ref[len(prefix):]


def shape_key(kind, schema):
    """The identity of an inline type: its shape without documentation."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in DOC_KEYS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return kind + ":" + json.dumps(strip(schema), sort_keys=True)


def type_list(schema):
    t = schema.get("type")
    return t if isinstance(t, list) else [t] if t else []


def is_null(schema):
    return isinstance(schema, dict) and type_list(schema) == ["null"] and "enum" not in schema


def json_types(alternatives):
    found = set()
    for alt in alternatives:
        for t in type_list(alt):
            found.add("number" if t == "integer" else t)
    return found


class Group:
    """Inline schemas of one shape: their owners and fields, and the name they get."""

    def __init__(self, kind, schema):
        self.kind = kind
        self.schema = schema
        self.places = []  # (prefix, full owner, field)
        self.name = None
        self.doc = None  # the first description met


class Registry:
    def __init__(self, document):
        self.doc = document
        self.schemas = document.get("components", {}).get("schemas", {})
        self.defs = {}
        self.groups = {}
        # Component names, and names an inline type must not shadow in generated code.
        self.taken = {pascal(n) for n in self.schemas} | RESERVED
        self.used = None  # the set names are recorded in while resolving

    # ---- type expressions -------------------------------------------------------------

    def resolve(self, schema, owner, field, nested=False):
        """(rust type, nullable) of `schema`, met as `field` of `owner`. `nested`: the
        owner is itself an inline type, whose full name prefixes the new one's."""
        if schema is True or schema == {} or schema is None:
            return ANY, False
        if "$ref" in schema:
            name = pascal(ref_name(schema["$ref"]))
            return self.use(name), False
        types = type_list(schema)
        nullable = "null" in types
        types = [t for t in types if t != "null"]
        if "enum" in schema or "const" in schema:
            raw = schema["enum"] if "enum" in schema else [schema["const"]]
            nullable = nullable or None in raw
            values = [v for v in raw if v is not None]
            if values and all(isinstance(v, str) for v in values):
                if len(values) > MAX_ENUM_VALUES:
                    return "String", nullable
                enum = {"enum": values}
                return self.inline("enum", enum, owner, field, nested, schema), nullable
            return ANY, nullable
        for combinator in ("oneOf", "anyOf"):
            if combinator in schema:
                alternatives = schema[combinator]
                real = [a for a in alternatives if not is_null(a)]
                nullable = nullable or len(real) < len(alternatives)
                if ALL_JSON <= json_types(real):
                    return ANY, nullable
                if len(real) == 1:
                    rust, inner = self.resolve(real[0], owner, field, nested)
                    return rust, nullable or inner
                union = {"oneOf": real}
                return self.inline("union", union, owner, field, nested, schema), nullable
        if "allOf" in schema:
            members = [m for m in schema["allOf"] if "$ref" in m or "properties" in m]
            if len(members) == 1 and "properties" not in schema and "$ref" in members[0]:
                return self.resolve(members[0], owner, field, nested)[0], nullable
            return self.inline("object", schema, owner, field, nested), nullable
        if not types:
            if "properties" in schema:
                return self.inline("object", schema, owner, field, nested), nullable
            return ANY, nullable
        if len(types) > 1:
            return ANY, nullable
        kind = types[0]
        if kind == "string":
            fmt = schema.get("format")
            if fmt == "date-time":
                return "chrono::DateTime<chrono::Utc>", nullable
            if fmt == "binary":
                return "Vec<u8>", nullable
            return "String", nullable
        if kind == "integer":
            return ("i32" if schema.get("format") == "int32" else "i64"), nullable
        if kind == "number":
            return "f64", nullable
        if kind == "boolean":
            return "bool", nullable
        if kind == "array":
            item, item_null = self.resolve(schema.get("items", {}), owner, field, nested)
            if item_null and item != ANY:
                item = f"Option<{item}>"
            return f"Vec<{item}>", nullable
        if kind == "object":
            if schema.get("properties"):
                return self.inline("object", schema, owner, field, nested), nullable
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                value, value_null = self.resolve(extra, owner, field, nested)
                if value_null and value != ANY:
                    value = f"Option<{value}>"
                return f"std::collections::BTreeMap<String, {value}>", nullable
            return "serde_json::Map<String, serde_json::Value>", nullable
        raise SystemExit(f"unsupported schema type {kind!r} at {owner}.{field}")

    def use(self, name):
        if self.used is not None:
            self.used.add(name)
        return name

    def inline(self, kind, schema, owner, field, nested, documented=None):
        key = shape_key(kind, schema)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(kind, schema)
        if group.doc is None:
            group.doc = (documented or schema).get("description")
        prefix = owner if nested else (words(owner) or [owner])[0]
        place = (pascal(prefix), pascal(owner), pascal(field))
        if place not in group.places:
            group.places.append(place)
        return self.use(group.name or "?")

    # ---- naming -----------------------------------------------------------------------

    def name_groups(self):
        """Names every unnamed group: `<Prefix><Field>` when one prefix (an owner's first
        word) holds most of its places (`ErrorCode`, `JobState`), else its field alone
        (`Priority`, shared by enqueues and schedules); on a clash
        `<Prefix><Field>` with the most common prefix, then `<Owner><Field>`, then a
        number. Returns the groups it named."""
        fresh = [g for g in self.groups.values() if g.name is None]
        wanted = {}
        for group in fresh:
            field = most_common([f for _, _, f in group.places])
            prefixes = Counter(p for p, _, _ in group.places)
            prefix, count = sorted(prefixes.items(), key=lambda pc: (-pc[1], pc[0]))[0]
            wanted[id(group)] = prefix + field if 2 * count > len(group.places) else field
        clashes = Counter(wanted.values())
        for group in fresh:
            candidates = [
                wanted[id(group)],
                most_common([p + f for p, _, f in group.places]),
                most_common([o + f for _, o, f in group.places]),
            ]
            name = next((c for c in candidates if clashes[c] <= 1 and c not in self.taken),
                        candidates[-1])
            base, n = name, 2
            while name in self.taken:
                name, n = f"{base}{n}", n + 1
            group.name = name
            self.taken.add(name)
        return fresh


def most_common(names):
    counts = Counter(names)
    best = max(counts.values())
    return min(n for n in counts if counts[n] == best)
