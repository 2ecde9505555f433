/** Offline: duration formatting, the chunks of a wait, and the wait loop's endings. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { JobTimeoutError, MAX_WAIT_CHUNK_MS, SluiceClient, formatDuration, isFinished, waitChunks } from "../../src/index.js";
import type { JobView } from "../../src/index.js";
import { waitForJob } from "../../src/wait.js";
import { fakeFetch, jobView } from "../support/fake-fetch.js";

const job = (state: string) => jobView({ state }) as unknown as JobView;

test("formatDuration writes whole seconds as s and the rest as ms", () => {
  assert.equal(formatDuration(30_000), "30s");
  assert.equal(formatDuration(60_000), "60s");
  assert.equal(formatDuration(250), "250ms");
  assert.equal(formatDuration(1_500), "1500ms");
  assert.equal(formatDuration(0.2), "1ms");
  assert.equal(formatDuration(0), "0s");
  assert.throws(() => formatDuration(-1), RangeError);
  assert.throws(() => formatDuration(Number.NaN), RangeError);
});

test("a long wait is cut into chunks of at most 60 s", () => {
  assert.equal(MAX_WAIT_CHUNK_MS, 60_000);
  assert.deepEqual(waitChunks(150_000), ["60s", "60s", "30s"]);
  assert.deepEqual(waitChunks(61_500), ["60s", "1500ms"]);
  assert.deepEqual(waitChunks(250), ["250ms"]);
  assert.deepEqual(waitChunks(0), []);
});

test("finished states are completed, dead and cancelled", () => {
  assert.deepEqual(["pending", "running", "waiting", "completed", "dead", "cancelled"].filter(isFinished),
    ["completed", "dead", "cancelled"]);
});

test("the loop asks for the remaining time in chunks and returns the finished job", async () => {
  let clock = 0;
  const asked: Array<string | undefined> = [];
  const states = ["pending", "running", "completed"];
  const fetchJob = async (wait: string | undefined) => {
    asked.push(wait);
    clock += 60_000;
    return job(states[asked.length - 1] ?? "completed");
  };
  const done = await waitForJob({ fetchJob, now: () => clock }, 150_000);
  assert.equal(done.state, "completed");
  assert.deepEqual(asked, ["60s", "60s", "30s"]);
});

test("the loop rejects with JobTimeoutError carrying the last view", async () => {
  let clock = 0;
  const fetchJob = async (wait: string | undefined) => {
    clock += wait === "60s" ? 60_000 : 5_000;
    return job("pending");
  };
  const failure = await waitForJob({ fetchJob, now: () => clock }, 65_000).then(
    () => assert.fail("resolved"), (e: unknown) => e);
  assert.ok(failure instanceof JobTimeoutError);
  assert.equal(failure.state, "pending");
  assert.equal(failure.jobId, 7);
  assert.equal(failure.job.state, "pending");
  assert.equal(failure.timeoutMs, 65_000);
  assert.match(failure.message, /job 7 is still pending/);
});

test("a timeout of 0 asks once, without wait", async () => {
  const asked: Array<string | undefined> = [];
  await assert.rejects(waitForJob({ fetchJob: async (w) => (asked.push(w), job("running")) }, 0), JobTimeoutError);
  assert.deepEqual(asked, [undefined]);
  assert.equal((await waitForJob({ fetchJob: async () => job("dead") }, 0)).state, "dead");
});

test("a server that answers at once is polled, not hammered", async () => {
  let calls = 0;
  const started = Date.now();
  await assert.rejects(waitForJob({ fetchJob: async () => (calls++, job("pending")) }, 500), JobTimeoutError);
  assert.ok(calls >= 2 && calls <= 4, `asked ${calls} times in 500 ms`);
  assert.ok(Date.now() - started >= 450);
});

test("client.wait sends ?wait= and stops when the signal aborts", async () => {
  const { fetch, requests } = fakeFetch({ json: jobView({ state: "running" }) }, { json: jobView({ state: "completed", output: { a: 1 } }) });
  const client = new SluiceClient("http://h", "t", { fetch });
  const done = await client.wait(7, 90_000);
  assert.deepEqual(done.output, { a: 1 });
  assert.match(requests[0]?.url ?? "", /^http:\/\/h\/v1\/jobs\/7\?wait=60s$/);
  // The fake answered at once, so the second round asks for the rest, capped at 60 s.
  assert.match(requests[1]?.url ?? "", /\?wait=60s$/);

  const controller = new AbortController();
  const stuck = fakeFetch({ json: jobView({ state: "pending" }) });
  const waiting = new SluiceClient("http://h", "t", { fetch: stuck.fetch }).wait(7, 60_000, { signal: controller.signal });
  setTimeout(() => controller.abort(new Error("stop waiting")), 50);
  await assert.rejects(waiting, /stop waiting/);
  assert.equal(stuck.requests[0]?.signal, controller.signal);
});

test("a pause that runs to the deadline is followed by one last look, whatever the clock says", { timeout: 5_000 }, async () => {
  // The clock stands still, as it seems to when a timer fires a moment early: the loop
  // still gives up after the round that follows the pause to the deadline.
  const asked: Array<string | undefined> = [];
  const fetchJob = async (wait: string | undefined) => (asked.push(wait), job("pending"));
  await assert.rejects(waitForJob({ fetchJob, now: () => 0 }, 150), JobTimeoutError);
  assert.deepEqual(asked, ["150ms", "150ms"]);
});
