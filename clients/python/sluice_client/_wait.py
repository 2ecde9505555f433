"""Durations as the API writes them, and the plan of ``wait``'s long-poll loop.

Owns: ``format_duration`` (``250ms``, ``30s``, ``5m``, ``2h``, ``7d``: one term, the
largest unit that divides the value exactly), ``to_seconds``, and ``WaitPlan``, which
cuts the caller's overall timeout into requests ``GET /v1/jobs/{id}?wait=<chunk>`` of at
most ``MAX_WAIT_CHUNK`` seconds. ``Client.wait`` and ``AsyncClient.wait`` run the same
plan, each with its own I/O. Must not: do any I/O (its clock and sleeps are the caller's).
"""

from __future__ import annotations

import datetime as _dt
import time
from typing import Callable, Optional, Union

#: States after which a job never changes by itself.
FINISHED_STATES = frozenset({"completed", "dead", "cancelled"})
#: The longest wait one request asks the server for (the server allows 300 s).
MAX_WAIT_CHUNK = 60.0
#: Added to a wait request's HTTP timeout: the server answers at the chunk's end.
WAIT_SLACK = 15.0
#: The least time between two wait requests when the server answered early with an
#: unfinished job (so a server that ignores ``wait`` is polled, not hammered).
MIN_POLL_INTERVAL = 0.5

Seconds = Union[int, float, _dt.timedelta]
_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1))


def to_seconds(value: Seconds) -> float:
    """Seconds from a number of seconds or a ``timedelta``."""
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected seconds or a timedelta, got {value!r}")
    return float(value)


def format_duration(value: Union[Seconds, str]) -> str:
    """A duration as the API reads it: ``timedelta(minutes=5)`` -> ``5m``, ``1.5`` ->
    ``1500ms``, ``0`` -> ``0s``; text is passed through. Rounded to milliseconds."""
    if isinstance(value, str):
        return value
    if isinstance(value, _dt.timedelta):
        millis = round(value / _dt.timedelta(milliseconds=1))
    else:
        millis = round(to_seconds(value) * 1000)
    if millis < 0:
        raise ValueError(f"a duration cannot be negative: {value!r}")
    if millis == 0:
        return "0s"
    for unit, size in _UNITS:
        if millis % size == 0:
            return f"{millis // size}{unit}"
    raise AssertionError("unreachable: 1 ms divides every whole number of ms")


def is_finished(state: str) -> bool:
    """Whether a job in ``state`` is done (``completed``, ``dead`` or ``cancelled``)."""
    return state in FINISHED_STATES


class WaitPlan:
    """The requests of one ``wait(id, timeout)``.

    Loop: ``chunk = plan.next_chunk()``; ``None`` means the time is up (raise
    ``JobTimeout`` with the last view); else ask ``GET /v1/jobs/{id}`` with
    ``wait=format_duration(chunk)`` (no ``wait`` when ``chunk`` is 0: the first request of
    a zero timeout), return the job if finished, else sleep ``plan.pause(started)``
    seconds and loop. The first request is always made.
    """

    def __init__(self, timeout: Seconds, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout = to_seconds(timeout)
        if self.timeout < 0:
            raise ValueError(f"timeout cannot be negative: {timeout!r}")
        self.clock = clock
        self.deadline = clock() + self.timeout
        self.requests = 0

    def next_chunk(self) -> Optional[float]:
        """Seconds the next request should wait, or None when the time is up."""
        remaining = self.deadline - self.clock()
        if self.requests > 0 and remaining < 0.001:
            return None
        self.requests += 1
        return max(0.0, min(MAX_WAIT_CHUNK, round(remaining, 3)))

    def http_timeout(self, chunk: float, default: Optional[float]) -> Optional[float]:
        """The HTTP timeout of a request waiting ``chunk`` seconds."""
        if default is None:
            return None
        return max(default, chunk + WAIT_SLACK)

    def pause(self, started: float) -> float:
        """Seconds to sleep after an unfinished answer to a request sent at ``started``
        (by this plan's clock): 0 normally, more when the server answered early."""
        elapsed = self.clock() - started
        remaining = self.deadline - self.clock()
        return max(0.0, min(MIN_POLL_INTERVAL - elapsed, remaining))
