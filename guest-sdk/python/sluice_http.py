"""Outbound HTTP from a Sluice task (contract 0.2 and later), through the host's egress
policy (docs/egress.md): a blocking client over the raw `wasi:http` bindings.

    from sluice_task import HttpError, http     # or: from sluice_http import ...

    response = http.get("https://api.example.com/rates", timeout=5.0)
    response.status, response.headers, response.body   # int, [(name, bytes)], bytes
    response.retry_after()      # seconds its Retry-After asks for, or None
    http.post(url, json={"amount": 42}, headers={"authorization": "Bearer ..."})

A refused or failed request raises `HttpError` (a `Retry`), whose `code` is the
`wasi:http` error-code name (`HTTP-request-denied`, `destination-IP-prohibited`,
`connection-timeout`, ...). Built against contract 0.1 (`wit/`), `request` is a `Fatal`
error naming the contract it needs.
"""

import json as _json
import time as _time
from typing import Any, Optional, Union

from componentize_py_types import Err as _Err

from sluice_task import Fatal, Retry

# Outbound HTTP exists only in worlds that import `wasi:http/outgoing-handler` (contract
# 0.2 and later). Imported here, not on first use: a component has no files to import
# from at run time, only the modules loaded while it was built.
try:
    from wit_world.imports import outgoing_handler as _outgoing
    from wit_world.imports import streams as _streams
    from wit_world.imports import types as _http
except ImportError:  # built against sluice:task@0.1.0
    _outgoing = _streams = _http = None

__all__ = ["HttpError", "Response", "http", "request"]

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

    def retry_after(self) -> Optional[float]:
        """How long the server asked to wait before trying again, in seconds: its
        `Retry-After` header, as delay-seconds or an HTTP-date (a date in the past is 0);
        None without one or when it is neither. `flow.snooze_when_busy` snoozes for it."""
        value = self.header("retry-after")
        return None if value is None else _retry_after(value, _time.time())

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


# `Retry-After` (RFC 9110, section 10.2.3), read exactly as the Rust SDK reads it
# (guest-sdk/src/retry_after.rs): ASCII whitespace around it ignored; delay-seconds, or an
# IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`); the obsolete RFC 850 and asctime forms
# are refused (the caller's default applies).
_ASCII_SPACE = b" \t\n\x0c\r"
_WEEKDAYS = ("Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,", "Sun,")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _retry_after(value: bytes, now: float) -> Optional[float]:
    """The seconds a `Retry-After` value asks for, from `now` (seconds since the epoch);
    a date in the past is 0. None when the value is neither form."""
    text = bytes(value).strip(_ASCII_SPACE)
    if text and all(0x30 <= b <= 0x39 for b in text):
        return int(text)  # Python's int does not overflow; the caller caps it
    at = _imf_fixdate(text)
    return None if at is None else max(0.0, at - now)


def _digits(text: str) -> Optional[int]:
    return int(text) if text and all("0" <= c <= "9" for c in text) else None


def _imf_fixdate(value: bytes) -> Optional[int]:
    """Seconds since the Unix epoch of an IMF-fixdate, or None."""
    try:
        parts = value.decode("ascii").split(" ")
    except UnicodeDecodeError:
        return None
    if len(parts) != 6 or parts[5] != "GMT":
        return None
    weekday, day, month, year, clock = parts[:5]
    if weekday not in _WEEKDAYS or len(day) != 2 or len(year) != 4 or len(clock) != 8:
        return None
    if month not in _MONTHS:
        return None
    fields = [_digits(f) for f in [day, year] + clock.split(":")]
    if len(fields) != 5 or None in fields:
        return None
    d, y, hour, minute, second = fields
    if not 1 <= d <= 31 or y < 1970 or hour > 23 or minute > 59 or second > 60:
        return None
    days = _days_since_epoch(y, _MONTHS.index(month) + 1, d)
    return days * 86_400 + hour * 3_600 + minute * 60 + second


def _days_since_epoch(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the civil date (Howard Hinnant's `days_from_civil`), with
    no check of the day against the month (as the Rust SDK: `31 Feb` is `03 Mar`)."""
    if month <= 2:
        year -= 1
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


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
