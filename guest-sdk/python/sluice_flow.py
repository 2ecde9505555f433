"""Flow control from inside a Sluice task (contract 0.3: `sluice:task/flow@0.3.0`,
docs/flow-control.md). Build against `wit/v0.3`.

    from sluice_task import flow, http

    while True:
        response = http.get("https://api.example.com/report")
        if response.status != 429:
            break
        flow.snooze(30)   # run me again in 30 s, no attempt spent

This loop is right in both kinds of job type: in a type that is not durable `snooze`
never returns (the next run starts `run` over, and follow-up jobs enqueued in this run
are dropped); in a durable type the next run replays the journal up to the call, which
then returns, and the request is sent again.
"""

from sluice_durable import Duration, _millis, _needs_0_3

try:
    from wit_world.imports import flow as _flow
except ImportError:  # built against sluice:task@0.1.0 or 0.2.0
    _flow = None

__all__ = ["snooze"]


def snooze(delay: Duration) -> None:
    """End this run and run the job again after `delay` (seconds, or a `timedelta`; whole
    milliseconds, rounded up) without spending an attempt: "the API said 429, come back in
    30 s". The next run gets the same `job.attempt`, after passing the type's concurrency
    keys, rate limits and pauses again. Snoozes are counted per job and bounded by the
    type's `--max-snoozes`: one beyond it fails the attempt (retryable) instead."""
    if _flow is None:
        raise _needs_0_3("flow.snooze")
    _flow.snooze(_millis(delay))
