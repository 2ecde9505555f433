/**
 * Live: the job calls against a real `sluice serve` and worker with the job types `echo`,
 * `fatal` and `flaky` (SLUICE_URL, SLUICE_TOKEN). Skipped, with the reason, without them.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { JobTimeoutError, SluiceClient, isFinished, listAttempts, listJobTypes, type JobView } from "../../src/index.js";
import { baseUrl, expectSluiceError, liveClient, skipLive, token, uniqueKey } from "../support/live.js";

const WAIT_MS = 30_000;

/** The job once it is pending again after a failed attempt (in its retry backoff). */
async function pendingAfterAnAttempt(client: SluiceClient, id: number): Promise<JobView> {
  for (const deadline = Date.now() + WAIT_MS; Date.now() < deadline; ) {
    const job = await client.get(id);
    if (job.state === "pending" && job.attempt >= 1) return job;
    if (isFinished(job.state)) assert.fail(`job ${id} finished (${job.state}) before it was cancelled`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return assert.fail(`job ${id} was not pending after an attempt within ${WAIT_MS} ms`);
}

/** A client of the live server that records the URL of every request. */
function countingClient(): { client: SluiceClient; urls: string[] } {
  const urls: string[] = [];
  const client = new SluiceClient(baseUrl, token, {
    fetch: (input, init) => (urls.push(input), fetch(input, init)),
  });
  return { client, urls };
}

describe("jobs against a live server", { skip: skipLive }, () => {
  const client = liveClient();

  it("enqueues an echo job and waits for its output", async () => {
    const payload = { hello: "world", n: [1, 2, 3], key: uniqueKey("echo") };
    const { job, created } = await client.enqueue("echo", payload);
    assert.equal(created, true);
    assert.equal(job.type, "echo");
    assert.deepEqual(job.payload, payload);
    const done = await client.wait(job.id, WAIT_MS);
    assert.equal(done.state, "completed");
    assert.deepEqual(done.output, payload);
    assert.ok(done.finished_at);
  });

  it("answers the first job for a second enqueue with the same idempotency key", async () => {
    const key = uniqueKey("idem");
    const first = await client.enqueue("echo", { k: key }, { idempotencyKey: key });
    const second = await client.enqueue("echo", { k: key }, { idempotencyKey: key });
    assert.equal(first.created, true);
    assert.equal(second.created, false);
    assert.equal(second.job.id, first.job.id);
    assert.equal(second.job.idempotency_key, key);
    await client.wait(first.job.id, WAIT_MS);
  });

  it("takes a priority label or an integer", async () => {
    const high = await client.enqueue("echo", {}, { priority: "high", maxAttempts: 2 });
    const numeric = await client.enqueue("echo", {}, { priority: -5 });
    assert.equal(high.job.priority, 20);
    assert.equal(high.job.max_attempts, 2);
    assert.equal(numeric.job.priority, -5);
    await Promise.all([client.wait(high.job.id, WAIT_MS), client.wait(numeric.job.id, WAIT_MS)]);
  });

  it("delays a job, times out waiting for it, cancels it and retries it", async () => {
    // `flaky` failing every attempt: once retried, it spends its 200 ms backoffs pending.
    const before = Date.now();
    const { job } = await client.enqueue("flaky", { succeed_on: 99 }, { delay: "1h", idempotencyKey: uniqueKey("delayed") });
    assert.equal(job.state, "pending");
    assert.ok(Date.parse(job.run_at) > before + 3_500_000, `run_at ${job.run_at} is about an hour away`);

    // One `?wait=700ms` request: the server holds it (the client does not poll).
    const counted = countingClient();
    const started = Date.now();
    const timeout = await counted.client.wait(job.id, 700).then(() => assert.fail("the wait resolved"), (e: unknown) => e);
    assert.ok(timeout instanceof JobTimeoutError);
    assert.equal(timeout.state, "pending");
    assert.equal(timeout.jobId, job.id);
    assert.ok(Date.now() - started >= 600, "the wait lasted its timeout");
    assert.deepEqual(counted.urls, [`${baseUrl.replace(/\/+$/, "")}/v1/jobs/${job.id}?wait=700ms`]);

    const sent = await client.signal(job.id, "approve", { by: "ts" });
    assert.deepEqual(sent, { job_id: job.id, name: "approve", woke: false });

    const cancelled = await client.cancel(job.id);
    assert.equal(cancelled.state, "cancelled");
    assert.ok(cancelled.finished_at);
    await expectSluiceError(client.cancel(job.id), 409, "conflict");

    // A retried job is due at once: the worker may claim it before the answer is read.
    const retried = await client.retry(job.id);
    assert.ok(["pending", "running"].includes(retried.state), retried.state);
    assert.ok(retried.attempt <= 1, `attempt ${retried.attempt}`);
    assert.equal(retried.finished_at, null);

    // Cancel it again between two attempts (pending in its backoff), leaving nothing running.
    const between = await pendingAfterAnAttempt(client, job.id);
    const again = await client.cancel(between.id);
    assert.ok(["cancelled", "running"].includes(again.state), again.state); // running: cancel requested
    const last = await client.wait(job.id, WAIT_MS);
    assert.equal(last.state, "cancelled");
  });

  it("enqueues a batch of three and waits for all of them", async () => {
    const items = await client.enqueueBatch([1, 2, 3].map((n) => ({ type: "echo", payload: { n } })));
    assert.equal(items.length, 3);
    assert.ok(items.every((item) => item.created));
    assert.equal(new Set(items.map((item) => item.id)).size, 3);
    const done = await Promise.all(items.map((item) => client.wait(item.id, WAIT_MS)));
    assert.deepEqual(done.map((job) => job.output), [{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it("waits for a fatal job to die and a flaky one to complete", async () => {
    const fatal = await client.enqueue("fatal", { why: uniqueKey("fatal") });
    const flaky = await client.enqueue("flaky", { succeed_on: 2 });
    const dead = await client.wait(fatal.job.id, WAIT_MS);
    assert.equal(dead.state, "dead");
    assert.ok(dead.last_error, "a dead job has its last error");
    const recovered = await client.wait(flaky.job.id, WAIT_MS);
    assert.equal(recovered.state, "completed");
    assert.equal(recovered.attempt, 2);
  });

  it("lists with filters, one page at a time and across all pages", async () => {
    const ids = (await client.enqueueBatch([{ type: "fatal" }, { type: "fatal" }])).map((item) => item.id);
    await Promise.all(ids.map((id) => client.wait(id, WAIT_MS)));

    const page = await client.list({ state: "dead", type: "fatal", limit: 1 });
    assert.equal(page.jobs.length, 1);
    assert.ok(page.next_cursor, "a full page has a next_cursor");
    const next = await client.list({ state: "dead", type: "fatal", limit: 1, cursor: page.next_cursor });
    assert.ok((next.jobs[0]?.id ?? 0) < (page.jobs[0]?.id ?? 0), "the next page holds older jobs");

    const seen: number[] = [];
    for await (const job of client.listAll({ state: "dead", type: "fatal", limit: 1 })) {
      assert.equal(job.state, "dead");
      assert.equal(job.type, "fatal");
      seen.push(job.id);
    }
    for (const id of ids) assert.ok(seen.includes(id), `job ${id} is listed`);
    assert.deepEqual(seen, [...seen].sort((a, b) => b - a), "newest first");
    assert.equal(new Set(seen).size, seen.length, "no job twice");
  });

  it("answers typed errors: unknown job type, missing job, bad token", async () => {
    await expectSluiceError(client.enqueue(`no-such-type-${uniqueKey("t")}`, {}), 404, "job_type_not_found");
    await expectSluiceError(client.get(2 ** 52), 404, "not_found");
    const stranger = new SluiceClient(baseUrl, `sluice_${"0".repeat(64)}`);
    await expectSluiceError(stranger.get(1), 401, "unauthorized");
    await expectSluiceError(client.enqueue("echo", {}, { priority: "urgent" as "high" }), 400, "invalid_request");
  });

  it("reaches the other routes through the generated functions", async () => {
    const types = await listJobTypes(client.transport);
    assert.equal(types.status, 200);
    const names = types.data.map((t) => t.name);
    for (const name of ["echo", "fatal", "flaky"]) assert.ok(names.includes(name), `job type ${name}`);
    const attempts = await listAttempts(client.transport, { id: (await client.enqueueBatch([{ type: "fatal" }]))[0]!.id });
    assert.ok(Array.isArray(attempts.data));
  });
});
