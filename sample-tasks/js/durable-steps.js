// `durable-steps` (contract 0.3): payload {"urls": ["...", ...], "pause_after": {"2":
// 3000}, "sleep_after": {"1": 5000}, "signal_before": {"3": "approve"}}; POSTs
// {"step": i} to each URL in order (steps numbered from 1) and completes with the JSON
// list of response bodies (as text). Every field but `urls` is optional, keyed by step:
// - `pause_after`: after step i, busy-wait that many milliseconds, reading the clock, so
//   that a test can kill the worker in the middle;
// - `sleep_after`: after step i (and its pause), `durable.sleep` that many milliseconds
//   (a long one suspends a durable run; not durable, it sleeps in place);
// - `signal_before`: before step i, `durable.awaitSignal(name)` with no timeout, and send
//   {"step": i, "signal": <the signal's JSON payload>} for that step instead. Not durable,
//   the wait is refused: fatal("not-durable: ...");
// - `snooze_when_busy_ms` (not keyed by step): a 429 or 503 answer snoozes the job
//   (`flow.snoozeWhenBusy`: for its Retry-After, or this many milliseconds without one, at
//   most an hour) and the step is sent again after it.
//
// Any other non-2xx answer, or a network failure, is retried. The same task as the Rust sample
// sample-tasks/durable-steps; built with componentize-js against the world task-durable
// of guest-sdk/js/wit (contract 0.3).
import { Fatal, Retry, task } from "../../guest-sdk/js/sluice-task.js";
import { http } from "../../guest-sdk/js/sluice-http.js";
import { durable, flow } from "../../guest-sdk/js/sluice-durable.js";

/** Waits `ms` reading the clock, so that a test can kill the worker meanwhile. */
function pause(ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // A busy wait: StarlingMonkey has no blocking sleep for a synchronous handler.
  }
}

export const run = task((job) => {
  const args = job.json();
  if (!args || !Array.isArray(args.urls)) throw new Fatal("payload needs a list `urls`");
  const pauseAfter = args.pause_after || {};
  const sleepAfter = args.sleep_after || {};
  const signalBefore = args.signal_before || {};
  const busyMs = args.snooze_when_busy_ms;
  const bodies = [];
  args.urls.forEach((url, i) => {
    const step = i + 1;
    const key = String(step);
    const body = { step };
    if (key in signalBefore) {
      // No timeout: null is only what a signal sent without a payload says.
      body.signal = durable.awaitSignal(signalBefore[key]);
    }
    let response;
    do response = http.post(url, { json: body });
    while (busyMs !== undefined && flow.snoozeWhenBusy(response, busyMs));
    if (!response.ok) throw new Retry(`step ${step}: ${url} answered ${response.status}`);
    bodies.push(response.text());
    if (key in pauseAfter) pause(Number(pauseAfter[key]));
    if (key in sleepAfter) durable.sleep(Number(sleepAfter[key]));
  });
  return bodies;
});
