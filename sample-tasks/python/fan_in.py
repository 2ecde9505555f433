"""`fan-in` (contract 0.3): payload `{"children": N, "child_type": "echo"}` (`child_type`
optional, default `echo`). Enqueues N follow-up jobs of `child_type`, child `i` (from 0)
with the payload `{"i": i}`, awaits them all with `durable.await_jobs`, and completes with
`{"completed": <how many completed>, "outputs": [...]}`: each child's output as text, in
enqueue order (`null` for a child that did not complete).

Meant for a durable type (`sluice types set T --durable`): the await suspends the run, the
suspension inserts the children, and the run after the last one finishes replays the
enqueues (same ids, no new jobs) and returns their outcomes. Not durable, the await is
refused: `WaitError` (`not-durable`), a `Fatal`, and no child is created, since the attempt
does not complete. Any refused wait or enqueue is fatal with its message. The same task as
the Rust sample `sample-tasks/fan-in`; built against contract 0.3 (`wit/v0.3`)."""

from sluice_task import Fatal, Job, durable, enqueue, task


@task
def run(job: Job) -> dict:
    args = job.json()
    if not isinstance(args, dict) or not isinstance(args.get("children"), int):
        raise Fatal("payload needs a number `children`")
    child_type = args.get("child_type") or "echo"
    ids = [enqueue(child_type, {"i": i}) for i in range(args["children"])]
    outcomes = durable.await_jobs(ids)
    return {
        "completed": sum(o.is_completed() for o in outcomes),
        "outputs": [o.text() for o in outcomes],
    }
