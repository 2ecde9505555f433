"""A typed client of Sluice's HTTP API (``sluice serve``).

``Client`` (blocking) and ``AsyncClient`` (asyncio) carry the ergonomic job methods;
``client.api`` has every operation of the OpenAPI document, generated from it
(``clients/python/generate.py``); ``sluice_client.models`` every schema. Errors are
``ApiError`` subclasses by code (``sluice_client.errors``), ``SluiceConnectionError``,
``UnexpectedResponseError`` and ``JobTimeout``.
"""

from ._codec import UNSET, DecodeError, JsonValue, Unset
from ._jobs import Enqueued, JobState, KeyScope, Priority
from ._wait import FINISHED_STATES, format_duration
from .async_client import AsyncClient
from .client import Client
from .errors import (
    ApiError,
    ConflictError,
    ContendedError,
    ErrorCode,
    ForbiddenError,
    InternalError,
    SecretsKeyMissingError,
    InvalidComponentError,
    InvalidRequestError,
    JobTimeout,
    JobTypeNotFoundError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    ReadOnlyTokenError,
    RequestTimeoutError,
    RouteNotFoundError,
    SluiceConnectionError,
    SluiceError,
    UnauthorizedError,
    UnavailableError,
    UnexpectedResponseError,
    UnsupportedMediaTypeError,
)
from .models import BatchItem, EnqueueRequest, JobListItem, JobPage, JobView, SignalSent

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "Client",
    "Enqueued",
    "JobState",
    "KeyScope",
    "Priority",
    "FINISHED_STATES",
    "format_duration",
    "UNSET",
    "Unset",
    "JsonValue",
    "DecodeError",
    "BatchItem",
    "EnqueueRequest",
    "JobListItem",
    "JobPage",
    "JobView",
    "SignalSent",
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
    "SecretsKeyMissingError",
]
