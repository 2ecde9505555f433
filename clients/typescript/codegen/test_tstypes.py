"""Unit tests of the schema-to-TypeScript mapping, on constructs the current document may
not use yet: `cd clients/typescript && python3 -m unittest codegen.test_tstypes`.
"""

import unittest

from codegen.operations import operations, operations_file
from codegen.tstypes import GenerateError, Mapper, camel, schemas_file


def mapper(schemas=None, paths=None) -> Mapper:
    return Mapper({"components": {"schemas": schemas or {"A": {"type": "object"}}}, "paths": paths or {}})


class MappingTest(unittest.TestCase):
    def test_scalars_nullability_and_enums(self):
        m = mapper()
        self.assertEqual(m.expr({"type": ["string", "null"]}), "string | null")
        self.assertEqual(m.expr({"type": "integer", "format": "int64"}), "number")
        self.assertEqual(m.expr({"enum": ["a", "b", None]}), '"a" | "b" | null')
        self.assertEqual(m.expr({"const": 3}), "3")
        self.assertEqual(m.expr({}), "JsonValue")
        self.assertEqual(m.expr({"description": "anything"}), "JsonValue")

    def test_refs_unions_and_intersections(self):
        m = mapper({"A": {"type": "object"}, "B": {"type": "object"}})
        self.assertEqual(m.expr({"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/A"}]}), "A | null")
        self.assertEqual(m.expr({"allOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}]}), "A & B")
        # A constraint-only allOf item (not, if/then) adds no type.
        self.assertEqual(m.expr({"allOf": [{"$ref": "#/components/schemas/A"}, {"not": {"required": ["x"]}}]}), "A")
        with self.assertRaises(GenerateError):
            m.expr({"$ref": "#/components/schemas/Missing"})

    def test_arrays_and_maps(self):
        m = mapper()
        self.assertEqual(m.expr({"type": ["array", "null"], "items": {"type": "integer"}}), "Array<number> | null")
        self.assertEqual(m.expr({"type": "object", "additionalProperties": {"type": "integer"}}), "{ [key: string]: number }")
        self.assertEqual(m.expr({"type": "object"}), "{ [key: string]: JsonValue }")
        literal = m.expr({"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}, "b-c": {"type": "boolean"}},
                          "additionalProperties": False})
        self.assertEqual(literal, '{\n  a: string;\n  "b-c"?: boolean;\n}')

    def test_schema_file_makes_interfaces_and_aliases(self):
        text = schemas_file(mapper({"Obj": {"type": "object", "properties": {"x": {"type": "string"}}},
                                    "Alias": {"type": "string", "enum": ["p", "q"]}}))
        self.assertIn("export interface Obj {\n  x?: string;\n}", text)
        self.assertIn('export type Alias = "p" | "q";', text)

    def test_operation_names_and_collisions(self):
        self.assertEqual(camel("get_job"), "getJob")
        self.assertEqual(camel("post /v1/jobs:batch"), "postV1JobsBatch")
        paths = {"/a": {"get": {"operationId": "x", "responses": {}}},
                 "/b": {"get": {"operationId": "x", "responses": {}}}}
        with self.assertRaises(GenerateError):
            operations({"paths": paths})

    def test_header_parameters_and_optional_args(self):
        paths = {"/v1/things/{id}": {"parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                                     "get": {"parameters": [{"name": "X-Trace", "in": "header", "schema": {"type": "string"}}],
                                             "responses": {"200": {"description": "ok"}}}}}
        doc = {"paths": paths, "components": {"schemas": {}}}
        text = operations_file(Mapper(doc), operations(doc))
        self.assertIn("export function getV1ThingsId(", text)
        self.assertIn('"X-Trace"?: string;', text)
        self.assertIn('headers: { "X-Trace": args["X-Trace"] }', text)
        self.assertIn("ApiResponse<200, undefined>", text)


if __name__ == "__main__":
    unittest.main()
