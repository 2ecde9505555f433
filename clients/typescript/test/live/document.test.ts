/**
 * Live: the served `/v1/openapi.json` against the document this client was generated
 * from. A route, parameter, schema or field the server has and the generated layer lacks
 * (or the reverse) fails here: regenerate with `python3 clients/typescript/generate.py`.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { operations, schemaFields } from "../../src/generated.js";
import { baseUrl, skipLive } from "../support/live.js";

interface Document {
  paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>>;
  components?: { schemas?: Record<string, { properties?: Record<string, unknown> }> };
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

describe("the live OpenAPI document", { skip: skipLive }, () => {
  const load = async (): Promise<Document> => {
    const response = await fetch(`${baseUrl.replace(/\/+$/, "")}/v1/openapi.json`);
    assert.equal(response.status, 200);
    return (await response.json()) as Document;
  };

  it("has exactly the operations and parameters of the generated layer", async () => {
    const doc = await load();
    const live: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const params = (op.parameters ?? []).map((p) => `${p.in}:${p.name}`).sort();
        live.push(`${method.toUpperCase()} ${path} ${params.join(",")}`);
      }
    }
    const generated = Object.values(operations).map(
      (op) => `${op.method} ${op.path} ${[...op.parameters].sort().join(",")}`,
    );
    assert.deepEqual(live.sort(), generated.sort());
  });

  it("has exactly the schemas and fields of the generated layer", async () => {
    const doc = await load();
    const live: Record<string, string[]> = {};
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
      live[name.replace(/[^A-Za-z0-9_$]/g, "_")] = Object.keys(schema.properties ?? {}).sort();
    }
    assert.deepEqual(live, { ...schemaFields });
  });
});
