"""What the client raises, and how an error answer of the API becomes one.

Every error answer is ``{"error": {"code", "message"}}``. It raises ``ApiError`` with the
HTTP status, the code (an ``ErrorCode`` member, or the plain string of a code this
client does not know yet, so nothing is lost), the message and ``retry_after`` (seconds,
from ``Retry-After`` on 429 and 503); the class is a subclass per known code
(``NotFoundError``, ``RateLimitedError``...), so ``except`` can pick what it handles.
A failure to reach the server is ``SluiceConnectionError``; an answer the API would not
give (not JSON, not the documented shape) is ``UnexpectedResponseError``; ``wait``
running out of time is ``JobTimeout``, carrying the last job view.

Must not: do any I/O.
"""

from __future__ import annotations

import email.utils
import json
import time
from enum import Enum
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Type, Union

if TYPE_CHECKING:
    from ._generated.models import JobView

__all__ = [
    "ErrorCode",
    "SluiceError",
    "SluiceConnectionError",
    "UnexpectedResponseError",
    "JobTimeout",
    "ApiError",
    "InvalidRequestError",
    "InvalidComponentError",
    "UnauthorizedError",
    "ForbiddenError",
    "ReadOnlyTokenError",
    "NotFoundError",
    "JobTypeNotFoundError",
    "RouteNotFoundError",
    "MethodNotAllowedError",
    "ConflictError",
    "PayloadTooLargeError",
    "RequestTimeoutError",
    "UnsupportedMediaTypeError",
    "RateLimitedError",
    "UnavailableError",
    "ContendedError",
    "InternalError",
    "error_from_response",
]


class ErrorCode(str, Enum):
    """The API's error codes. ``ApiError.code`` is one of these, or a plain ``str`` for
    a code added to the server after this client (compare with ``==`` either way)."""

    INVALID_REQUEST = "invalid_request"
    INVALID_COMPONENT = "invalid_component"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    READ_ONLY_TOKEN = "read_only_token"
    NOT_FOUND = "not_found"
    JOB_TYPE_NOT_FOUND = "job_type_not_found"
    ROUTE_NOT_FOUND = "route_not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    CONFLICT = "conflict"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    REQUEST_TIMEOUT = "request_timeout"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    RATE_LIMITED = "rate_limited"
    CONTENDED = "contended"
    UNAVAILABLE = "unavailable"
    SECRETS_KEY_MISSING = "secrets_key_missing"
    INTERNAL = "internal"

    def __str__(self) -> str:
        return self.value


class SluiceError(Exception):
    """Base of everything this package raises."""


class SluiceConnectionError(SluiceError):
    """The server could not be reached, or the connection failed mid-request (refused,
    DNS, TLS, reset, a read that timed out). Nothing says whether the request ran."""


class UnexpectedResponseError(SluiceError):
    """An answer the API's document does not describe: an undocumented status, a body
    that is not JSON or does not fit its schema (a proxy's error page, a version skew)."""

    def __init__(self, status: int, problem: str, body: bytes = b"") -> None:
        super().__init__(f"HTTP {status}: {problem}")
        self.status = status
        self.problem = problem
        self.body = body


class JobTimeout(SluiceError):
    """``wait`` ran out of time before the job finished; ``job`` is its last view."""

    def __init__(self, job: "JobView", timeout: float) -> None:
        super().__init__(f"job {job.id} is still {job.state} after waiting {timeout:g}s")
        self.job = job
        self.job_id = job.id
        self.state = job.state
        self.timeout = timeout


class ApiError(SluiceError):
    """An error answer of the API: ``status``, ``code``, ``message``, ``retry_after``."""

    def __init__(
        self,
        status: int,
        code: Union[ErrorCode, str],
        message: str,
        retry_after: Optional[int] = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after

    @property
    def known_code(self) -> bool:
        """Whether ``code`` is one this client knows (an ``ErrorCode``)."""
        return isinstance(self.code, ErrorCode)


class InvalidRequestError(ApiError):
    """400 ``invalid_request``: a malformed field, parameter or body (the message names it)."""


class InvalidComponentError(ApiError):
    """400 ``invalid_component``: an upload that is not a valid task component."""


class UnauthorizedError(ApiError):
    """401 ``unauthorized``: no token, an unknown one or a revoked one."""


class ForbiddenError(ApiError):
    """403 ``forbidden``: the token may not act for that tenant or route."""


class ReadOnlyTokenError(ForbiddenError):
    """403 ``read_only_token``: a read-only token on anything but GET."""


class NotFoundError(ApiError):
    """404 ``not_found``: no such job, component, type or tenant (or another tenant's)."""


class JobTypeNotFoundError(NotFoundError):
    """404 ``job_type_not_found``: the tenant has no such job type."""


class RouteNotFoundError(NotFoundError):
    """404 ``route_not_found``: the server serves no such path (an older server?)."""


class MethodNotAllowedError(ApiError):
    """405 ``method_not_allowed``."""


class ConflictError(ApiError):
    """409 ``conflict``: e.g. cancelling a finished job, retrying one that is not dead
    or cancelled, a name already taken."""


class PayloadTooLargeError(ApiError):
    """413 ``payload_too_large``: a payload, upload or body over its limit."""


class RequestTimeoutError(ApiError):
    """408 ``request_timeout``: the request body stalled."""


class UnsupportedMediaTypeError(ApiError):
    """415 ``unsupported_media_type``."""


class RateLimitedError(ApiError):
    """429 ``rate_limited``: over the tenant's enqueue rate; wait ``retry_after`` s."""


class UnavailableError(ApiError):
    """503 ``unavailable``: the database does not answer; retry after ``retry_after`` s."""


class ContendedError(UnavailableError):
    """503 ``contended``: an idempotency key is contended; retry after ``retry_after`` s."""


class SecretsKeyMissingError(ApiError):
    """503 ``secrets_key_missing``: the server has no secrets key (secrets, webhooks)."""


class InternalError(ApiError):
    """500 ``internal``: a server bug; its log has the details."""


ERROR_CLASSES: Dict[ErrorCode, Type[ApiError]] = {
    ErrorCode.INVALID_REQUEST: InvalidRequestError,
    ErrorCode.INVALID_COMPONENT: InvalidComponentError,
    ErrorCode.UNAUTHORIZED: UnauthorizedError,
    ErrorCode.FORBIDDEN: ForbiddenError,
    ErrorCode.READ_ONLY_TOKEN: ReadOnlyTokenError,
    ErrorCode.NOT_FOUND: NotFoundError,
    ErrorCode.JOB_TYPE_NOT_FOUND: JobTypeNotFoundError,
    ErrorCode.ROUTE_NOT_FOUND: RouteNotFoundError,
    ErrorCode.METHOD_NOT_ALLOWED: MethodNotAllowedError,
    ErrorCode.CONFLICT: ConflictError,
    ErrorCode.PAYLOAD_TOO_LARGE: PayloadTooLargeError,
    ErrorCode.REQUEST_TIMEOUT: RequestTimeoutError,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: UnsupportedMediaTypeError,
    ErrorCode.RATE_LIMITED: RateLimitedError,
    ErrorCode.CONTENDED: ContendedError,
    ErrorCode.UNAVAILABLE: UnavailableError,
    ErrorCode.SECRETS_KEY_MISSING: SecretsKeyMissingError,
    ErrorCode.INTERNAL: InternalError,
}


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[int]:
    """``Retry-After`` in whole seconds (delta-seconds, or an HTTP date), else None."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0, int(when.timestamp() - (time.time() if now is None else now) + 0.999))


def error_from_response(status: int, headers: Mapping[str, str], content: bytes) -> SluiceError:
    """The exception for an error answer: an ``ApiError`` subclass when the body has the
    API's error shape, else ``UnexpectedResponseError``."""
    try:
        data: Any = json.loads(content)
        detail = data["error"]
        raw_code, message = detail["code"], detail["message"]
        if not isinstance(raw_code, str) or not isinstance(message, str):
            raise TypeError("code and message are strings")
    except (ValueError, TypeError, KeyError):
        return UnexpectedResponseError(status, "an error answer without the API's error shape", content)
    code: Union[ErrorCode, str]
    try:
        code = ErrorCode(raw_code)
    except ValueError:
        code = raw_code
    cls = ERROR_CLASSES.get(code, ApiError) if isinstance(code, ErrorCode) else ApiError
    return cls(status, code, message, parse_retry_after(_header(headers, "Retry-After")))


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    return value
