/**
 * Waiting for a job to finish: the loop over `GET /v1/jobs/{id}?wait=<duration>` in chunks
 * of at most {@link MAX_WAIT_CHUNK_MS}, the durations as the API writes them (`250ms`,
 * `30s`), and which states are finished.
 *
 * Must not: send requests itself (it calls the `fetchJob` it is given), so it is tested
 * without a server.
 */

import { JobTimeoutError } from "./errors.js";
import type { JobView } from "./generated.js";

/** The longest single `?wait=` the client asks for (the server allows up to 300 s). */
export const MAX_WAIT_CHUNK_MS = 60_000;

/**
 * A round answered sooner than this, with the job unfinished, is followed by a pause
 * until this long has passed (a server or proxy that ignores `?wait=` is then polled,
 * not hammered).
 */
export const MIN_ROUND_MS = 200;

/** The states a job does not leave by itself. */
export const FINISHED_STATES: ReadonlySet<string> = new Set(["completed", "dead", "cancelled"]);

/** Whether a job in `state` is finished (`completed`, `dead` or `cancelled`). */
export function isFinished(state: string): boolean {
  return FINISHED_STATES.has(state);
}

/**
 * Milliseconds as one API duration term: whole seconds as `30s`, anything else as
 * `1500ms` (rounded up to a whole millisecond).
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`not a duration: ${ms} ms`);
  const whole = Math.ceil(ms);
  return whole % 1000 === 0 ? `${whole / 1000}s` : `${whole}ms`;
}

/** The `?wait=` chunks a wait of `totalMs` asks for, if every round ran its full chunk. */
export function waitChunks(totalMs: number, maxChunkMs: number = MAX_WAIT_CHUNK_MS): string[] {
  const chunks: string[] = [];
  for (let left = Math.ceil(totalMs); left > 0; left -= maxChunkMs) {
    chunks.push(formatDuration(Math.min(left, maxChunkMs)));
  }
  return chunks;
}

/** What {@link waitForJob} needs. */
export interface WaitDeps {
  /** One `GET /v1/jobs/{id}` with `?wait=` (undefined: no wait), aborted by the caller's signal. */
  fetchJob(wait: string | undefined): Promise<JobView>;
  /** Milliseconds now (default `Date.now`). */
  now?: () => number;
}

/**
 * The job once it is finished; rejects with {@link JobTimeoutError} (carrying the last
 * view) when `timeoutMs` passes first, or with the signal's reason when it is aborted.
 * A timeout of 0 asks once, without waiting.
 */
export async function waitForJob(
  deps: WaitDeps,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<JobView> {
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
    throw new RangeError(`timeoutMs must be a finite number >= 0, got ${timeoutMs}`);
  }
  const now = deps.now ?? Date.now;
  const deadline = now() + timeoutMs;
  // Set when a pause ran to the deadline: the round after it is the last, whatever the
  // clock says then (a timer may fire a millisecond before `now()` reaches the deadline,
  // which must not buy one more round).
  let last = false;
  for (;;) {
    signal?.throwIfAborted();
    const started = now();
    const chunk = Math.min(Math.max(0, deadline - started), MAX_WAIT_CHUNK_MS);
    const job = await deps.fetchJob(chunk > 0 ? formatDuration(chunk) : undefined);
    if (isFinished(job.state)) return job;
    const ended = now();
    if (last || ended >= deadline) throw new JobTimeoutError(job, timeoutMs);
    const untilDeadline = deadline - ended;
    const pause = Math.min(MIN_ROUND_MS - (ended - started), untilDeadline);
    last = pause === untilDeadline;
    if (pause > 0) await sleep(pause, signal);
  }
}

/** Resolves after `ms`, or rejects with the signal's reason when it is aborted first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
