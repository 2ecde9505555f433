// `secret-echo`: payload {"secret": "NAME"}; reads the tenant's secret NAME, logs a line
// holding the value and completes with {"found": true, "value": "<the value>"}: the host
// masks the value as `[secret NAME]` in the log and in the output it keeps. A name granted
// but not set completes with {"found": false, "code": "not-found"}; a name the job type is
// not granted ends the job `dead` (SecretError is a Fatal), naming `not-granted`. Built
// against the world task-secrets of guest-sdk/js/wit (contract 0.2).
import { Fatal, log, task } from "../../guest-sdk/js/sluice-task.js";
import { SecretError, getSecret } from "../../guest-sdk/js/sluice-secrets.js";

export const run = task((job) => {
  const args = job.json();
  if (!args || typeof args.secret !== "string") throw new Fatal("payload needs a string `secret`");
  let value;
  try {
    value = getSecret(args.secret);
  } catch (e) {
    if (e instanceof SecretError && e.code === "not-found") return { found: false, code: e.code };
    throw e;
  }
  log.info(`read ${args.secret}: ${value}`);
  return { found: true, value };
});
