// `echo`: completes with its payload unchanged.
import { task } from "../../guest-sdk/js/sluice-task.js";

export const run = task((job) => job.payload);
