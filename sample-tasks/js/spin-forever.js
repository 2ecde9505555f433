// `spin-forever` (hostile): loops forever in the interpreter without calling the host.
// Only fuel or the epoch deadline can stop it; expected outcome: timeout or fuel exhausted.
import { task } from "../../guest-sdk/js/sluice-task.js";

export const run = task(() => {
  let n = 0;
  for (;;) {
    n = (n + 1) | 0;
  }
});
