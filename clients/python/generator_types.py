"""The rules of ``generate.py``: JSON Schema (OpenAPI 3.1) to Python types, and the
reading of the document's operations.

Owns: what each schema shape becomes. ``$ref`` -> the class or alias of that name; an
object with ``properties`` -> a dataclass (an inline one gets a name from where it sits);
``additionalProperties`` alone -> ``Dict[str, T]``; ``items`` -> ``List[T]``; ``enum`` ->
``Literal[...]`` (``str`` past ``MAX_LITERAL`` values, e.g. the time zones);
``oneOf``/``anyOf`` and type arrays -> ``Union``; ``null`` anywhere -> ``Optional``;
``date-time`` -> ``datetime.datetime``; ``binary`` -> ``bytes``; no type (any JSON) or a
reference back into the schema being defined -> ``JsonValue``. ``allOf`` parts that only
state constraints (``not``, ``if``/``then``) add no type. Standard library only.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field
from typing import Any

MAX_LITERAL = 64
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
# Names the generated modules import or define: a schema may not take them.
RESERVED = {
    "Any",
    "Dict",
    "List",
    "Literal",
    "Optional",
    "Union",
    "JsonValue",
    "Model",
    "UNSET",
    "Unset",
    "dataclass",
    "field",
    "datetime",
    "Operation",
    "Param",
    "Reply",
    "OPERATIONS",
    "Api",
    "AsyncApi",
    "SyncApiBase",
    "AsyncApiBase",
}
MODEL_MEMBERS = {"from_json", "to_json"}
JSON_VALUE = "JsonValue"


@dataclass(frozen=True)
class PyType:
    """A Python annotation: the non-null members of a union, and whether null is one."""

    members: tuple[str, ...]
    nullable: bool = False

    def render(self, unset: bool = False) -> str:
        parts = list(self.members)
        if self.nullable and parts != [JSON_VALUE]:
            parts.append("None")
        if not parts:
            parts = ["None"]
        if unset:
            parts.append("Unset")
        if len(parts) == 1:
            return parts[0]
        if len(parts) == 2 and parts[1] == "None":
            return f"Optional[{parts[0]}]"
        return f"Union[{', '.join(parts)}]"

    def render_optional(self) -> str:
        return PyType(self.members, True).render()


def union(types: list[PyType]) -> PyType:
    members: list[str] = []
    for t in types:
        members += [m for m in t.members if m not in members]
    if JSON_VALUE in members:
        return PyType((JSON_VALUE,))
    return PyType(tuple(members), any(t.nullable for t in types))


NULL = PyType((), True)
ANY = PyType((JSON_VALUE,))


@dataclass
class Field:
    python: str
    json: str
    type: PyType
    required: bool
    description: str


@dataclass
class ModelDef:
    name: str
    schema_name: str
    description: str
    fields: list[Field]


@dataclass
class AliasDef:
    name: str
    type: PyType
    description: str


@dataclass
class ParamDef:
    wire: str
    python: str
    location: str
    required: bool
    type: PyType


@dataclass
class BodyDef:
    content_type: str
    required: bool
    type: PyType


@dataclass
class ReplyDef:
    kind: str  # json, text, bytes, empty
    type: PyType | None

    def runtime(self) -> str:
        return "None" if self.type is None else self.type.render()


@dataclass
class OperationDef:
    name: str
    method: str
    path: str
    summary: str
    params: list[ParamDef]
    body: BodyDef | None
    replies: list[tuple[int, ReplyDef]]
    const: str = ""
    returns: PyType = field(default_factory=lambda: NULL)


def pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", text) if part)


def snake(text: str) -> str:
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def identifier(text: str, taken: set[str]) -> str:
    """A Python identifier for ``text``: other characters become ``_``; a keyword, a
    reserved or an already taken name gets trailing ``_``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text) or "_"
    if name[0].isdigit():
        name = "_" + name
    while keyword.iskeyword(name) or name in taken:
        name += "_"
    taken.add(name)
    return name


def py_literal(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


class TypeMapper:
    """Turns schemas into ``PyType``s, collecting the dataclasses and aliases it needs."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.schemas: dict[str, Any] = (doc.get("components") or {}).get("schemas") or {}
        self.taken = set(RESERVED)
        self.names = {name: identifier(pascal(name) or "Schema", self.taken) for name in sorted(self.schemas)}
        self.models: list[ModelDef] = []
        self.aliases: list[AliasDef] = []

    # -- components ------------------------------------------------------------------

    def map_components(self) -> None:
        for name in sorted(self.schemas):
            schema = self.schemas[name]
            if self.is_model(schema):
                self.models.append(self.model(self.names[name], name, schema))
            else:
                described = schema.get("description", "") if isinstance(schema, dict) else ""
                self.aliases.append(
                    AliasDef(self.names[name], self.type_of(schema, self.names[name], {name}), described)
                )

    def finish(self) -> None:
        """Orders the aliases so that each follows the aliases it names (they are
        evaluated at import time, unlike the dataclasses' annotations)."""
        by_name = {a.name: a for a in self.aliases}
        ordered: list[AliasDef] = []
        seen: set[str] = set()

        def visit(alias: AliasDef) -> None:
            if alias.name in seen:
                return
            seen.add(alias.name)
            for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", alias.type.render()):
                if word in by_name:
                    visit(by_name[word])
            ordered.append(alias)

        for alias in self.aliases:
            visit(alias)
        self.aliases = ordered

    def resolve(self, schema: Any) -> tuple[str | None, Any]:
        """(name, schema) of a ``#/components/schemas/`` reference, else (None, schema)."""
        if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            prefix = "#/components/schemas/"
            if ref.startswith(prefix) and ref[len(prefix) :] in self.schemas:
                name = ref[len(prefix) :]
                return name, self.schemas[name]
            raise ValueError(f"unsupported $ref {ref!r}")
        return None, schema

    def object_parts(self, schema: Any, seen: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """The schemas whose ``properties`` make up an object (itself and its ``allOf``)."""
        if not isinstance(schema, dict) or schema.get("oneOf") or schema.get("anyOf"):
            return []
        kinds = schema.get("type")
        if kinds is not None and "object" not in (kinds if isinstance(kinds, list) else [kinds]):
            return []
        parts = [schema] if isinstance(schema.get("properties"), dict) else []
        for part in schema.get("allOf") or []:
            name, target = self.resolve(part)
            if name in seen:
                continue
            parts += self.object_parts(target, seen | {name} if name else seen)
        return parts

    def is_model(self, schema: Any) -> bool:
        return bool(self.object_parts(schema))

    def model(self, name: str, schema_name: str, schema: dict[str, Any]) -> ModelDef:
        fields: list[Field] = []
        taken = set(MODEL_MEMBERS)
        seen_json: set[str] = set()
        for part in self.object_parts(schema, frozenset({schema_name})):
            required = set(part.get("required") or [])
            for json_name, prop in part["properties"].items():
                if json_name in seen_json:
                    continue
                seen_json.add(json_name)
                python = identifier(json_name, taken)
                hint = name + pascal(json_name)
                described = prop.get("description", "") if isinstance(prop, dict) else ""
                ptype = self.type_of(prop, hint, {schema_name})
                fields.append(Field(python, json_name, ptype, json_name in required, described))
        return ModelDef(name, schema_name, schema.get("description", ""), fields)

    # -- schemas to types ------------------------------------------------------------

    def type_of(self, schema: Any, hint: str, guard: set[str]) -> PyType:
        """The type of ``schema``; ``hint`` names an inline object's dataclass; a reference
        to a schema in ``guard`` (the alias being defined) is ``JsonValue``."""
        if schema is True or not isinstance(schema, dict):
            return ANY
        nullable = bool(schema.get("nullable"))
        if "$ref" in schema:
            name, target = self.resolve(schema)
            assert name is not None
            if name in guard and not self.is_model(target):
                return ANY
            return PyType((self.names[name],), nullable)
        typed_all = [p for p in schema.get("allOf") or [] if self.is_typed(p)]
        if typed_all and not self.is_model(schema):
            if len(typed_all) == 1 and "type" not in schema:
                t = self.type_of(typed_all[0], hint, guard)
                return PyType(t.members, t.nullable or nullable)
            return ANY
        for key in ("oneOf", "anyOf"):
            if isinstance(schema.get(key), list):
                alternatives = [
                    self.type_of(alt, f"{hint}{i}" if i else hint, guard) for i, alt in enumerate(schema[key])
                ]
                t = union(alternatives)
                return PyType(t.members, t.nullable or nullable)
        if "const" in schema:
            value = schema["const"]
            return NULL if value is None else PyType((f"Literal[{py_literal(value)}]",), nullable)
        if isinstance(schema.get("enum"), list):
            return self.enum_type(schema["enum"], nullable)
        kinds = schema.get("type")
        if kinds is None:
            if self.is_model(schema):
                kinds = ["object"]
            elif "items" in schema:
                kinds = ["array"]
            elif "additionalProperties" in schema:
                kinds = ["object"]
            else:
                return ANY
        kinds = kinds if isinstance(kinds, list) else [kinds]
        types = [self.simple_type(kind, schema, hint, guard) for kind in kinds]
        t = union(types)
        return PyType(t.members, t.nullable or nullable)

    def is_typed(self, schema: Any) -> bool:
        keys = ("$ref", "type", "properties", "items", "enum", "const", "oneOf", "anyOf", "allOf")
        return isinstance(schema, dict) and any(k in schema for k in keys)

    def enum_type(self, values: list[Any], nullable: bool) -> PyType:
        nullable = nullable or None in values
        values = [v for v in values if v is not None]
        if not values:
            return NULL
        scalar = all(isinstance(v, (str, int, bool)) for v in values)
        if not scalar:
            return PyType((JSON_VALUE,))
        if len(values) > MAX_LITERAL:
            kinds = sorted(
                {"str" if isinstance(v, str) else "bool" if isinstance(v, bool) else "int" for v in values}
            )
            return PyType(tuple(kinds), nullable)
        return PyType((f"Literal[{', '.join(py_literal(v) for v in values)}]",), nullable)

    def simple_type(self, kind: str, schema: dict[str, Any], hint: str, guard: set[str]) -> PyType:
        if kind == "null":
            return NULL
        if kind == "string":
            fmt = schema.get("format")
            if fmt == "date-time":
                return PyType(("datetime.datetime",))
            if fmt == "binary":
                return PyType(("bytes",))
            return PyType(("str",))
        if kind == "integer":
            return PyType(("int",))
        if kind == "number":
            return PyType(("float",))
        if kind == "boolean":
            return PyType(("bool",))
        if kind == "array":
            item = self.type_of(schema.get("items", True), hint + "Item", guard)
            return PyType((f"List[{item.render()}]",))
        if kind == "object":
            if self.is_model(schema):
                name = identifier(hint, self.taken)
                self.models.append(self.model(name, name, schema))
                return PyType((name,))
            extra = schema.get("additionalProperties", True)
            value = ANY if extra is True or extra is False else self.type_of(extra, hint + "Value", guard)
            return PyType((f"Dict[str, {value.render()}]",))
        return ANY


# -- operations ----------------------------------------------------------------------


def read_operations(doc: dict[str, Any], mapper: TypeMapper) -> list[OperationDef]:
    """Every path and method of the document, in path order, then method order."""
    operations: list[OperationDef] = []
    names: set[str] = set()
    for path in sorted(doc.get("paths") or {}):
        item = doc["paths"][path]
        for method in METHODS:
            if method not in item:
                continue
            op = item[method]
            raw = op.get("operationId") or f"{method}_{path}"
            name = identifier(snake(raw), names)
            params = read_params(doc, [*item.get("parameters", []), *op.get("parameters", [])], name, mapper)
            body = read_body(doc, op.get("requestBody"), name, mapper)
            replies = read_replies(doc, op.get("responses") or {}, name, mapper)
            summary = op.get("summary") or (op.get("description") or "").strip().split("\n\n")[0]
            returns = union([r.type if r.type is not None else NULL for _, r in replies]) if replies else NULL
            operations.append(
                OperationDef(
                    name, method.upper(), path, summary, params, body, replies, name.upper(), returns
                )
            )
    return operations


def deref(doc: dict[str, Any], value: Any, section: str) -> Any:
    """A ``#/components/<section>/`` reference resolved (others returned as they are)."""
    while isinstance(value, dict) and isinstance(value.get("$ref"), str):
        prefix = f"#/components/{section}/"
        ref = value["$ref"]
        if not ref.startswith(prefix):
            raise ValueError(f"unsupported $ref {ref!r}")
        value = doc["components"][section][ref[len(prefix) :]]
    return value


def read_params(doc: dict[str, Any], raw: list[Any], op_name: str, mapper: TypeMapper) -> list[ParamDef]:
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for p in raw:
        p = deref(doc, p, "parameters")
        merged[(p["name"], p["in"])] = p
    taken = {"self", "body", "request_timeout"}
    params = []
    for (wire, location), p in merged.items():
        if location not in ("path", "query", "header"):
            continue
        python = identifier(snake(wire) if location == "header" else wire, taken)
        ptype = mapper.type_of(p.get("schema", True), pascal(op_name) + pascal(wire), set())
        required = location == "path" or bool(p.get("required"))
        params.append(ParamDef(wire, python, location, required, ptype))
    return sorted(params, key=lambda p: (p.location != "path", not p.required))


def read_body(doc: dict[str, Any], raw: Any, op_name: str, mapper: TypeMapper) -> BodyDef | None:
    if raw is None:
        return None
    body = deref(doc, raw, "requestBodies")
    content = body.get("content") or {}
    if not content:
        return None
    content_type = next((c for c in content if is_json(c)), next(iter(content)))
    schema = (content[content_type] or {}).get("schema", True)
    if is_json(content_type):
        btype = mapper.type_of(schema, pascal(op_name) + "Body", set())
    elif content_type.startswith("text/"):
        btype = PyType(("str",))
    else:
        btype = PyType(("bytes",))
    return BodyDef(content_type, bool(body.get("required")), btype)


def read_replies(
    doc: dict[str, Any], responses: dict[str, Any], op_name: str, mapper: TypeMapper
) -> list[tuple[int, ReplyDef]]:
    replies = []
    for status in sorted(responses):
        if not (status.isdigit() and status.startswith("2")):
            continue
        response = deref(doc, responses[status], "responses")
        content = response.get("content") or {}
        if not content:
            replies.append((int(status), ReplyDef("empty", None)))
            continue
        content_type = next((c for c in content if is_json(c)), next(iter(content)))
        if is_json(content_type):
            schema = (content[content_type] or {}).get("schema", True)
            replies.append(
                (int(status), ReplyDef("json", mapper.type_of(schema, pascal(op_name) + "Reply", set())))
            )
        elif content_type.startswith("text/"):
            replies.append((int(status), ReplyDef("text", PyType(("str",)))))
        else:
            replies.append((int(status), ReplyDef("bytes", PyType(("bytes",)))))
    return replies


def is_json(content_type: str) -> bool:
    base = content_type.split(";")[0].strip().lower()
    return base == "application/json" or base.endswith("+json")
