// Secrets from a JavaScript task (contract 0.2): the job's tenant's secrets granted to the
// job type (`sluice types set T --secret NAME`), read by name (docs/secrets.md).
//
//   import { task } from "./sluice-task.js";
//   import { getSecret } from "./sluice-secrets.js";
//
//   export const run = task((job) => {
//     const key = getSecret("STRIPE_KEY");   // SecretError (a Fatal) if it cannot be read
//     ...
//   });
//
// Build against the world `task-secrets` of guest-sdk/js/wit (`componentize-qjs --wit
// guest-sdk/js/wit --world task-secrets --sync ...`): it imports `sluice:task/secrets@0.2.0`
// and `sluice:task/jobs@0.2.0` beside the 0.1 host interface sluice-task.js uses. Every
// value read is masked as `[secret NAME]` in everything the host keeps of the attempt (log,
// error, output), but only as it is: log and return the value, never an encoded form.

import { get as hostGet } from "sluice:task/secrets@0.2.0";
import { Fatal } from "./sluice-task.js";

/**
 * A secret this attempt cannot read. `code` is `not-granted` (the job type is not granted
 * the name) or `not-found` (granted, but the tenant has not set it); `secret` is the name.
 * Uncaught, it fails the attempt permanently: the next attempt would get the same answer.
 */
export class SecretError extends Fatal {
  constructor(code, secret) {
    const hint =
      code === "not-granted"
        ? `grant it with \`sluice types set TYPE --secret ${secret}\``
        : `granted, but not set: \`sluice secrets set ${secret}\``;
    super(`secret ${secret}: ${code} (${hint})`);
    this.name = "SecretError";
    this.code = code;
    this.secret = secret;
  }
}

/** The value (a string) of the job's tenant's secret `name`; throws SecretError. */
export function getSecret(name) {
  try {
    return hostGet(String(name));
  } catch (e) {
    // componentize-qjs throws the WIT error as an Error whose `payload` is the variant.
    const refused = e && e.payload !== undefined ? e.payload : e;
    if (refused && typeof refused.tag === "string") throw new SecretError(refused.tag, name);
    throw e;
  }
}
