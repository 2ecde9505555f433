// `fan-out`: payload {"type": "echo", "count": N, "keep_going": bool?}; enqueues N
// follow-up jobs of `type`, child i with the payload {"n": i, "attempt": A}. They exist
// only if this attempt completes. A refused enqueue fails the job (permanently), unless
// `keep_going`: then the output reports it. Completes with {"enqueued": k, "refused":
// null | "<the error>"}. The same task as the Rust sample sample-tasks/fan-out (its core
// options); built against the world task-jobs of guest-sdk/js/wit (contract 0.2).
import { Fatal, task } from "../../guest-sdk/js/sluice-task.js";
import { EnqueueError, enqueue } from "../../guest-sdk/js/sluice-jobs.js";

export const run = task((job) => {
  const args = job.json();
  if (!args || typeof args.type !== "string") {
    throw new Fatal("payload needs a string `type` and a `count`");
  }
  let enqueued = 0;
  let refused = null;
  for (let n = 0; n < (args.count || 0); n++) {
    try {
      enqueue(args.type, { n, attempt: job.attempt });
    } catch (e) {
      if (!(e instanceof EnqueueError) || !args.keep_going) throw e;
      refused = e.message;
      break;
    }
    enqueued++;
  }
  return { enqueued, refused };
});
