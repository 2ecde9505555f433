"""Waiting without holding a slot (contract 0.3: `sluice:task/durable@0.3.0`,
docs/durable.md). Build against `wit/v0.3` (`componentize-py -d wit/v0.3 -w task ...`).

    from datetime import timedelta
    from sluice_task import durable, enqueue, task

    @task
    def run(job):
        durable.sleep(timedelta(days=3))                    # no slot held meanwhile
        approval = durable.await_signal("approve", timeout=86_400)   # None: timed out
        ids = [enqueue("resize", {"i": i}) for i in range(3)]
        outcomes = durable.await_jobs(ids)                  # fan-in, in the order of ids
        return {"approved": approval, "done": sum(o.is_completed() for o in outcomes)}

In a durable job type (`sluice types set T --durable`) a wait that cannot be answered
now suspends the run: the job goes to `waiting`, holds no slot, and the run after the
wake-up replays every host call made before the wait from the journal (same answers,
HTTP not sent again); then the call returns. To the task each is a plain blocking call.
In a type that is not durable `sleep` sleeps in place (within the attempt's timeout) and
the awaits raise `WaitError` (`not-durable`), a `Fatal`: uncaught, the job goes `dead`.

Durations are seconds (int or float) or a `datetime.timedelta`, sent as whole
milliseconds, rounded up.
"""

import json as _json
import math as _math
from datetime import timedelta as _timedelta
from typing import Any, List, Optional, Union

from componentize_py_types import Err as _Err

from sluice_task import Fatal

try:
    from wit_world.imports import durable as _durable
except ImportError:  # built against sluice:task@0.1.0 or 0.2.0
    _durable = None

__all__ = [
    "ChildOutcome",
    "WaitError",
    "await_jobs",
    "await_signal",
    "await_signal_bytes",
    "sleep",
]

Duration = Union[int, float, _timedelta]


def _needs_0_3(what: str) -> Fatal:
    return Fatal(f"{what} needs contract 0.3: build against wit/v0.3 (docs/guests/python.md)")


def _millis(duration: Duration) -> int:
    """Whole milliseconds, rounded up (through nanoseconds, so 0.3 s is 300 ms)."""
    if isinstance(duration, _timedelta):
        ns = (
            duration.days * 86_400_000_000_000
            + duration.seconds * 1_000_000_000
            + duration.microseconds * 1_000
        )
    else:
        ns = round(float(duration) * 1e9)
    if ns < 0:
        raise ValueError(f"a duration cannot be negative: {duration!r}")
    return -(-ns // 1_000_000)


class WaitError(Fatal):
    """A wait the host refused; nothing was recorded. `kind` is `not-durable` (the job
    type is not durable: `sluice types set T --durable`) or `invalid` (a signal name empty
    or too long, an id not enqueued by this job, an id listed twice; `detail` names it).
    Uncaught, it fails the job permanently, as neither gets better by retrying; catch it
    to fall back (for example to polling)."""

    def __init__(self, kind: str, detail: Optional[str] = None):
        if kind == "not-durable":
            message = (
                "not-durable: this job type cannot wait without holding a slot "
                "(make it durable: `sluice types set TYPE --durable`)"
            )
        else:
            message = f"invalid wait: {detail}"
        super().__init__(message)
        self.kind = kind
        self.detail = detail


def _wait_error(e: _Err) -> WaitError:
    error = e.value
    if isinstance(error, _durable.WaitError_NotDurable):
        return WaitError("not-durable")
    return WaitError("invalid", str(getattr(error, "value", error)))


class ChildOutcome:
    """The final state of one awaited follow-up job: `id` (what `enqueue` returned),
    `state` (`"completed"`, `"dead"` or `"cancelled"`), `output` (bytes when completed,
    possibly empty; None otherwise), `error` (its last error when dead, and cancelled if it
    had one; None when completed)."""

    __slots__ = ("id", "state", "output", "error")

    def __init__(self, id: int, state: str, output: Optional[bytes], error: Optional[str]):
        self.id = id
        self.state = state
        self.output = output
        self.error = error

    def is_completed(self) -> bool:
        """True when the child completed."""
        return self.state == "completed"

    def text(self) -> Optional[str]:
        """The output as text (invalid UTF-8 replaced); None unless completed."""
        return None if self.output is None else self.output.decode("utf-8", "replace")

    def json(self) -> Any:
        """The output parsed as JSON. A child that did not complete, or whose output is not
        JSON, is a `Fatal` error naming the child (and its error)."""
        if self.output is None:
            why = f" ({self.error})" if self.error else ""
            raise Fatal(f"job {self.id} ended {self.state}{why}: it has no output")
        try:
            return _json.loads(self.output)
        except ValueError as e:
            raise Fatal(f"job {self.id}: output is not JSON: {e}") from None

    def __repr__(self) -> str:
        return (
            f"ChildOutcome(id={self.id}, state={self.state!r}, "
            f"output={None if self.output is None else len(self.output)}, error={self.error!r})"
        )


def sleep(duration: Duration) -> None:
    """Return after `duration` (seconds, or a `timedelta`).

    Durable type: the wake-up instant is fixed (and journaled) by the first call; a short
    sleep (at most 1 s) that ends before the attempt's deadline sleeps in place, a longer
    one suspends the run until that instant; a replayed sleep whose instant has passed
    returns at once. Not durable: sleeps in place; a sleep that would outlast the
    attempt's remaining time fails the attempt at once (retryable) and never returns.
    """
    if _durable is None:
        raise _needs_0_3("durable.sleep")
    _durable.sleep(_millis(duration))


def await_signal_bytes(name: str, timeout: Optional[Duration] = None) -> Optional[bytes]:
    """Wait for the signal `name` sent to this job and return its payload as JSON bytes (the
    text `null` for a signal sent without one), or None once `timeout` (seconds or a
    `timedelta`, fixed by the first call like `sleep`) has passed. `timeout=None` waits
    until a signal comes or the job is cancelled. Raises `WaitError`."""
    if _durable is None:
        raise _needs_0_3("durable.await_signal")
    try:
        payload = _durable.await_signal(name, None if timeout is None else _millis(timeout))
    except _Err as e:
        raise _wait_error(e) from None
    return None if payload is None else bytes(payload)


def await_signal(name: str, timeout: Optional[Duration] = None) -> Any:
    """`await_signal_bytes` with the payload parsed as JSON: None means the timeout passed
    or the signal was sent without a payload (`null`); use `await_signal_bytes` where the
    two must be told apart. Signals are kept until awaited: each call takes the oldest one
    of that name not yet taken, so one sent before the call is returned at once. Sent with
    `sluice jobs signal ID NAME`, `sluice.signal(id, name, payload)` in SQL or
    `POST /v1/jobs/{id}/signals/{name}`. Raises `WaitError`; a payload that is not JSON
    is a `Fatal` error."""
    payload = await_signal_bytes(name, timeout)
    if payload is None:
        return None
    try:
        return _json.loads(payload)
    except ValueError as e:
        raise Fatal(f"signal {name}: payload is not JSON: {e}") from None


_STATES = {0: "completed", 1: "dead", 2: "cancelled"}


def await_jobs(ids: List[int]) -> List[ChildOutcome]:
    """Wait until every job in `ids` has finished and return their outcomes, in the order of
    `ids` (fan-in). Each id must have been returned to this job by `enqueue` (in this run or
    an earlier one) and be listed once, else `WaitError` (`invalid`). An empty list returns
    at once. Children enqueued in this run are inserted by the suspension, so enqueue and
    await in the same run. Not durable: `WaitError` (`not-durable`)."""
    if _durable is None:
        raise _needs_0_3("durable.await_jobs")
    try:
        outcomes = _durable.await_jobs([int(i) for i in ids])
    except _Err as e:
        raise _wait_error(e) from None
    return [
        ChildOutcome(
            o.id,
            _STATES.get(o.state.value, o.state.name.lower()),
            None if o.output is None else bytes(o.output),
            o.error,
        )
        for o in outcomes
    ]
