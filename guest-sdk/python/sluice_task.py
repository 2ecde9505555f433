"""Write a Sluice task in Python: one function from a job to its output.

    from sluice_task import Fatal, Job, Retry, task

    @task
    def run(job: Job):
        args = job.json()                 # malformed JSON -> Fatal
        if "name" not in args:
            raise Fatal("payload needs a name")
        return {"greeted": args["name"]}  # dict/list -> JSON, str -> UTF-8, bytes as they are

`@task` makes the decorated function the component's `run` export (the `sluice:task`
world in the repository's `wit/`): build the module with `componentize-py -d wit -w task
componentize app -o app.wasm`. Returning completes the job; `raise Retry(msg)` asks for
another attempt with backoff; `raise Fatal(msg)` sends the job to `dead` at once. Any other
exception fails the attempt retryably, with the exception as its message and the traceback
in the attempt's log.

Inside the sandbox a task can log (`log.info(...)`, or `print`, which goes to the same
log), poll `cancelled()`, read the clocks and get randomness; the filesystem, environment
and sockets exist only as empty stubs.

Built against contract 0.2 (`wit/v0.2`, see docs/guests/python.md), a task can also make
outbound HTTP requests through the host's egress policy:

    from sluice_task import HttpError, http

    response = http.get("https://api.example.com/rates", timeout=5.0)
    response.status, response.headers, response.body   # int, [(name, bytes)], bytes
    http.post(url, json={"amount": 42}, headers={"authorization": "Bearer ..."})

A refused or failed request raises `HttpError` (a `Retry`), whose `code` is the
`wasi:http` error-code name (`HTTP-request-denied`, `destination-IP-prohibited`,
`connection-timeout`, ...).

And enqueue follow-up jobs, which exist only if this attempt completes (they are inserted
in the same transaction as its success; docs/task-authors.md):

    from sluice_task import enqueue

    enqueue("send-receipt", {"order": 42}, delay_ms=60_000)

A refused follow-up raises `EnqueueError` (a `Fatal`), whose `kind` is
`unknown-job-type`, `invalid` or `limit-exceeded`.

And read the tenant's secrets granted to the job type (docs/secrets.md); every value read
is masked as `[secret NAME]` in the log, the error and the output the host keeps:

    from sluice_task import SecretError, get_secret

    key = get_secret("STRIPE_KEY")   # str
    http.post(url, json={...}, headers={"authorization": f"Bearer {key}"})

A name the job type is not granted, or one the tenant has not set, raises `SecretError`
(a `Fatal`), whose `code` is `not-granted` or `not-found`.
"""

import json as _json
import sys as _sys
import traceback as _traceback
from typing import Any, Callable, Optional, Union

import wit_world as _world
from componentize_py_types import Err as _Err
from wit_world.imports import host as _host

# Outbound HTTP exists only in worlds that import `wasi:http/outgoing-handler` (contract
# 0.2). Imported here, not on first use: a component has no files to import from at run
# time, only the modules loaded while it was built.
try:
    from wit_world.imports import outgoing_handler as _outgoing
    from wit_world.imports import streams as _streams
    from wit_world.imports import types as _http
except ImportError:  # built against sluice:task@0.1.0
    _outgoing = _streams = _http = None
try:
    from wit_world.imports import jobs as _jobs
except ImportError:  # built against sluice:task@0.1.0
    _jobs = None
try:
    from wit_world.imports import secrets as _secrets
except ImportError:  # built against sluice:task@0.1.0
    _secrets = None

__all__ = [
    "EnqueueError",
    "Fatal",
    "HttpError",
    "Job",
    "Response",
    "Retry",
    "SecretError",
    "TaskError",
    "cancelled",
    "enqueue",
    "get_secret",
    "http",
    "log",
    "task",
]


class TaskError(Exception):
    """Base of the two ways a task fails on purpose."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = str(message)


class Retry(TaskError):
    """Transient failure: the job is retried with backoff while attempts remain."""


class Fatal(TaskError):
    """Permanent failure: the job goes to `dead` at once, whatever attempts remain."""


class Job:
    """One attempt of one job (the WIT record `job`)."""

    __slots__ = ("id", "job_type", "tenant", "attempt", "max_attempts", "payload")

    def __init__(self, raw: "_world.Job"):
        self.id: int = raw.id
        self.job_type: str = raw.job_type
        self.tenant: str = raw.tenant
        self.attempt: int = raw.attempt
        self.max_attempts: int = raw.max_attempts
        self.payload: bytes = bytes(raw.payload)

    def text(self) -> str:
        """The payload as UTF-8 text; invalid UTF-8 is a `Fatal` error."""
        try:
            return self.payload.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Fatal(f"payload is not UTF-8: {e}") from None

    def json(self) -> Any:
        """The payload parsed as JSON; a malformed payload is a `Fatal` error."""
        try:
            return _json.loads(self.payload)
        except ValueError as e:
            raise Fatal(f"payload is not valid JSON: {e}") from None

    def is_last_attempt(self) -> bool:
        """True when a `Retry` from this attempt would send the job to `dead`."""
        return self.attempt >= self.max_attempts

    def __repr__(self) -> str:
        return (
            f"Job(id={self.id}, job_type={self.job_type!r}, tenant={self.tenant!r}, "
            f"attempt={self.attempt}/{self.max_attempts}, payload={len(self.payload)} bytes)"
        )


class _Log:
    """Structured lines in the attempt's log (`[INFO] message`), capped per attempt."""

    def trace(self, message: str) -> None:
        _host.log(_host.Level.TRACE, str(message))

    def debug(self, message: str) -> None:
        _host.log(_host.Level.DEBUG, str(message))

    def info(self, message: str) -> None:
        _host.log(_host.Level.INFO, str(message))

    def warn(self, message: str) -> None:
        _host.log(_host.Level.WARN, str(message))

    def error(self, message: str) -> None:
        _host.log(_host.Level.ERROR, str(message))


log = _Log()


def cancelled() -> bool:
    """True once an operator cancelled this job or the host is shutting down."""
    return _host.cancelled()


Output = Union[bytes, bytearray, str, dict, list, int, float, bool, None]


def _to_bytes(value: Output) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    try:
        return _json.dumps(value, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise Fatal(f"cannot serialize output as JSON: {e}") from None


_handler: Optional[Callable[[Job], Output]] = None


class _Task(_world.WitWorld):
    """The component's `run` export: calls the `@task` function, maps its outcome."""

    def run(self, job: "_world.Job") -> bytes:
        if _handler is None:
            raise _Err(_world.TaskError_Fatal("no @task function was defined"))
        try:
            return _to_bytes(_handler(Job(job)))
        except Retry as e:
            raise _Err(_world.TaskError_Retry(e.message))
        except Fatal as e:
            raise _Err(_world.TaskError_Fatal(e.message))
        except Exception as e:  # a bug in the task: retryable, like a trap
            log.error(_traceback.format_exc())
            raise _Err(_world.TaskError_Retry(f"{type(e).__name__}: {e}"))


def task(handler: Callable[[Job], Output]) -> Callable[[Job], Output]:
    """Make `handler(job)` this component's `run` export (use it once per component).

    Its return value is the job's output: `bytes` as they are, `str` as UTF-8, anything
    else as JSON. The decorated function is returned unchanged, so it can be unit-tested.
    """
    global _handler
    if _handler is not None and _handler is not handler:
        raise RuntimeError("@task is used more than once in this component")
    _handler = handler
    # componentize-py looks for the export class as `WitWorld` in the application module.
    setattr(_sys.modules[handler.__module__], "WitWorld", _Task)
    return handler


# --- Outbound HTTP (contract 0.2) -----------------------------------------------------

# The `wasi:http` error-code cases, as the WIT spells them.
_ERROR_CODES = {
    name.replace("-", "").lower(): name
    for name in (
        "DNS-timeout DNS-error destination-not-found destination-unavailable "
        "destination-IP-prohibited destination-IP-unroutable connection-refused "
        "connection-terminated connection-timeout connection-read-timeout "
        "connection-write-timeout connection-limit-reached TLS-protocol-error "
        "TLS-certificate-error TLS-alert-received HTTP-request-denied "
        "HTTP-request-length-required HTTP-request-body-size HTTP-request-method-invalid "
        "HTTP-request-URI-invalid HTTP-request-URI-too-long HTTP-request-header-section-size "
        "HTTP-request-header-size HTTP-request-trailer-section-size HTTP-request-trailer-size "
        "HTTP-response-incomplete HTTP-response-header-section-size HTTP-response-header-size "
        "HTTP-response-body-size HTTP-response-trailer-section-size HTTP-response-trailer-size "
        "HTTP-response-transfer-coding HTTP-response-content-coding HTTP-response-timeout "
        "HTTP-upgrade-failed HTTP-protocol-error loop-detected configuration-error "
        "internal-error"
    ).split()
}

# Bytes written per `blocking-write-and-flush` (its limit) and asked for per read.
_WRITE_CHUNK = 4096
_READ_CHUNK = 64 * 1024


class HttpError(Retry):
    """A refused or failed request. `code` is the `wasi:http` error-code name
    (`HTTP-request-denied`, `destination-IP-prohibited`, `connection-timeout`,
    `HTTP-response-body-size`, ...; `invalid-request` for a request this helper could not
    build). Uncaught, it fails the attempt retryably; raise `Fatal(str(e))` where a retry
    cannot help (a refused destination stays refused). The host's reason is in the log."""

    def __init__(self, code: str, message: str):
        super().__init__(f"HTTP request failed: {code} ({message})")
        self.code = code
        self.detail = message


class Response:
    """A response with its whole body read. Redirects are returned, never followed."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: "list[tuple[str, bytes]]", body: bytes):
        self.status = status
        self.headers = headers  # lowercase names, in the order received
        self.body = body

    def header(self, name: str) -> Optional[bytes]:
        """The first value of header `name` (case-insensitive), or None."""
        name = name.lower()
        return next((v for n, v in self.headers if n.lower() == name), None)

    def text(self) -> str:
        """The body as text (invalid UTF-8 is replaced)."""
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON; raises `HttpError` (`invalid-response`) if it is not."""
        try:
            return _json.loads(self.body)
        except ValueError as e:
            raise HttpError("invalid-response", f"JSON body: {e}") from None

    def __repr__(self) -> str:
        return f"Response(status={self.status}, body={len(self.body)} bytes)"


def _invalid(message: str) -> HttpError:
    return HttpError("invalid-request", message)


def _from_code(code: Any) -> HttpError:
    case = type(code).__name__.split("_", 1)[-1]
    name = _ERROR_CODES.get(case.lower(), "other")
    value = getattr(code, "value", None)
    return HttpError(name, case if value is None else f"{case}({value!r})")


def _stream_error(e: Any) -> HttpError:
    if isinstance(e, _streams.StreamError_Closed):
        return HttpError("connection-terminated", "the stream closed")
    code = _http.http_error_code(e.value)
    if code is not None:
        return _from_code(code)
    return HttpError("internal-error", e.value.to_debug_string())


def _write_body(body: Any, data: bytes) -> bool:
    """Writes and finishes `body`; False if the host closed its stream (the body is then
    dropped unfinished: the response says why)."""
    closed = False
    # The stream must be dropped before the body is finished (or dropped).
    with body.write() as stream:
        for i in range(0, len(data), _WRITE_CHUNK):
            try:
                stream.blocking_write_and_flush(data[i : i + _WRITE_CHUNK])
            except _Err as e:
                if not isinstance(e.value, _streams.StreamError_Closed):
                    raise _stream_error(e.value) from None
                closed = True
                break
    if closed:
        with body:  # dropped unfinished
            return False
    try:
        _http.OutgoingBody.finish(body, None)
    except _Err as e:
        raise _from_code(e.value) from None
    return True


def _split_url(url: str) -> "tuple[str, str, str]":
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise _invalid(f"URL `{url}`: no scheme")
    rest = rest.split("#", 1)[0]
    end = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0] or [len(rest)])
    authority, tail = rest[:end], rest[end:]
    if not authority:
        raise _invalid(f"URL `{url}`: no host")
    if not tail:
        tail = "/"
    elif tail.startswith("?"):
        tail = "/" + tail
    return scheme.lower(), authority, tail


_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")


def request(
    method: str,
    url: str,
    *,
    headers: "Optional[Union[dict, list]]" = None,
    body: "Optional[Union[bytes, str]]" = None,
    json: Any = None,
    timeout: Optional[float] = None,
) -> Response:
    """Send one request and read the whole response (blocking).

    `headers` is a dict or a list of (name, value) pairs (`host` and hop-by-hop headers are
    refused by the host); `body` bytes or text; `json` a value sent as a JSON body with
    `content-type: application/json`; `timeout` in seconds, for connecting, the first
    byte and between bytes (the host clamps it to its caps and the attempt's time left).
    """
    if _outgoing is None:
        raise Fatal(
            "outbound HTTP needs contract 0.2: build against wit/v0.2 (docs/guests/python.md)"
        )
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    if json is not None:
        body = _json.dumps(json, separators=(",", ":"))
        if not any(str(n).lower() == "content-type" for n, _ in pairs):
            pairs.append(("content-type", "application/json"))
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body or b"")
    entries = [
        (str(n).lower(), v.encode("utf-8") if isinstance(v, str) else bytes(v)) for n, v in pairs
    ]
    # The whole body is known: declare its length, so it is not sent chunked (which many
    # APIs refuse) and the host can refuse one over its cap before connecting.
    if data and not any(n == "content-length" for n, _ in entries):
        entries.append(("content-length", str(len(data)).encode("ascii")))
    scheme, authority, path = _split_url(url)
    try:
        fields = _http.Fields.from_list(entries)
    except _Err as e:
        raise _invalid(f"headers: {type(e.value).__name__.split('_', 1)[-1]}") from None
    outgoing = _http.OutgoingRequest(fields)
    upper = method.upper()
    try:
        outgoing.set_method(
            getattr(_http, "Method_" + upper.capitalize())()
            if upper in _METHODS
            else _http.Method_Other(method)
        )
        outgoing.set_scheme(
            _http.Scheme_Https()
            if scheme == "https"
            else _http.Scheme_Http()
            if scheme == "http"
            else _http.Scheme_Other(scheme)
        )
        outgoing.set_authority(authority)
        outgoing.set_path_with_query(path)
    except _Err:
        raise _invalid(f"URL `{url}`") from None
    outgoing_body = outgoing.body()
    options = None
    if timeout is not None:
        ns = max(0, int(timeout * 1e9))
        options = _http.RequestOptions()
        for setter in (
            options.set_connect_timeout,
            options.set_first_byte_timeout,
            options.set_between_bytes_timeout,
        ):
            try:
                setter(ns)
            except _Err:
                pass  # a value the host cannot represent: its own cap applies
    try:
        future = _outgoing.handle(outgoing, options)
    except _Err as e:
        raise _from_code(e.value) from None
    # A body the host stops taking (over its cap, or the request refused) closes the
    # stream: why is the response's error code, so that is read first.
    closed = not _write_body(outgoing_body, data)
    with future:
        with future.subscribe() as ready:
            ready.block()
        got = future.get()
    if got is None:
        raise _invalid("response not ready after waiting for it")
    if isinstance(got, _Err):
        raise _invalid("response taken twice")
    inner = got.value
    if isinstance(inner, _Err):
        raise _from_code(inner.value)
    with inner.value as response:
        if closed:
            raise _stream_error(_streams.StreamError_Closed())
        status = response.status()
        with response.headers() as fields:
            received = [(n, bytes(v)) for n, v in fields.entries()]
        incoming = response.consume()
        chunks = []
        with incoming.stream() as stream:
            while True:
                try:
                    chunks.append(stream.blocking_read(_READ_CHUNK))
                except _Err as e:
                    if isinstance(e.value, _streams.StreamError_Closed):
                        break
                    raise _stream_error(e.value) from None
        with _http.IncomingBody.finish(incoming):
            pass
    return Response(status, received, b"".join(chunks))


class _Http:
    """`http.get`, `http.post`, `http.request`: see `request` for the arguments."""

    HttpError = HttpError
    Response = Response
    request = staticmethod(request)

    @staticmethod
    def get(url: str, **kwargs: Any) -> Response:
        """`GET url` (keyword arguments as for `request`)."""
        return request("GET", url, **kwargs)

    @staticmethod
    def post(url: str, body: "Optional[Union[bytes, str]]" = None, **kwargs: Any) -> Response:
        """`POST url` with `body` (or `json=value`; keyword arguments as for `request`)."""
        return request("POST", url, body=body, **kwargs)


http = _Http()


# --- Follow-up jobs (contract 0.2) ----------------------------------------------------


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
) -> None:
    """Buffer one follow-up job of `job_type`, inserted with this attempt's success.

    `payload` as a task's output: dict/list -> JSON, str -> UTF-8, bytes as they are, None
    -> `{}`. `priority` (low 0, medium 10 = the default, high 20, critical 30), `delay_ms`
    or `run_at_ms` (milliseconds since the Unix epoch), `max_attempts` (default: the
    type's), `idempotency_key` (per tenant, like any enqueue's).
    """
    if _jobs is None:
        raise Fatal(
            "follow-up jobs need contract 0.2: build against wit/v0.2 (docs/guests/python.md)"
        )
    body = b"{}" if payload is None else _to_bytes(payload)
    options = _jobs.EnqueueOptions(
        priority, delay_ms, run_at_ms, max_attempts, idempotency_key
    )
    try:
        _jobs.enqueue(job_type, body, options)
    except _Err as e:
        error = e.value
        kind = _ENQUEUE_ERRORS.get(type(error).__name__, type(error).__name__)
        raise EnqueueError(kind, str(error.value)) from None


# --- Secrets (contract 0.2) -----------------------------------------------------------


class SecretError(Fatal):
    """A secret this attempt cannot read. `code` is `not-granted` (the job type is not
    granted the name: `sluice types set TYPE --secret NAME`) or `not-found` (granted, but
    the tenant has not set it: `sluice secrets set NAME`); `secret` is the name. Uncaught,
    it fails the attempt permanently: the next attempt would get the same answer."""

    def __init__(self, code: str, secret: str):
        hint = (
            f"grant it with `sluice types set TYPE --secret {secret}`"
            if code == "not-granted"
            else f"granted, but not set: `sluice secrets set {secret}`"
        )
        super().__init__(f"secret {secret}: {code} ({hint})")
        self.code = code
        self.secret = secret


_SECRET_ERRORS = {
    "SecretError_NotGranted": "not-granted",
    "SecretError_NotFound": "not-found",
}


def get_secret(name: str) -> str:
    """The value of the job's tenant's secret `name` (granted to the job type).

    Raises `SecretError` (`code` `not-granted` or `not-found`). The value is masked as
    `[secret NAME]` in everything the host keeps of this attempt, but only as it is:
    log and return the value itself, never a transformed form (base64, hex, a hash).
    """
    if _secrets is None:
        raise Fatal("secrets need contract 0.2: build against wit/v0.2 (docs/guests/python.md)")
    try:
        return _secrets.get(name)
    except _Err as e:
        code = _SECRET_ERRORS.get(type(e.value).__name__, type(e.value).__name__)
        raise SecretError(code, name) from None
