// `json-flaky`: payload `{"succeed_on": N}`. Attempts before N ask for a retry; attempt N
// (or later) completes with `{"succeeded_on": N}`. A payload that is not JSON, or has no
// positive integer `succeed_on`, is a fatal error.
import { task, Retry, Fatal, log } from "../../guest-sdk/js/sluice-task.js";

export const run = task((job) => {
  const args = job.json();
  const succeedOn = args !== null && typeof args === "object" ? args.succeed_on : undefined;
  if (!Number.isInteger(succeedOn) || succeedOn < 1) {
    throw new Fatal(`succeed_on must be a positive integer, got ${JSON.stringify(succeedOn)}`);
  }
  if (job.attempt < succeedOn) {
    throw new Retry(`attempt ${job.attempt} of ${succeedOn} failed on purpose`);
  }
  log.info(`succeeded on attempt ${job.attempt}`);
  return { succeeded_on: job.attempt };
});
