"""`echo`: completes with its payload unchanged."""

from sluice_task import Job, task


@task
def run(job: Job) -> bytes:
    return job.payload
