"""`durable-steps` (contract 0.3): payload `{"urls": ["...", ...], "pause_after": {"2":
3000}, "sleep_after": {"1": 5000}, "signal_before": {"3": "approve"}}`; POSTs
`{"step": i}` to each URL in order (steps numbered from 1) and completes with the JSON
list of response bodies (as text). Every field but `urls` is optional, keyed by step:
- `pause_after`: after step `i`, busy-wait that many milliseconds, reading the clock, so
  that a test can kill the worker in the middle;
- `sleep_after`: after step `i` (and its pause), `durable.sleep` that many milliseconds
  (a long one suspends a durable run; not durable, it sleeps in place);
- `signal_before`: before step `i`, `durable.await_signal(name)` with no timeout, and send
  `{"step": i, "signal": <the signal's JSON payload>}` for that step instead. Not durable,
  the wait is refused: `fatal("not-durable: ...")`;
- `snooze_when_busy_ms` (not keyed by step): a 429 or 503 answer snoozes the job
  (`flow.snooze_when_busy`: for its `Retry-After`, or this many milliseconds without one,
  at most an hour) and the step is sent again after it.

Any other non-2xx answer, or a network failure, is retried. The same task as the Rust sample
`sample-tasks/durable-steps`; built against contract 0.3 (`wit/v0.3`)."""

import time
from datetime import timedelta

from sluice_task import Fatal, Job, Retry, durable, flow, http, task


@task
def run(job: Job) -> list:
    args = job.json()
    if not isinstance(args, dict) or not isinstance(args.get("urls"), list):
        raise Fatal("payload needs a list `urls`")
    pause_after = args.get("pause_after") or {}
    sleep_after = args.get("sleep_after") or {}
    signal_before = args.get("signal_before") or {}
    busy_ms = args.get("snooze_when_busy_ms")
    bodies = []
    for step, url in enumerate(args["urls"], start=1):
        key = str(step)
        body = {"step": step}
        if key in signal_before:
            # No timeout: None is only what a signal sent without a payload says (`null`).
            body["signal"] = durable.await_signal(signal_before[key])
        while True:
            response = http.post(url, json=body)
            if busy_ms is None or not flow.snooze_when_busy(
                response, timedelta(milliseconds=busy_ms)
            ):
                break
        if not 200 <= response.status <= 299:
            raise Retry(f"step {step}: {url} answered {response.status}")
        bodies.append(response.text())
        if key in pause_after:
            pause(pause_after[key] / 1000)
        if key in sleep_after:
            durable.sleep(timedelta(milliseconds=sleep_after[key]))
    return bodies


def pause(seconds: float) -> None:
    """Waits `seconds` reading the clock (every 10 ms: a few hundred reads, not millions)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.01)
