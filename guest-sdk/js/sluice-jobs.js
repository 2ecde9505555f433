// Follow-up jobs from a JavaScript task (contract 0.2): buffered by the host and inserted
// in the same transaction as this attempt's success, so they exist only if it completes
// (docs/task-authors.md).
//
//   import { task } from "./sluice-task.js";
//   import { enqueue } from "./sluice-jobs.js";
//
//   export const run = task((job) => {
//     enqueue("send-receipt", { order: 42 }, { delayMs: 60000 });
//     return "charged";
//   });
//
// Build against the world `task-jobs` of guest-sdk/js/wit (`componentize-qjs --wit
// guest-sdk/js/wit --world task-jobs --sync ...`): it imports `sluice:task/jobs@0.2.0`
// beside the 0.1 host interface sluice-task.js uses. A refusal throws EnqueueError (a
// Fatal) whose `kind` is `unknown-job-type`, `invalid` or `limit-exceeded`.

import { enqueue as hostEnqueue } from "sluice:task/jobs@0.2.0";
import { EnqueueError, toBytes } from "./sluice-task.js";

export { EnqueueError };

const big = (value) => (value === undefined || value === null ? null : BigInt(value));
const opt = (value) => (value === undefined ? null : value);

/**
 * Buffer one follow-up job of `jobType`. `payload` as a task's output (object -> JSON,
 * string -> UTF-8, Uint8Array as is; undefined -> `{}`). `options`: `priority` (low 0,
 * medium 10 = the default, high 20, critical 30), `delayMs` or `runAtMs` (milliseconds
 * since the Unix epoch), `maxAttempts` (default: the type's), `idempotencyKey`.
 */
export function enqueue(jobType, payload, options = {}) {
  if (options.concurrencyKey !== undefined && options.concurrencyKey !== null) {
    // Refused rather than dropped: the 0.2 `enqueue-options` has no concurrency key.
    throw new EnqueueError("invalid", "concurrencyKey needs contract 0.3 (sluice-durable.js)");
  }
  const body = payload === undefined ? toBytes({}) : toBytes(payload);
  try {
    hostEnqueue(jobType, body, {
      priority: opt(options.priority),
      delayMs: big(options.delayMs),
      runAtMs: big(options.runAtMs),
      maxAttempts: opt(options.maxAttempts),
      idempotencyKey: opt(options.idempotencyKey),
    });
  } catch (e) {
    // componentize-qjs throws the WIT error as an Error whose `payload` is the variant.
    const refused = e && e.payload !== undefined ? e.payload : e;
    if (refused && typeof refused.tag === "string") {
      throw new EnqueueError(refused.tag, String(refused.val));
    }
    throw e;
  }
}
