"""Flow control from inside a Sluice task (contract 0.3: `sluice:task/flow@0.3.0`,
docs/flow-control.md). Build against `wit/v0.3`.

    from sluice_task import flow, http

    while True:
        response = http.get("https://api.example.com/report")
        if not flow.snooze_when_busy(response, 30):   # a 429 or 503: snoozed
            break

`snooze_when_busy` snoozes (no attempt spent) when the response is a 429 or a 503, for
its `Retry-After` (`Response.retry_after()`) or the default without one, at most an
hour; `flow.snooze(30)` is the snooze itself ("run me again in 30 s"). This loop is
right in both kinds of job type: in a type that is not durable a snooze never returns
(the next run starts `run` over, and follow-up jobs enqueued in this run are dropped);
in a durable type the next run replays the journal up to the call, which then returns,
and the request is sent again.
"""

from typing import Any

from sluice_durable import Duration, _millis, _needs_0_3

try:
    from wit_world.imports import flow as _flow
except ImportError:  # built against sluice:task@0.1.0 or 0.2.0
    _flow = None

__all__ = ["MAX_RETRY_AFTER", "snooze", "snooze_when_busy"]

MAX_RETRY_AFTER = 3600
"""The longest snooze `snooze_when_busy` takes, in seconds: one hour (a server asking for
more gets this, and is asked again then)."""


def snooze(delay: Duration) -> None:
    """End this run and run the job again after `delay` (seconds, or a `timedelta`; whole
    milliseconds, rounded up) without spending an attempt: "the API said 429, come back in
    30 s". The next run gets the same `job.attempt`, after passing the type's concurrency
    keys, rate limits and pauses again. Snoozes are counted per job and bounded by the
    type's `--max-snoozes`: one beyond it fails the attempt (retryable) instead."""
    if _flow is None:
        raise _needs_0_3("flow.snooze")
    _flow.snooze(_millis(delay))


def snooze_when_busy(response: Any, default: Duration) -> bool:
    """When `response` (an `http.Response`) says the server is busy — 429 Too Many
    Requests or 503 Service Unavailable — snooze for its `Retry-After` (seconds or an
    HTTP-date, at most `MAX_RETRY_AFTER`) or for `default` (seconds, or a `timedelta`)
    without a usable one, and return True (in a durable type, after the snooze: send the
    request again); any other status returns False at once. In a type that is not durable
    a snooze never returns. Raises `ValueError` for a negative `default`."""
    default_ms = _millis(default)
    if response.status not in (429, 503):
        return False
    asked = response.retry_after()
    ms = default_ms if asked is None else _millis(min(asked, MAX_RETRY_AFTER))
    if _flow is None:
        raise _needs_0_3("flow.snooze_when_busy")
    _flow.snooze(min(ms, MAX_RETRY_AFTER * 1000))
    return True
