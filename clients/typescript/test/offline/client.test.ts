/** Offline: what SluiceClient sends for each job call, and how it reads the answers. */

import assert from "node:assert/strict";
import { test } from "node:test";

import * as generated from "../../src/generated.js";
import { SluiceClient, enqueueRequest } from "../../src/index.js";
import { fakeFetch, jobView } from "../support/fake-fetch.js";

test("enqueue options go on the wire in snake_case, and 201/200 say created", async () => {
  const { fetch, requests } = fakeFetch({ status: 201, json: jobView() }, { status: 200, json: jobView() });
  const client = new SluiceClient("http://h", "t", { fetch });
  const first = await client.enqueue("echo", { n: 1 }, {
    priority: "high", delay: 1_500, maxAttempts: 2, idempotencyKey: "k", keyScope: "unfinished", concurrencyKey: "c",
  });
  const second = await client.enqueue("echo", { n: 1 }, { idempotencyKey: "k" });
  assert.equal(first.created, true);
  assert.equal(second.created, false);
  assert.equal(first.job.id, 7);
  assert.equal(requests[0]?.url, "http://h/v1/jobs");
  assert.equal(requests[0]?.method, "POST");
  assert.deepEqual(JSON.parse(requests[0]?.body ?? ""), {
    type: "echo", payload: { n: 1 }, priority: "high", delay: "1500ms", max_attempts: 2,
    idempotency_key: "k", key_scope: "unfinished", concurrency_key: "c",
  });
});

test("runAt is sent as RFC 3339 and a delay string as given", () => {
  assert.deepEqual(enqueueRequest({ type: "t", runAt: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)) }),
    { type: "t", run_at: "2030-01-02T03:04:05.000Z" });
  assert.deepEqual(enqueueRequest({ type: "t", delay: "1h", priority: 5 }), { type: "t", delay: "1h", priority: 5 });
  assert.deepEqual(enqueueRequest({ type: "t", delay: 3_600_000 }), { type: "t", delay: "3600s" });
});

test("enqueueBatch sends the jobs in order and returns the items", async () => {
  const { fetch, requests } = fakeFetch({ json: { jobs: [{ id: 1, created: true }, { id: 2, created: false }] } });
  const items = await new SluiceClient("http://h", "t", { fetch }).enqueueBatch([
    { type: "echo", payload: 1 }, { type: "echo", delay: "5m", idempotencyKey: "b" },
  ]);
  assert.deepEqual(items, [{ id: 1, created: true }, { id: 2, created: false }]);
  assert.equal(requests[0]?.url, "http://h/v1/jobs:batch");
  assert.deepEqual(JSON.parse(requests[0]?.body ?? ""), {
    jobs: [{ type: "echo", payload: 1 }, { type: "echo", delay: "5m", idempotency_key: "b" }],
  });
});

test("list sends its filters; listAll follows next_cursor to the last page", async () => {
  const item = (id: number) => ({ id, type: "echo", state: "dead" });
  const { fetch, requests } = fakeFetch(
    { json: { jobs: [item(9), item(8)], next_cursor: "8" } },
    { json: { jobs: [item(5)], next_cursor: null } },
  );
  const client = new SluiceClient("http://h", "t", { fetch });
  const ids: number[] = [];
  for await (const job of client.listAll({ state: "dead", type: "echo", limit: 2 })) ids.push(job.id);
  assert.deepEqual(ids, [9, 8, 5]);
  assert.equal(requests[0]?.url, "http://h/v1/jobs?state=dead&type=echo&limit=2");
  assert.equal(requests[1]?.url, "http://h/v1/jobs?state=dead&type=echo&cursor=8&limit=2");
  await client.list({ parent: 3, cursor: "10" });
  assert.equal(requests[2]?.url, "http://h/v1/jobs?parent=3&cursor=10");
});

test("cancel, retry and signal use their routes; a signal's name is one encoded segment", async () => {
  const { fetch, requests } = fakeFetch({ json: jobView() }, { json: jobView() }, { json: { job_id: 7, name: "a/b", woke: false } });
  const client = new SluiceClient("http://h", "t", { fetch });
  await client.cancel(7);
  await client.retry(7);
  const sent = await client.signal(7, "a/b", { by: "ana" });
  assert.equal(sent.woke, false);
  assert.deepEqual(requests.map((r) => `${r.method} ${r.url}`), [
    "POST http://h/v1/jobs/7/cancel", "POST http://h/v1/jobs/7/retry", "POST http://h/v1/jobs/7/signals/a%2Fb",
  ]);
  assert.deepEqual(JSON.parse(requests[2]?.body ?? ""), { payload: { by: "ana" } });
});

test("every operation of the document's table is a generated function", () => {
  const table = generated.operations as Record<string, { method: string; path: string }>;
  const functions = generated as unknown as Record<string, unknown>;
  const names = Object.keys(table);
  assert.ok(names.length > 0);
  for (const name of names) assert.equal(typeof functions[name], "function", name);
  const routes = names.map((n) => `${table[n]?.method} ${table[n]?.path}`);
  for (const route of ["POST /v1/jobs", "POST /v1/jobs:batch", "GET /v1/jobs/{id}", "GET /v1/jobs",
    "POST /v1/jobs/{id}/cancel", "POST /v1/jobs/{id}/retry", "POST /v1/jobs/{id}/signals/{name}"]) {
    assert.ok(routes.includes(route), `${route} is in the generated table`);
  }
});

test("the generated functions work with client.transport for any route", async () => {
  const { fetch, requests } = fakeFetch({ status: 204 });
  const client = new SluiceClient("http://h", "t", { fetch });
  const answer = await generated.deleteSecret(client.transport, { name: "A B" });
  assert.equal(answer.status, 204);
  assert.equal(requests[0]?.url, "http://h/v1/secrets/A%20B");
});
