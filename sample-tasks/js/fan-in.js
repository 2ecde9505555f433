// `fan-in` (contract 0.3): payload {"children": N, "child_type": "echo"} (`child_type`
// optional, default `echo`). Enqueues N follow-up jobs of `child_type`, child i (from 0)
// with the payload {"i": i}, awaits them all with `durable.awaitJobs`, and completes with
// {"completed": <how many completed>, "outputs": [...]}: each child's output as text, in
// enqueue order (null for a child that did not complete).
//
// Meant for a durable type (`sluice types set T --durable`): the await suspends the run,
// the suspension inserts the children, and the run after the last one finishes replays
// the enqueues (same ids, no new jobs) and returns their outcomes. Not durable, the await
// is refused: WaitError (`not-durable`), a Fatal, and no child is created, since the
// attempt does not complete. Any refused wait or enqueue is fatal with its message. The
// same task as the Rust sample sample-tasks/fan-in; built with componentize-js against the
// world task-durable of guest-sdk/js/wit (contract 0.3).
import { Fatal, task } from "../../guest-sdk/js/sluice-task.js";
import { durable, enqueue } from "../../guest-sdk/js/sluice-durable.js";

export const run = task((job) => {
  const args = job.json();
  if (!args || !Number.isInteger(args.children) || args.children < 0) {
    throw new Fatal("payload needs a number `children`");
  }
  const childType = args.child_type || "echo";
  const ids = [];
  for (let i = 0; i < args.children; i++) ids.push(enqueue(childType, { i }));
  const outcomes = durable.awaitJobs(ids);
  return {
    completed: outcomes.filter((o) => o.isCompleted()).length,
    outputs: outcomes.map((o) => o.text()),
  };
});
