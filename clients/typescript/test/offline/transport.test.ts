/** Offline: URL and query building, headers and bodies of the fetch transport. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { FetchTransport, SluiceClient, buildUrl, encodePath } from "../../src/index.js";
import { fakeFetch, jobView } from "../support/fake-fetch.js";

test("buildUrl joins the base URL and path and leaves out undefined and null parameters", () => {
  assert.equal(buildUrl("http://h:1/", "/v1/jobs", { state: "pending", type: undefined, parent: null, limit: 2 }),
    "http://h:1/v1/jobs?state=pending&limit=2");
  assert.equal(buildUrl("http://h:1", "/v1/jobs", {}), "http://h:1/v1/jobs");
  assert.equal(buildUrl("https://h/prefix//", "/v1/jobs"), "https://h/prefix/v1/jobs");
});

test("buildUrl encodes query values and repeats array parameters", () => {
  assert.equal(buildUrl("http://h", "/p", { type: "a b&c=d/é", flag: true, n: [1, 2] }),
    "http://h/p?type=a+b%26c%3Dd%2F%C3%A9&flag=true&n=1&n=2");
});

test("encodePath encodes a path parameter as one segment", () => {
  assert.equal(encodePath("a/b c?%"), "a%2Fb%20c%3F%25");
  assert.equal(encodePath(12), "12");
});

test("the transport refuses a base URL that is not http(s)", () => {
  assert.throws(() => new FetchTransport({ baseUrl: "127.0.0.1:8080", token: "t" }), TypeError);
});

test("requests carry the token, the tenant header when given, and JSON only with a body", async () => {
  const { fetch, requests } = fakeFetch({ json: jobView() });
  const client = new SluiceClient("http://h:1/", "sluice_abc", { tenant: "acme", fetch });
  await client.get(7);
  await client.enqueue("echo", { a: 1 });
  const [get, post] = requests;
  assert.equal(get?.url, "http://h:1/v1/jobs/7");
  assert.equal(get?.method, "GET");
  assert.equal(get?.headers["authorization"], "Bearer sluice_abc");
  assert.equal(get?.headers["x-sluice-tenant"], "acme");
  assert.equal(get?.headers["content-type"], undefined);
  assert.equal(get?.body, undefined);
  assert.equal(post?.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(post?.body ?? ""), { type: "echo", payload: { a: 1 } });
  const plain = fakeFetch({ json: jobView() });
  await new SluiceClient("http://h", "t", { fetch: plain.fetch }).get(1);
  assert.equal(plain.requests[0]?.headers["x-sluice-tenant"], undefined);
});

test("a 204 answer decodes to undefined and a text answer to its text", async () => {
  const { fetch } = fakeFetch({ status: 204 }, { text: "hello", headers: { "content-type": "text/plain" } });
  const transport = new FetchTransport({ baseUrl: "http://h", token: "t", fetch });
  const empty = await transport.request({ method: "DELETE", path: "/v1/secrets/A" });
  assert.equal(empty.status, 204);
  assert.equal(empty.data, undefined);
  const text = await transport.request({ method: "GET", path: "/x" });
  assert.equal(text.data, "hello");
});

test("a raw body is sent as given with its content type", async () => {
  const { fetch, requests } = fakeFetch({ json: {} });
  const transport = new FetchTransport({ baseUrl: "http://h", token: "t", fetch });
  const bytes = new Uint8Array([0, 97, 115, 109]);
  await transport.request({
    method: "PUT",
    path: "/v1/components/echo",
    query: { version: "1" },
    body: { kind: "raw", contentType: "application/wasm", value: bytes },
  });
  assert.equal(requests[0]?.url, "http://h/v1/components/echo?version=1");
  assert.equal(requests[0]?.headers["content-type"], "application/wasm");
  assert.equal(requests[0]?.rawBody, bytes);
});
