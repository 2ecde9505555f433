"""`json-flaky`: payload `{"succeed_on": N}`. Attempts before N ask for a retry; attempt N
(or later) completes with `{"succeeded_on": N}`. A payload that is not JSON, or has no
positive integer `succeed_on`, is a fatal error."""

from sluice_task import Fatal, Job, Retry, log, task


@task
def run(job: Job) -> dict:
    args = job.json()
    succeed_on = args.get("succeed_on") if isinstance(args, dict) else None
    if not isinstance(succeed_on, int) or isinstance(succeed_on, bool) or succeed_on < 1:
        raise Fatal(f"succeed_on must be a positive integer, got {succeed_on!r}")
    if job.attempt < succeed_on:
        raise Retry(f"attempt {job.attempt} of {succeed_on} failed on purpose")
    log.info(f"succeeded on attempt {job.attempt}")
    return {"succeeded_on": job.attempt}
