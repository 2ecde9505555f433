// Contract 0.3 from a JavaScript task: waiting without holding a slot (`durable`), "run
// me again later" (`flow.snooze`) and follow-up jobs that return their id (`enqueue`),
// docs/durable.md and docs/flow-control.md.
//
//   import { task } from "./sluice-task.js";
//   import { durable, enqueue, flow } from "./sluice-durable.js";
//
//   export const run = task((job) => {
//     durable.sleep(3 * 24 * 3600 * 1000);            // three days, no slot held
//     const approval = durable.awaitSignal("approve", { timeoutMs: 86400000 }); // null: timed out
//     const ids = [1, 2, 3].map((i) => enqueue("resize", { i }));
//     const outcomes = durable.awaitJobs(ids);        // fan-in, in the order of ids
//     return { approval, done: outcomes.filter((o) => o.isCompleted()).length };
//   });
//
// Build with componentize-js against the world `task-durable` of guest-sdk/js/wit
// (`componentize-js task.js --wit guest-sdk/js/wit --world-name task-durable --disable
// fetch-event -o task.wasm`): it imports `jobs`, `durable` and `flow` of 0.3 beside the 0.1
// host interface sluice-task.js uses and `wasi:http` (sluice-http.js works in it too).
//
// In a durable job type (`sluice types set T --durable`) a wait that cannot be answered
// now suspends the run: the job goes to `waiting`, holds no slot, and the run after the
// wake-up replays every host call made before the wait from the journal (same answers,
// HTTP not sent again); then the call returns. To the task each is a plain blocking call.
// In a type that is not durable `sleep` sleeps in place (within the attempt's timeout) and
// the awaits throw WaitError (`not-durable`), a Fatal: uncaught, the job goes `dead`.

import { awaitJobs as hostAwaitJobs, awaitSignal as hostAwaitSignal, sleep as hostSleep } from "sluice:task/durable@0.3.0";
import { snooze as hostSnooze } from "sluice:task/flow@0.3.0";
import { enqueue as hostEnqueue } from "sluice:task/jobs@0.3.0";
import { EnqueueError, Fatal, fromUtf8, toBytes } from "./sluice-task.js";

export { EnqueueError };

/**
 * A wait the host refused; nothing was recorded. `kind` is `not-durable` (the job type is
 * not durable: `sluice types set T --durable`) or `invalid` (a signal name empty or too
 * long, an id not enqueued by this job, an id listed twice; `detail` names it). Uncaught,
 * it fails the job permanently, as neither gets better by retrying; catch it to fall back.
 */
export class WaitError extends Fatal {
  constructor(kind, detail) {
    super(
      kind === "not-durable"
        ? "not-durable: this job type cannot wait without holding a slot " +
            "(make it durable: `sluice types set TYPE --durable`)"
        : `invalid wait: ${detail}`,
    );
    this.name = "WaitError";
    this.kind = kind;
    this.detail = detail;
  }
}

// The bindings throw a WIT `result`'s error as the value itself or as an Error carrying
// it in `payload`.
const errorOf = (e) => (e && e.payload !== undefined ? e.payload : e);

function waitError(e) {
  const refused = errorOf(e);
  if (refused && typeof refused.tag === "string") return new WaitError(refused.tag, refused.val);
  return e;
}

/** Whole milliseconds (rounded up) as the u64 the bindings take. */
function millis(ms, what) {
  const value = Math.ceil(Number(ms));
  if (!Number.isFinite(value) || value < 0) throw new Fatal(`${what}: not a duration in ms: ${ms}`);
  return BigInt(value);
}

const present = (value) => value !== undefined && value !== null;
const number = (id) => (typeof id === "bigint" && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : id);
const bytes = (value) => (value instanceof Uint8Array ? value : Uint8Array.from(value));

/**
 * The final state of one awaited follow-up job: `id` (what `enqueue` returned), `state`
 * (`"completed"`, `"dead"` or `"cancelled"`), `output` (Uint8Array when completed,
 * possibly empty; null otherwise), `error` (its last error when dead, and cancelled if it
 * had one; null when completed).
 */
export class ChildOutcome {
  constructor(raw) {
    this.id = number(raw.id);
    this.state = String(raw.state).toLowerCase();
    this.output = present(raw.output) ? bytes(raw.output) : null;
    this.error = present(raw.error) ? raw.error : null;
  }

  /** True when the child completed. */
  isCompleted() {
    return this.state === "completed";
  }

  /** The output as text; null unless completed. */
  text() {
    return this.output === null ? null : fromUtf8(this.output);
  }

  /** The output parsed as JSON; a child without output, or one not JSON, is a Fatal. */
  json() {
    if (this.output === null) {
      const why = this.error ? ` (${this.error})` : "";
      throw new Fatal(`job ${this.id} ended ${this.state}${why}: it has no output`);
    }
    try {
      return JSON.parse(fromUtf8(this.output));
    } catch (e) {
      throw new Fatal(`job ${this.id}: output is not JSON: ${e.message}`);
    }
  }
}

/**
 * Return after `ms` milliseconds. Durable type: the wake-up instant is fixed (and
 * journaled) by the first call; a short sleep (at most 1 s) that ends before the
 * attempt's deadline sleeps in place, a longer one suspends the run until that instant; a
 * replayed sleep whose instant has passed returns at once. Not durable: sleeps in place;
 * one that would outlast the attempt's remaining time fails the attempt at once
 * (retryable) and never returns.
 */
function sleep(ms) {
  hostSleep(millis(ms, "durable.sleep"));
}

/**
 * Wait for the signal `name` sent to this job and return its payload as JSON bytes
 * (Uint8Array; the text `null` for a signal sent without one), or null once `timeoutMs`
 * (fixed by the first call, like `sleep`) has passed; no `timeoutMs` waits until a signal
 * comes or the job is cancelled. Throws WaitError.
 */
function awaitSignalBytes(name, options = {}) {
  const timeout = present(options.timeoutMs) ? millis(options.timeoutMs, "durable.awaitSignal") : undefined;
  let payload;
  try {
    payload = hostAwaitSignal(String(name), timeout);
  } catch (e) {
    throw waitError(e);
  }
  return present(payload) ? bytes(payload) : null;
}

/**
 * `awaitSignalBytes` with the payload parsed as JSON: null means the timeout passed or the
 * signal was sent without a payload (use `awaitSignalBytes` to tell them apart). Signals
 * are kept until awaited: each call takes the oldest of that name not yet taken, so one
 * sent before the call is returned at once. Sent with `sluice jobs signal ID NAME`,
 * `sluice.signal(id, name, payload)` in SQL or `POST /v1/jobs/{id}/signals/{name}`.
 */
function awaitSignal(name, options = {}) {
  const payload = awaitSignalBytes(name, options);
  if (payload === null) return null;
  try {
    return JSON.parse(fromUtf8(payload));
  } catch (e) {
    throw new Fatal(`signal ${name}: payload is not JSON: ${e.message}`);
  }
}

/**
 * Wait until every job in `ids` has finished and return their ChildOutcomes, in the order
 * of `ids` (fan-in). Each id must have been returned to this job by `enqueue` (in this run
 * or an earlier one) and be listed once, else WaitError (`invalid`); an empty list returns
 * at once. Children enqueued in this run are inserted by the suspension, so enqueue and
 * await in the same run. Not durable: WaitError (`not-durable`).
 */
function awaitJobs(ids) {
  let outcomes;
  try {
    outcomes = hostAwaitJobs(Array.from(ids, (id) => BigInt(id)));
  } catch (e) {
    throw waitError(e);
  }
  return Array.from(outcomes, (raw) => new ChildOutcome(raw));
}

/** `durable.sleep(ms)`, `durable.awaitSignal(name, { timeoutMs })`, `durable.awaitSignalBytes`, `durable.awaitJobs(ids)`. */
export const durable = { sleep, awaitSignal, awaitSignalBytes, awaitJobs };

/**
 * `flow.snooze(ms)`: end this run and run the job again after `ms` milliseconds without
 * spending an attempt ("the API said 429, come back in 30 s"). Not durable: never returns;
 * the next run starts `run` over, and follow-up jobs enqueued in this run are dropped.
 * Durable: the next run replays up to this call, which then returns; call again what was
 * refused. Bounded by the type's `--max-snoozes` (one more fails the attempt, retryable).
 */
export const flow = {
  snooze: (ms) => hostSnooze(millis(ms, "flow.snooze")),
  snoozeWhenBusy,
};

/** The longest snooze `flow.snoozeWhenBusy` takes, in milliseconds: one hour (a server
 * asking for more gets this, and is asked again then). */
export const MAX_RETRY_AFTER_MS = 3600 * 1000;

/**
 * `flow.snoozeWhenBusy(response, defaultMs)`: when `response` (sluice-http.js) says the
 * server is busy — 429 Too Many Requests or 503 Service Unavailable — snooze for its
 * `Retry-After` (`response.retryAfterMs()`: seconds or an HTTP-date, at most an hour) or
 * `defaultMs` without a usable one, and return true (durable: after the snooze, so send
 * the request again); any other status returns false at once. Not durable, a snooze
 * never returns. Throws a Fatal for a `defaultMs` that is not a duration. The loop:
 *
 *   let res;
 *   do res = http.get(url); while (flow.snoozeWhenBusy(res, 30000));
 */
function snoozeWhenBusy(response, defaultMs) {
  millis(defaultMs, "flow.snoozeWhenBusy"); // a bad default is refused whatever the status
  if (response.status !== 429 && response.status !== 503) return false;
  const asked = response.retryAfterMs();
  const ms = Math.min(asked === null ? Number(defaultMs) : asked, MAX_RETRY_AFTER_MS);
  hostSnooze(millis(ms, "flow.snoozeWhenBusy"));
  return true;
}

const big = (value) => (present(value) ? BigInt(value) : undefined);
const opt = (value) => (present(value) ? value : undefined);

/**
 * Buffer one follow-up job of `jobType` and return the id it will have (a number; a
 * BigInt beyond 2^53). `payload` as a task's output (object -> JSON, string -> UTF-8,
 * Uint8Array as is; undefined -> `{}`). `options`: `priority`, `delayMs` or `runAtMs`,
 * `maxAttempts`, `idempotencyKey` (as in sluice-jobs.js) and `concurrencyKey` (groups jobs
 * for the type's `--max-running-per-key`, docs/flow-control.md). The job exists once this
 * run completes or, in a durable type, suspends; a replayed run gets the same id. The
 * reserved type `sluice.event` returns 0, which names no job. Throws EnqueueError.
 */
export function enqueue(jobType, payload, options = {}) {
  const body = payload === undefined ? toBytes({}) : toBytes(payload);
  let id;
  try {
    id = hostEnqueue(String(jobType), body, {
      priority: opt(options.priority),
      delayMs: big(options.delayMs),
      runAtMs: big(options.runAtMs),
      maxAttempts: opt(options.maxAttempts),
      idempotencyKey: opt(options.idempotencyKey),
      concurrencyKey: opt(options.concurrencyKey),
    });
  } catch (e) {
    const refused = errorOf(e);
    if (refused && typeof refused.tag === "string") throw new EnqueueError(refused.tag, String(refused.val));
    throw e;
  }
  return number(id);
}

/** `jobs.enqueue(jobType, payload, options)`, the same function as `enqueue`. */
export const jobs = { enqueue };
