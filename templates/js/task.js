// The `{{name}}` task: one attempt of one job in, the job's output out.
import { task, Retry, Fatal, log } from "./sluice-task.js";

export const run = task((job) => {
  const args = job.json(); // a malformed payload is Fatal: the job goes to `dead` at once
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    throw new Fatal("the payload must be a JSON object");
  }
  log.info(`{{name}}: attempt ${job.attempt} of ${job.maxAttempts}`);
  if (args.fail === "retry") throw new Retry("asked to fail (retryable)");
  return { task: "{{name}}", received: args };
});
