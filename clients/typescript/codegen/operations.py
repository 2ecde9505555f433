"""The operations of the OpenAPI document as TypeScript: one function per path+method with
its `Args` and `Result` types (`src/generated/operations.ts`), and the table of operations
and schema fields the live test compares to the served document (`src/generated/document.ts`).

Owns: parameters (path, query, header), request bodies (JSON or raw), success answers.
Must not: know any route by name.
"""

from __future__ import annotations

import json
import re

from codegen.tstypes import (HEADER, SCHEMA_REF, GenerateError, Mapper, camel, constraints,
                             describe, doc_comment, pascal, prop_key, type_name)

METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]


def resolve(doc: dict, node):
    """Follows a `$ref` to a reusable component other than a schema."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node and not node["$ref"].startswith(SCHEMA_REF):
        ref = node["$ref"]
        if not ref.startswith("#/") or seen > 20:
            raise GenerateError(f"an unsupported $ref: {ref}")
        node = doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        seen += 1
    return node


def operations(doc: dict) -> list[dict]:
    """Every path+method of the document, with its parameters, body and answers."""
    ops, names = [], {}
    for path, item in doc.get("paths", {}).items():
        item = resolve(doc, item)
        shared = item.get("parameters", [])
        for method in METHODS:
            if method not in item:
                continue
            op = item[method]
            name = camel(op.get("operationId") or f"{method} {path}")
            if name in names:
                raise GenerateError(f"{method} {path} and {names[name]} are both {name}")
            names[name] = f"{method} {path}"
            params = {}
            for p in shared + op.get("parameters", []):
                p = resolve(doc, p)
                params[(p["in"], p["name"])] = p
            ops.append({"name": name, "method": method.upper(), "path": path, "op": op,
                        "params": list(params.values()),
                        "body": resolve(doc, op.get("requestBody")),
                        "responses": {s: resolve(doc, r)
                                      for s, r in op.get("responses", {}).items()}})
    return ops


def body_spec(mapper: Mapper, body) -> tuple[str, str, bool] | None:
    """(TypeScript type, content type, required) of a request body."""
    if not body:
        return None
    content = body.get("content") or {}
    if not content:
        return None
    json_types = [c for c in content if c == "application/json" or c.endswith("+json")]
    chosen = json_types[0] if json_types else next(iter(content))
    ts = mapper.expr(content[chosen].get("schema", {}), "  ")
    if not json_types and ts == "JsonValue":
        ts = "Uint8Array | ArrayBuffer | Blob | string"
    return ts, chosen, bool(body.get("required"))


def response_types(mapper: Mapper, responses: dict) -> list[tuple[str, str]]:
    """(status type, body type) of each success answer."""
    out = []
    for status, response in responses.items():
        code = str(status)
        if not code.startswith("2"):
            continue
        status_ts = code if code.isdigit() else "number"
        content = response.get("content") or {}
        if not content:
            out.append((status_ts, "undefined"))
            continue
        kind = next((c for c in content if c == "application/json" or c.endswith("+json")), None)
        if kind is None:
            out.append((status_ts, "string"))
        else:
            out.append((status_ts, mapper.expr(content[kind].get("schema", {}), "")))
    return out or [("number", "unknown")]


def operation_code(mapper: Mapper, o: dict, taken: set[str]) -> str:
    name, op, params = o["name"], o["op"], o["params"]
    args_name, result_name = pascal(name) + "Args", pascal(name) + "Result"
    for n in (args_name, result_name):
        if n in taken:
            raise GenerateError(f"{n} of {o['method']} {o['path']} is already a type name")
        taken.add(n)
    body = body_spec(mapper, o["body"])
    keys: dict[str, str] = {}
    fields = ""
    for p in params:
        if p["in"] == "cookie":
            raise GenerateError(f"cookie parameter {p['name']} of {o['path']}")
        key = p["name"]
        if key in keys or key == "body":
            raise GenerateError(f"parameter {key} of {o['method']} {o['path']} is ambiguous")
        keys[key] = p["in"]
        schema = p.get("schema", {})
        fields += doc_comment(describe(p) + constraints(schema) + [f"({p['in']} parameter)"], "  ")
        optional = "" if p.get("required") or p["in"] == "path" else "?"
        fields += f"  {prop_key(key)}{optional}:{mapper.wrapped(schema, '  ')};\n"
    if body:
        fields += doc_comment(describe(o["body"]) + [f"(request body, {body[1]})"], "  ")
        fields += f"  body{'' if body[2] else '?'}: {body[0]};\n"
    summary = [f"`{o['method']} {o['path']}`"] + describe({"description": op.get("summary")})
    description = op.get("description")
    if description and description != op.get("summary"):
        summary += [""] + description.splitlines()
    out = ""
    if fields:
        out += doc_comment([f"Arguments of `{name}`."], "") + f"export interface {args_name} {{\n{fields}}}\n\n"
    answers = response_types(mapper, o["responses"])
    out += doc_comment([f"Success answers of `{name}`."], "")
    out += f"export type {result_name} =" + "".join(
        f"\n  | ApiResponse<{s}, {t}>" for s, t in answers) + ";\n\n"
    out += doc_comment(summary, "")
    all_optional = not re.search(r"^  [^ /*][^:]*[^?]:", fields, re.M)
    arg = (f"  args: {args_name}{' = {}' if all_optional else ''},\n") if fields else ""
    out += (f"export function {name}(\n  transport: Transport,\n{arg}  options?: RequestOptions,\n"
            f"): Promise<{result_name}> {{\n")
    path = re.sub(r"\{([^}]+)\}", lambda m: "${encodePath(args[" + json.dumps(m.group(1)) + "])}",
                  o["path"].replace("`", "\\`").replace("${", "\\${"))
    for placeholder in re.findall(r"\{([^}]+)\}", o["path"]):
        if keys.get(placeholder) != "path":
            raise GenerateError(f"{o['path']}: no path parameter {placeholder}")
    spec = [f'method: "{o["method"]}"',
            f"path: `{path}`" if "{" in o["path"] else f"path: {json.dumps(o['path'])}"]
    for where, field in (("query", "query"), ("header", "headers")):
        names = [k for k, v in keys.items() if v == where]
        if names:
            spec.append(f"{field}: {{ " + ", ".join(
                f"{json.dumps(k)}: args[{json.dumps(k)}]" for k in names) + " }")
    if body:
        kind = "json" if body[1] == "application/json" or body[1].endswith("+json") else "raw"
        spec.append(f'body: {{ kind: "{kind}", contentType: {json.dumps(body[1])}, value: args.body }}')
    inner = "".join(f"      {s},\n" for s in spec)
    out += f"  return transport.request(\n    {{\n{inner}    }},\n    options,\n  ) as Promise<{result_name}>;\n}}\n"
    return out


def operations_file(mapper: Mapper, ops: list[dict]) -> str:
    mapper.used = set()
    taken = {type_name(n) for n in mapper.schemas} | {"JsonValue"}
    code = "".join("\n" + operation_code(mapper, o, taken) for o in ops)
    used = sorted(n for n in mapper.used | {"JsonValue"} if re.search(rf"\b{re.escape(n)}\b", code))
    out = [HEADER, "//\n// One function per operation (path + method) of clients/openapi.json: path, query\n"
           "// and header parameters and the body go in `args`; the promise holds each success\n"
           "// answer's status and typed body, and a failure rejects (see src/transport.ts).\n\n",
           'import type { ApiResponse, RequestOptions, Transport } from "../transport.js";\n']
    if "encodePath(" in code:
        out.append('import { encodePath } from "../transport.js";\n')
    if used:
        out.append("import type {\n" + "".join(f"  {n},\n" for n in used) + '} from "./schemas.js";\n')
    return "".join(out) + code


def document_file(doc: dict, ops: list[dict]) -> str:
    mapper = Mapper(doc)
    rows = []
    for o in ops:
        body = body_spec(mapper, o["body"])
        params = ", ".join(json.dumps(f"{p['in']}:{p['name']}") for p in o["params"])
        rows.append(f"  {o['name']}: {{ method: {json.dumps(o['method'])}, path: {json.dumps(o['path'])}, "
                    f"parameters: [{params}], body: {json.dumps(body[1] if body else None)} }},\n")
    fields = []
    for name, schema in sorted(mapper.schemas.items()):
        props = sorted((schema.get("properties") or {}).keys()) if isinstance(schema, dict) else []
        fields.append(f"  {json.dumps(type_name(name))}: [{', '.join(json.dumps(p) for p in props)}],\n")
    return "".join([
        HEADER,
        "//\n// What the document holds, as data: the live test compares the served\n"
        "// /v1/openapi.json to it (a route or field the server has and this client lacks fails).\n\n",
        "/** Every operation: its method, path, `in:name` parameters and body content type. */\n",
        "export const operations = {\n", *rows, "} as const;\n\n",
        "/** The property names of each schema of `components.schemas`, sorted. */\n",
        "export const schemaFields: Readonly<Record<string, readonly string[]>> = {\n", *fields, "};\n",
    ])
