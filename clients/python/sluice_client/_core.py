"""The request and reply logic both transports share, with no I/O.

Owns: the shape of an operation in the generated table (``Operation``, ``Param``,
``Reply``), building an HTTP request from an operation and its arguments
(``build_request``: URL with path parameters escaped, query string, headers, JSON body)
and turning a status, headers and body into the typed value or the typed error
(``decode_reply``). ``Client`` and ``AsyncClient`` send what this builds and hand back
what this decodes, so neither knows any rule of the API. Must not: import ``httpx``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote

from ._codec import DecodeError, decode, encode
from .errors import UnexpectedResponseError, error_from_response

USER_AGENT = "sluice-client-python/0.1.0"


@dataclass(frozen=True)
class Param:
    """A parameter of an operation: its name on the wire, as a Python argument, where
    it goes (``path``, ``query``, ``header``) and whether it is required."""

    wire: str
    python: str
    location: str
    required: bool


@dataclass(frozen=True)
class Reply:
    """What a success status carries: ``json`` (decoded to ``type``), ``text``,
    ``bytes`` or ``empty``."""

    kind: str
    type: Any


@dataclass(frozen=True)
class Operation:
    """One path and method of the document (the generated ``operations`` table)."""

    name: str
    method: str
    path: str
    params: Tuple[Param, ...]
    replies: Mapping[int, Reply]
    body: Optional[str] = None
    body_required: bool = False


@dataclass(frozen=True)
class ClientConfig:
    """Where and as whom a client talks: base URL, bearer token, optional tenant."""

    base_url: str
    token: str
    tenant: Optional[str] = None

    def headers(self) -> Dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if self.tenant is not None:
            headers["X-Sluice-Tenant"] = self.tenant
        return headers


@dataclass(frozen=True)
class HttpRequest:
    """A request ready to send: method, absolute URL (query included), headers, body."""

    method: str
    url: str
    headers: Dict[str, str] = field(default_factory=dict)
    content: Optional[bytes] = None


@dataclass(frozen=True)
class ApiResponse:
    """A decoded success: the status, the headers and the typed value."""

    status: int
    headers: Mapping[str, str]
    value: Any


def query_value(value: Any) -> str:
    """A query or path value as text: booleans as ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    encoded = encode(value)
    if isinstance(encoded, str):
        return encoded
    if isinstance(encoded, (list, dict)):
        return json.dumps(encoded, separators=(",", ":"))
    return str(encoded)


def build_request(
    config: ClientConfig,
    op: Operation,
    args: Mapping[str, Any],
    body: Any = None,
) -> HttpRequest:
    """The request for ``op`` with ``args`` (by wire name; ``None``: not sent) and
    ``body`` (a model, JSON-ready data, or bytes for a non-JSON body)."""
    path = op.path
    query: List[Tuple[str, str]] = []
    headers = config.headers()
    for param in op.params:
        value = args.get(param.wire)
        if value is None:
            if param.required:
                raise ValueError(f"{op.name}: {param.python} is required")
            continue
        if param.location == "path":
            path = path.replace("{" + param.wire + "}", quote(query_value(value), safe=""))
        elif param.location == "query":
            values = value if isinstance(value, (list, tuple)) else [value]
            query += [(param.wire, query_value(v)) for v in values]
        else:
            headers[param.wire] = query_value(value)
    url = config.base_url.rstrip("/") + path
    if query:
        url += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in query)
    content = None
    if body is not None and op.body is not None:
        if isinstance(body, (bytes, bytearray, memoryview)):
            content = bytes(body)
        else:
            content = json.dumps(encode(body), separators=(",", ":"), ensure_ascii=False).encode()
        headers["Content-Type"] = op.body
    elif op.body_required:
        raise ValueError(f"{op.name}: a request body is required")
    return HttpRequest(op.method, url, headers, content)


def decode_reply(op: Operation, status: int, headers: Mapping[str, str], content: bytes) -> ApiResponse:
    """The typed value of a success, or raises: ``ApiError`` (a subclass per code) for
    an error answer, ``UnexpectedResponseError`` for a status or body the document does
    not describe."""
    if status >= 400:
        raise error_from_response(status, headers, content)
    reply = op.replies.get(status)
    if reply is None:
        raise UnexpectedResponseError(status, f"{op.method} {op.path} does not answer {status}", content)
    if reply.kind == "empty":
        return ApiResponse(status, headers, None)
    if reply.kind == "bytes":
        return ApiResponse(status, headers, content)
    if reply.kind == "text":
        return ApiResponse(status, headers, content.decode("utf-8", errors="replace"))
    try:
        data = json.loads(content)
    except ValueError:
        raise UnexpectedResponseError(status, "the body is not JSON", content) from None
    try:
        return ApiResponse(status, headers, decode(reply.type, data))
    except DecodeError as e:
        raise UnexpectedResponseError(status, f"the body does not fit the document: {e}", content) from None
