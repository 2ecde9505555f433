"""Follow-up jobs from a Sluice task (contract 0.2 and later; docs/task-authors.md).

    from sluice_task import enqueue            # or: from sluice_jobs import enqueue

    enqueue("send-receipt", {"order": 42}, delay_ms=60_000)

The host buffers each follow-up job and inserts it in the statement that records this
run's end: the attempt's success or, in a durable type (contract 0.3), a suspension. A
refused follow-up raises `EnqueueError` (a `Fatal`), whose `kind` is `unknown-job-type`,
`invalid` or `limit-exceeded`.

Built against contract 0.3 (`wit/v0.3`), `enqueue` returns the id the job will have, to
await it with `durable.await_jobs`, and takes a `concurrency_key`; built against 0.2 it
returns None and refuses a `concurrency_key` rather than drop it.
"""

from typing import Optional

from componentize_py_types import Err as _Err

from sluice_task import Fatal, Output, _to_bytes

try:
    from wit_world.imports import jobs as _jobs
except ImportError:  # built against sluice:task@0.1.0
    _jobs = None

# The 0.3 `enqueue-options` has a `concurrency-key` (and `enqueue` returns the id).
_V0_3 = _jobs is not None and "concurrency_key" in getattr(
    _jobs.EnqueueOptions, "__annotations__", {}
)

__all__ = ["EnqueueError", "enqueue"]


class EnqueueError(Fatal):
    """A follow-up job the host refused; nothing was buffered. `kind` is `unknown-job-type`
    (the tenant has no such type), `invalid` (an option or the payload; the message names
    it) or `limit-exceeded` (this attempt's cap on follow-up jobs or their bytes).
    Uncaught, it fails the attempt permanently: asking again would be refused again."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"follow-up job refused: {kind}: {message}")
        self.kind = kind
        self.detail = message


_ENQUEUE_ERRORS = {
    "EnqueueError_UnknownJobType": "unknown-job-type",
    "EnqueueError_Invalid": "invalid",
    "EnqueueError_LimitExceeded": "limit-exceeded",
}


def enqueue(
    job_type: str,
    payload: Output = None,
    *,
    priority: Optional[int] = None,
    delay_ms: Optional[int] = None,
    run_at_ms: Optional[int] = None,
    max_attempts: Optional[int] = None,
    idempotency_key: Optional[str] = None,
    concurrency_key: Optional[str] = None,
) -> Optional[int]:
    """Buffer one follow-up job of `job_type`; under contract 0.3 return its id.

    `payload` as a task's output: dict/list -> JSON, str -> UTF-8, bytes as they are, None
    -> `{}`. `priority` (low 0, medium 10 = the default, high 20, critical 30), `delay_ms`
    or `run_at_ms` (milliseconds since the Unix epoch), `max_attempts` (default: the
    type's), `idempotency_key` (per tenant, like any enqueue's), `concurrency_key` (0.3
    only: groups jobs for the type's `--max-running-per-key`, docs/flow-control.md).

    0.3: the id is reserved now; the job exists under it once this run completes (or, in a
    durable type, suspends). A replayed run gets the same id; the reserved type
    `sluice.event` returns 0, which names no job. 0.2: returns None.
    """
    if _jobs is None:
        raise Fatal(
            "follow-up jobs need contract 0.2: build against wit/v0.2 (docs/guests/python.md)"
        )
    if concurrency_key is not None and not _V0_3:
        raise EnqueueError(
            "invalid",
            "concurrency_key needs contract 0.3: build against wit/v0.3 (docs/guests/python.md)",
        )
    body = b"{}" if payload is None else _to_bytes(payload)
    fields = [priority, delay_ms, run_at_ms, max_attempts, idempotency_key]
    if _V0_3:
        fields.append(concurrency_key)
    options = _jobs.EnqueueOptions(*fields)
    try:
        id = _jobs.enqueue(job_type, body, options)
    except _Err as e:
        error = e.value
        kind = _ENQUEUE_ERRORS.get(type(error).__name__, type(error).__name__)
        raise EnqueueError(kind, str(error.value)) from None
    return int(id) if _V0_3 else None
