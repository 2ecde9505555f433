"""`http-get`: payload `{"url": "...", "timeout_ms": N?, "times": N?, "upload_bytes": N?}`;
fetches the URL (`times` times, default once) through the host's egress policy and
completes with the last response's `{"status": S, "body_bytes": N, "body_head": "first 64
bytes", "requests": N}`. With `upload_bytes` it POSTs that many bytes (`x`) instead of
GETting (a body for the host's request-body cap). A request the host refuses or that fails ends the job `dead` at once,
its message naming the `wasi:http` error code (a refusal will not change on a retry).
The same task as the Rust sample `sample-tasks/http-get`; built against contract 0.2."""

from sluice_task import Fatal, HttpError, Job, http, task


@task
def run(job: Job) -> dict:
    args = job.json()
    if not isinstance(args, dict) or not isinstance(args.get("url"), str):
        raise Fatal("payload needs a string `url`")
    timeout_ms = args.get("timeout_ms")
    times = max(1, int(args.get("times") or 1))
    upload = args.get("upload_bytes")
    timeout = None if timeout_ms is None else timeout_ms / 1000
    for _ in range(times):
        try:
            if upload is None:
                response = http.get(args["url"], timeout=timeout)
            else:
                response = http.post(args["url"], b"x" * int(upload), timeout=timeout)
        except HttpError as e:
            raise Fatal(e.message) from None
    head = response.body[:64]
    return {
        "status": response.status,
        "body_bytes": len(response.body),
        "body_head": head.decode("utf-8", "replace"),
        "requests": times,
    }
