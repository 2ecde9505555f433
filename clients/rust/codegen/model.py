"""The client's model of an OpenAPI document: the named types (every component schema and
every inline closed set, union or object, as `Def`s), the operations (`Op`: path, query and
header parameters, body, answer) and which generated module each lands in (an
operation's first tag; a type used by one tag's operations only goes with them, any other
to `shared`).

Owns: walking the document. Must not: write Rust text (render.py) or special-case any
route or schema.
"""

import re

from .naming import bare, ident, pascal, snake
from .types import ALL_JSON, ANY, Def, Registry, is_null, json_types, ref_name, type_list

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
SHARED = "shared"


class Param:
    def __init__(self, name, rust, required, nullable, doc):
        self.json = name
        self.ident = ident(name)
        self.rust = rust
        self.required = required
        self.nullable = nullable
        self.doc = doc


class Op:
    def __init__(self, method, path, operation):
        self.method = method
        self.path = path
        self.id = ident(operation.get("operationId") or f"{method}_{path}")
        self.summary = operation.get("summary")
        self.description = operation.get("description")
        self.tag = snake((operation.get("tags") or ["default"])[0])
        self.path_params = []
        self.query = []
        self.headers = []
        self.query_type = None
        self.body = None  # (kind: json | bytes, rust type, required, content type)
        self.answer = ("none", "()")  # (kind: none | json | reply | text | bytes, type)
        self.uses = set()


class Model:
    def __init__(self, document):
        self.doc = document
        # Two passes: the first meets and names every inline type (nested ones too), the
        # second builds the definitions with every name known.
        self.registry = Registry(document)
        self.build()
        self.registry.name_groups()
        while True:
            for group in list(self.registry.groups.values()):
                self.inline_def(group)
            if not self.registry.name_groups():
                break
        self.defs, self.ops = self.build()
        for group in self.registry.groups.values():
            d = self.inline_def(group)
            self.defs[d.name] = d
        self.assign_modules()

    # ---- definitions ------------------------------------------------------------------

    def build(self):
        defs = {}
        for name in sorted(self.registry.schemas):
            d = self.component(pascal(name), self.registry.schemas[name])
            defs[d.name] = d
        ops = []
        for path in sorted(self.doc.get("paths", {})):
            item = self.doc["paths"][path]
            for method in METHODS:
                if method in item:
                    op, query_def = self.operation(method, path, item[method], item)
                    ops.append(op)
                    if query_def:
                        defs[query_def.name] = query_def
        return defs, ops

    def tracked(self, d, fn):
        """Runs fn() recording the named types it uses into `d.uses`."""
        previous, self.registry.used = self.registry.used, set()
        try:
            return fn()
        finally:
            d.uses |= self.registry.used
            self.registry.used = previous

    def component(self, name, schema):
        desc = schema.get("description") or schema.get("title")
        if "properties" in schema or "allOf" in schema or type_list(schema) == ["object"] and (
            schema.get("properties")
        ):
            return self.struct(Def(name, "struct", desc), schema, nested=False)
        if "enum" in schema or "const" in schema:
            values = schema.get("enum") or [schema.get("const")]
            if all(isinstance(v, str) for v in values if v is not None):
                d = Def(name, "enum", desc)
                d.values = [v for v in values if v is not None]
                return d
        for combinator in ("oneOf", "anyOf"):
            if combinator in schema:
                real = [a for a in schema[combinator] if not is_null(a)]
                if len(real) > 1 and not ALL_JSON <= json_types(real):
                    return self.union(Def(name, "union", desc), real)
        d = Def(name, "alias", desc)
        d.target, _ = self.tracked(d, lambda: self.registry.resolve(schema, name, "value"))
        return d

    def object_schema(self, schema):
        """Properties and required names of an object, its `allOf` members merged."""
        props, required = {}, set()
        for member in schema.get("allOf", []):
            if "$ref" in member:
                member = self.registry.schemas[ref_name(member["$ref"])]
            elif "properties" not in member:
                continue  # a validation rule only (not/if/then)
            p, r = self.object_schema(member)
            props.update(p)
            required |= r
        props.update(schema.get("properties", {}))
        required |= set(schema.get("required", []))
        return props, required

    def struct(self, d, schema, nested):
        props, required = self.object_schema(schema)
        for name, prop in props.items():
            rust, nullable = self.tracked(
                d, lambda: self.registry.resolve(prop, d.name, name, nested)
            )
            d.fields.append(Param(name, rust, name in required, nullable, prop.get("description")))
        return d

    def union(self, d, alternatives):
        seen = set()
        for alt in alternatives:
            if is_null(alt):
                continue
            if "$ref" in alt:
                variant = pascal(ref_name(alt["$ref"]))
            elif "enum" in alt or "const" in alt:
                variant = "Label"
            else:
                kinds = [t for t in type_list(alt) if t != "null"]
                variant = pascal(kinds[0]) if len(kinds) == 1 else "Value"
            base, n = variant, 2
            while variant in seen:
                variant, n = f"{base}{n}", n + 1
            seen.add(variant)
            rust, nullable = self.tracked(
                d, lambda: self.registry.resolve(alt, d.name, variant, True)
            )
            if nullable and rust != ANY:
                rust = f"Option<{rust}>"
            d.variants.append((variant, rust))
        return d

    def inline_def(self, group):
        name = group.name
        if group.kind == "enum":
            d = Def(name, "enum", group.doc)
            d.values = list(group.schema["enum"])
            return d
        if group.kind == "union":
            return self.union(Def(name, "union", group.doc), group.schema["oneOf"])
        return self.struct(Def(name, "struct", group.doc), group.schema, True)

    # ---- operations -------------------------------------------------------------------

    def operation(self, method, path, operation, item):
        op = Op(method, path, operation)
        owner = pascal(op.id)
        params = list(item.get("parameters", [])) + list(operation.get("parameters", []))
        query_def = None
        query_uses = set()
        for p in params:
            if "$ref" in p:
                p = self.resolve_ref(p["$ref"])
            # A parameter's description says what it filters, not what its type is.
            schema = {k: v for k, v in p.get("schema", {}).items() if k != "description"}
            doc = p.get("description") or p.get("schema", {}).get("description")
            used = Def(owner, "op")
            rust, nullable = self.tracked(
                used, lambda: self.registry.resolve(schema, owner, p["name"])
            )
            param = Param(p["name"], rust, p.get("required", False), nullable, doc)
            where = p.get("in")
            if where == "path":
                op.path_params.append(param)
                op.uses |= used.uses
            elif where == "query":
                op.query.append(param)
                query_uses |= used.uses
            elif where == "header":
                op.headers.append(param)
                op.uses |= used.uses
            else:
                raise SystemExit(f"unsupported parameter location {where!r} in {method} {path}")
        order = re.findall(r"\{([^}]+)\}", path)
        op.path_params.sort(key=lambda p: order.index(p.json) if p.json in order else 99)
        if op.query:
            query_def = Def(owner + "Query", "query", f"Query parameters of `{op.id}`.")
            query_def.fields = op.query
            query_def.uses = query_uses
            op.query_type = query_def.name
        body = operation.get("requestBody")
        if body:
            op.body = self.body(op, owner, body)
        op.answer = self.answer(op, owner, operation.get("responses", {}))
        return op, query_def

    def resolve_ref(self, ref):
        node = self.doc
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        return node

    def body(self, op, owner, body):
        content = body.get("content", {})
        required = body.get("required", False)
        d = Def(owner, "op")
        if "application/json" in content:
            schema = content["application/json"].get("schema", {})
            rust, _ = self.tracked(d, lambda: self.registry.resolve(schema, owner, "body"))
            op.uses |= d.uses
            return ("json", rust, required, "application/json")
        for content_type in content:
            return ("bytes", "Vec<u8>", required, content_type)
        return None

    def answer(self, op, owner, responses):
        found = []
        for status in sorted(responses):
            if not status.startswith("2"):
                continue
            response = responses[status]
            if "$ref" in response:
                response = self.resolve_ref(response["$ref"])
            content = response.get("content") or {}
            if "application/json" in content:
                schema = content["application/json"].get("schema", {})
                d = Def(owner, "op")
                rust, nullable = self.tracked(
                    d, lambda: self.registry.resolve(schema, owner, "answer")
                )
                op.uses |= d.uses
                if nullable and rust != ANY:
                    rust = f"Option<{rust}>"
                found.append(("json", rust))
            elif any(c.startswith("text/") for c in content):
                found.append(("text", "String"))
            elif content:
                found.append(("bytes", "Vec<u8>"))
            else:
                found.append(("none", "()"))
        if not found:
            return ("none", "()")
        kinds = {k for k, _ in found if k != "none"}
        types = {t for k, t in found if k != "none"}
        if not kinds:
            return ("none", "()")
        kind = kinds.pop() if len(kinds) == 1 else "json"
        rust = types.pop() if len(types) == 1 else ANY
        if kind == "json" and len(found) > 1:
            return ("reply", rust)
        return (kind, rust)

    # ---- modules ----------------------------------------------------------------------

    def assign_modules(self):
        for d in self.defs.values():
            d.module = None
        reach = {}
        for op in self.ops:
            seen, todo = set(), list(op.uses)
            if op.query_type:
                todo.append(op.query_type)
            while todo:
                name = todo.pop()
                if name in seen or name not in self.defs:
                    continue
                seen.add(name)
                todo.extend(self.defs[name].uses)
            for name in seen:
                reach.setdefault(name, set()).add(op.tag)
        for name, d in self.defs.items():
            tags = reach.get(name, set())
            d.module = next(iter(tags)) if len(tags) == 1 else SHARED

    def modules(self):
        names = {d.module for d in self.defs.values()} | {op.tag for op in self.ops}
        return sorted(names)


def serde_name_differs(param):
    return bare(param.ident) != param.json
