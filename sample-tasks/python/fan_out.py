"""`fan-out`: payload `{"type": "echo", "count": N, "keep_going": bool?}`; enqueues N
follow-up jobs of `type`, child i with the payload `{"n": i, "attempt": A}`. They exist
only if this attempt completes. A refused enqueue fails the job (permanently), unless
`keep_going`: then the output reports it. Completes with `{"enqueued": k, "refused":
null | "<the error>"}`. The same task as the Rust sample `sample-tasks/fan-out` (its core
options); built against contract 0.2."""

from sluice_task import EnqueueError, Fatal, Job, enqueue, task


@task
def run(job: Job) -> dict:
    args = job.json()
    if not isinstance(args, dict) or not isinstance(args.get("type"), str):
        raise Fatal("payload needs a string `type` and a `count`")
    enqueued, refused = 0, None
    for n in range(int(args.get("count") or 0)):
        try:
            enqueue(args["type"], {"n": n, "attempt": job.attempt})
        except EnqueueError as e:
            if not args.get("keep_going"):
                raise
            refused = e.message
            break
        enqueued += 1
    return {"enqueued": enqueued, "refused": refused}
