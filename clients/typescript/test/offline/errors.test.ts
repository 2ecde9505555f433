/** Offline: error answers decoded to typed errors (unknown codes kept), connection errors. */

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  SluiceClient,
  SluiceConnectionError,
  SluiceError,
  decodeErrorAnswer,
  parseRetryAfter,
} from "../../src/index.js";
import { fakeFetch } from "../support/fake-fetch.js";

const error = (code: string, message: string) => ({ error: { code, message } });

test("an error answer becomes a SluiceError with status, code and message", async () => {
  const { fetch } = fakeFetch({ status: 404, json: error("job_type_not_found", "unknown job type \"x\"") });
  const client = new SluiceClient("http://h", "t", { fetch });
  const failure = await client.enqueue("x").then(() => assert.fail("resolved"), (e: unknown) => e);
  assert.ok(failure instanceof SluiceError);
  assert.equal(failure.status, 404);
  assert.equal(failure.code, "job_type_not_found");
  assert.equal(failure.message, "unknown job type \"x\"");
  assert.equal(failure.retryAfter, null);
  assert.equal(failure.name, "SluiceError");
});

test("a code the client does not know is kept as sent", () => {
  const e = decodeErrorAnswer(418, new Headers(), JSON.stringify(error("brand_new_code", "teapot")));
  assert.equal(e.code, "brand_new_code");
  assert.equal(e.status, 418);
  assert.equal(e.message, "teapot");
});

test("Retry-After of a 429 or 503 is read as seconds", () => {
  const limited = decodeErrorAnswer(429, new Headers({ "retry-after": "3" }), JSON.stringify(error("rate_limited", "slow down")));
  assert.equal(limited.retryAfter, 3);
  const down = decodeErrorAnswer(503, new Headers({ "Retry-After": "1" }), JSON.stringify(error("unavailable", "db")));
  assert.equal(down.retryAfter, 1);
  assert.equal(parseRetryAfter("Wed, 21 Oct 2015 07:28:10 GMT", Date.parse("Wed, 21 Oct 2015 07:28:00 GMT")), 10);
  assert.equal(parseRetryAfter("soon"), null);
  assert.equal(parseRetryAfter(null), null);
});

test("an answer that is not the error shape has code unexpected_response", () => {
  const html = decodeErrorAnswer(502, new Headers(), "<html>bad gateway</html>");
  assert.equal(html.code, "unexpected_response");
  assert.equal(html.status, 502);
  assert.match(html.message, /bad gateway/);
  const other = decodeErrorAnswer(500, new Headers(), JSON.stringify({ message: "no" }));
  assert.equal(other.code, "unexpected_response");
});

test("invalid JSON in a success answer is an unexpected_response error", async () => {
  const { fetch } = fakeFetch({ text: "{not json", headers: { "content-type": "application/json" } });
  await assert.rejects(new SluiceClient("http://h", "t", { fetch }).get(1),
    (e: unknown) => e instanceof SluiceError && e.code === "unexpected_response" && e.status === 200);
});

test("no answer at all is a SluiceConnectionError carrying the cause", async () => {
  const cause = new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }) });
  const { fetch } = fakeFetch({ throws: cause });
  const failure = await new SluiceClient("http://127.0.0.1:1", "t", { fetch }).get(5).then(
    () => assert.fail("resolved"), (e: unknown) => e);
  assert.ok(failure instanceof SluiceConnectionError);
  assert.ok(!(failure instanceof SluiceError));
  assert.equal(failure.cause, cause);
  assert.equal(failure.request, "GET http://127.0.0.1:1/v1/jobs/5");
  assert.match(failure.message, /ECONNREFUSED/);
});

test("a real refused connection is a SluiceConnectionError", async () => {
  await assert.rejects(new SluiceClient("http://127.0.0.1:9", "t").get(1), SluiceConnectionError);
});

test("an aborted request rejects with the abort reason, not a connection error", async () => {
  const controller = new AbortController();
  const { fetch } = fakeFetch(async (request) => {
    controller.abort(new Error("caller gave up"));
    throw request.signal?.reason;
  });
  await assert.rejects(new SluiceClient("http://h", "t", { fetch }).get(1, { signal: controller.signal }),
    /caller gave up/);
});
