"""`spin-forever` (hostile): loops forever in the interpreter without calling the host.
Only fuel or the epoch deadline can stop it; expected outcome: timeout or fuel exhausted."""

from sluice_task import Job, task


@task
def run(job: Job) -> bytes:
    n = 0
    while True:
        n += 1
