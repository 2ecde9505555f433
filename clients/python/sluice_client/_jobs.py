"""The arguments and results of the ergonomic job methods, shared by ``Client`` and
``AsyncClient``.

Owns: turning ``enqueue``'s keyword arguments into the generated ``EnqueueRequest``
(durations as the API writes them, ``None`` meaning "not sent"), a batch's items, and
``Enqueued`` (the job and whether this call created it). Must not: do any I/O.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Optional, Union

from ._codec import UNSET, JsonValue
from ._generated.models import BatchRequest, EnqueueRequest, JobView
from ._wait import format_duration

#: A job's state (``JobView.state``); a state added to the server later is kept as text.
JobState = Literal["pending", "running", "waiting", "completed", "dead", "cancelled"]
#: A priority: a label, or an integer from -32768 to 32767 (higher runs first).
Priority = Union[Literal["low", "medium", "high", "critical"], int]
#: How long an idempotency key stays taken.
KeyScope = Literal["retained", "unfinished"]
#: A delay: API text (``"5m"``), seconds, or a ``timedelta``.
Delay = Union[str, int, float, _dt.timedelta]
#: One job of a batch: an ``EnqueueRequest``, or a mapping of ``enqueue``'s arguments
#: (``{"type": "echo", "payload": {...}, "delay": "5m"}``).
JobSpec = Union[EnqueueRequest, Mapping[str, Any]]


@dataclass(frozen=True)
class Enqueued:
    """What ``enqueue`` answers: the job, and False in ``created`` when its idempotency
    key was taken (``job`` is then the job holding it)."""

    job: JobView
    created: bool

    @property
    def id(self) -> int:
        """The job's id."""
        return self.job.id


def enqueue_request(
    type: str,
    payload: JsonValue = None,
    *,
    priority: Optional[Priority] = None,
    run_at: Union[_dt.datetime, str, None] = None,
    delay: Optional[Delay] = None,
    max_attempts: Optional[int] = None,
    idempotency_key: Optional[str] = None,
    key_scope: Optional[KeyScope] = None,
    concurrency_key: Optional[str] = None,
) -> EnqueueRequest:
    """The request body of one job; ``None`` leaves a field out (the server default)."""
    if run_at is not None and delay is not None:
        raise ValueError("give either run_at or delay, not both")
    if isinstance(run_at, _dt.datetime) and run_at.tzinfo is None:
        raise ValueError("run_at has no time zone; pass an aware datetime (e.g. tzinfo=timezone.utc)")

    def given(value: Any) -> Any:
        return UNSET if value is None else value

    return EnqueueRequest(
        type=type,
        payload=given(payload),
        priority=given(priority),
        run_at=given(run_at),
        delay=UNSET if delay is None else format_duration(delay),
        max_attempts=given(max_attempts),
        idempotency_key=given(idempotency_key),
        key_scope=given(key_scope),
        concurrency_key=given(concurrency_key),
    )


def batch_request(jobs: Iterable[JobSpec]) -> BatchRequest:
    """The body of ``enqueue_batch``: each item an ``EnqueueRequest`` or the mapping of
    ``enqueue``'s arguments."""
    items = [job if isinstance(job, EnqueueRequest) else enqueue_request(**job) for job in jobs]
    return BatchRequest(jobs=items)
