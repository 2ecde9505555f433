"""Test doubles for the offline tests: JSON of jobs as the server writes them, and a
scripted fake server behind ``httpx.MockTransport`` (sync and async clients alike).

Owns: ``job_json`` and ``FakeServer``. Must not: open a socket.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import httpx

Answer = Union[Tuple[int, Any], Tuple[int, Any, Dict[str, str]], Exception]


def job_json(id: int = 1, state: str = "pending", **fields: Any) -> Dict[str, Any]:
    """A ``JobView`` as the server sends it (every field present)."""
    job: Dict[str, Any] = {
        "id": id,
        "tenant": "default",
        "type": "echo",
        "state": state,
        "priority": 10,
        "run_at": "2026-12-03T13:45:55.120123456Z",
        "attempt": 0,
        "max_attempts": 3,
        "idempotency_key": None,
        "key_scope": "retained",
        "cancel_requested": False,
        "last_error": None,
        "payload": {"hello": "world"},
        "output": None,
        "created_at": "2026-12-03T13:45:55Z",
        "updated_at": "2026-12-03T13:45:55+00:00",
        "finished_at": None,
        "parent_id": None,
        "children": [],
        "children_count": 0,
        "concurrency_key": None,
        "held": None,
        "waiting_for": None,
        "awaited": None,
        "snoozes": 0,
    }
    job.update(fields)
    return job


def list_item_json(id: int, state: str = "pending") -> Dict[str, Any]:
    """A ``JobListItem`` as the server sends it."""
    return {
        "id": id,
        "type": "echo",
        "state": state,
        "priority": 10,
        "run_at": "2026-12-03T13:45:55Z",
        "attempt": 0,
        "max_attempts": 3,
        "idempotency_key": None,
        "last_error": None,
        "payload_size": 2,
        "output_size": None,
        "created_at": "2026-12-03T13:45:55Z",
        "finished_at": None,
        "parent_id": None,
    }


class FakeServer:
    """Answers each request with the next scripted answer and records the requests.

    An answer is ``(status, json_body)``, ``(status, json_body, headers)`` or an
    exception to raise (e.g. ``httpx.ConnectError``); a callable gets the request.
    """

    def __init__(self, *answers: Union[Answer, Callable[[httpx.Request], Answer]]) -> None:
        self.answers: List[Any] = list(answers)
        self.requests: List[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.answers:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        answer = self.answers.pop(0)
        if callable(answer) and not isinstance(answer, Exception):
            answer = answer(request)
        if isinstance(answer, Exception):
            raise answer
        status, body, *rest = answer
        headers = rest[0] if rest else {}
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.Response(
            status, content=content, headers={"content-type": "application/json", **headers}
        )

    def sync_http(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.handle))

    def async_http(self) -> httpx.AsyncClient:
        async def handle(request: httpx.Request) -> httpx.Response:
            return self.handle(request)

        return httpx.AsyncClient(transport=httpx.MockTransport(handle))

    def query(self, index: int) -> Dict[str, str]:
        return dict(self.requests[index].url.params)

    def body(self, index: int) -> Any:
        return json.loads(self.requests[index].content)


def error(
    status: int, code: str, message: str = "it went wrong", headers: Optional[Dict[str, str]] = None
) -> Answer:
    """A scripted error answer in the API's shape."""
    return (status, {"error": {"code": code, "message": message}}, headers or {})
