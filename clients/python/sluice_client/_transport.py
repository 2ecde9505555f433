"""The two HTTP transports (blocking and asyncio, both ``httpx``) and the bases of the
generated ``Api`` / ``AsyncApi`` classes.

Owns: sending what ``_core.build_request`` built and handing the answer to
``_core.decode_reply``; mapping ``httpx``'s transport failures to
``SluiceConnectionError``; owning (or not) the ``httpx`` client. The two classes differ
only in ``await``. Must not: know any rule of the API.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import httpx

from ._core import ApiResponse, ClientConfig, HttpRequest, Operation, build_request, decode_reply
from .errors import SluiceConnectionError

#: The HTTP timeout of a request unless the caller gives one (seconds).
DEFAULT_TIMEOUT = 30.0

_Timeout = Any  # a float, None (no timeout) or httpx.USE_CLIENT_DEFAULT


def _timeout(request_timeout: Optional[float]) -> _Timeout:
    return httpx.USE_CLIENT_DEFAULT if request_timeout is None else request_timeout


def _connection_error(request: HttpRequest, error: Exception) -> SluiceConnectionError:
    reason = str(error) or type(error).__name__
    return SluiceConnectionError(f"{request.method} {request.url}: {reason}")


class SyncTransport:
    """Sends requests with an ``httpx.Client`` (its own, unless one is given)."""

    def __init__(self, config: ClientConfig, timeout: Optional[float], http: Optional[httpx.Client]) -> None:
        self.config = config
        self._owns_http = http is None
        self.http = http if http is not None else httpx.Client(timeout=timeout)
        self.default_timeout = timeout

    def call(
        self,
        op: Operation,
        args: Mapping[str, Any],
        body: Any = None,
        request_timeout: Optional[float] = None,
    ) -> ApiResponse:
        request = build_request(self.config, op, args, body)
        try:
            response = self.http.request(
                request.method,
                request.url,
                headers=request.headers,
                content=request.content,
                timeout=_timeout(request_timeout),
            )
        except httpx.TransportError as e:
            raise _connection_error(request, e) from e
        return decode_reply(op, response.status_code, response.headers, response.content)

    def close(self) -> None:
        if self._owns_http:
            self.http.close()


class AsyncTransport:
    """Sends requests with an ``httpx.AsyncClient`` (its own, unless one is given)."""

    def __init__(
        self, config: ClientConfig, timeout: Optional[float], http: Optional[httpx.AsyncClient]
    ) -> None:
        self.config = config
        self._owns_http = http is None
        self.http = http if http is not None else httpx.AsyncClient(timeout=timeout)
        self.default_timeout = timeout

    async def call(
        self,
        op: Operation,
        args: Mapping[str, Any],
        body: Any = None,
        request_timeout: Optional[float] = None,
    ) -> ApiResponse:
        request = build_request(self.config, op, args, body)
        try:
            response = await self.http.request(
                request.method,
                request.url,
                headers=request.headers,
                content=request.content,
                timeout=_timeout(request_timeout),
            )
        except httpx.TransportError as e:
            raise _connection_error(request, e) from e
        return decode_reply(op, response.status_code, response.headers, response.content)

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()


class SyncApiBase:
    """Base of the generated blocking ``Api``: each method calls ``_call``."""

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def _call(
        self, op: Operation, args: Mapping[str, Any], body: Any, request_timeout: Optional[float]
    ) -> Any:
        return self._transport.call(op, args, body, request_timeout).value


class AsyncApiBase:
    """Base of the generated ``AsyncApi``: each method awaits ``_call``."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def _call(
        self, op: Operation, args: Mapping[str, Any], body: Any, request_timeout: Optional[float]
    ) -> Any:
        return (await self._transport.call(op, args, body, request_timeout)).value
