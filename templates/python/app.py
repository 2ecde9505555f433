"""The `{{name}}` task: one attempt of one job in, the job's output out."""

from sluice_task import Fatal, Job, Retry, log, task


@task
def run(job: Job):
    args = job.json()  # a malformed payload is Fatal: the job goes to `dead` at once
    if not isinstance(args, dict):
        raise Fatal("the payload must be a JSON object")
    log.info(f"{{name}}: attempt {job.attempt} of {job.max_attempts}")
    if args.get("fail") == "retry":
        raise Retry("asked to fail (retryable)")
    return {"task": "{{name}}", "received": args}
