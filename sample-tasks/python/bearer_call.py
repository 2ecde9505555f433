"""`bearer-call`: payload `{"secret": "NAME", "url": "...", "fail": false}`; reads the
tenant's secret NAME and sends `POST url` with `Authorization: Bearer <value>` and the JSON
body `{"amount": 42, "memo": "café ✓"}`, the way a task calls a third-party API with a
stored key. It logs a line holding the value and prints another (the host masks both as
`[secret NAME]`), and completes with `{"status": S}`. A 4xx answer is `fatal` (the same
request would be refused again), a 5xx one a retry; with `"fail": true` it returns a
retryable error whose message holds the value (masked in `last_error` too). A secret not
granted or not set is `fatal`, naming why. The payload of the Rust sample
`sample-tasks/bearer-call` (which sends a GET); built against contract 0.2."""

from sluice_task import Fatal, Job, Retry, get_secret, http, log, task

BODY = {"amount": 42, "memo": "café ✓"}


@task
def run(job: Job) -> dict:
    args = job.json()
    if not isinstance(args, dict) or not all(
        isinstance(args.get(key), str) for key in ("secret", "url")
    ):
        raise Fatal("payload needs a string `secret` and a string `url`")
    url = args["url"]
    value = get_secret(args["secret"])  # SecretError (a Fatal) if not granted or not set
    log.info(f"calling {url} with token {value}")
    print(f"stdout also sees {value}")
    response = http.post(url, json=BODY, headers={"authorization": f"Bearer {value}"})
    if args.get("fail"):
        raise Retry(f"{url} answered {response.status} to token {value}")
    if 400 <= response.status < 500:
        raise Fatal(f"{url} answered {response.status}: the request is refused")
    if response.status >= 500:
        raise Retry(f"{url} answered {response.status}: try again later")
    return {"status": response.status}
