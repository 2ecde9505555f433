//! `fan-in` (contract 0.3): payload `{"children": N, "child_type": "echo"}` (`child_type`
//! optional, default `echo`). Enqueues N follow-up jobs of `child_type`, child `i` (from
//! 0) with the payload `{"i": i}`, awaits them all with `durable::await_jobs`, and
//! completes with `{"completed": <how many completed>, "outputs": [...]}`: each child's
//! output as text, in enqueue order (`null` for a child that did not complete).
//!
//! Meant for a durable type (`sluice types set T --durable`): the await suspends the run,
//! the suspension inserts the children, and the run after the last one finishes replays
//! the enqueues (same ids, no new jobs) and returns their outcomes. Not durable, the await
//! is refused: `fatal("not-durable: …")` (and no child is created, since the attempt
//! does not complete). Any refused wait or enqueue is fatal with its message.

use sluice_guest::serde_json::json;
use sluice_guest::v0_3::{durable, jobs};
use sluice_guest::{Job, TaskResult};

#[derive(serde::Deserialize)]
struct Args {
    children: u32,
    #[serde(default = "echo")]
    child_type: String,
}

fn echo() -> String {
    "echo".into()
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let ids = (0..args.children)
        .map(|i| {
            jobs::enqueue_json(
                &args.child_type,
                &json!({ "i": i }),
                jobs::Options::default(),
            )
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let outcomes = durable::await_jobs(&ids)?;
    let completed = outcomes.iter().filter(|o| o.is_completed()).count();
    let outputs: Vec<Option<String>> = outcomes.iter().map(|o| o.text()).collect();
    sluice_guest::json_output(&json!({ "completed": completed, "outputs": outputs }))
}

sluice_guest::export_task_v0_3!(run);
