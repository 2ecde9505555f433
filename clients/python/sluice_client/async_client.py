"""``AsyncClient``: the asyncio twin of ``Client`` (``client.py``), method for method.

Owns: the same ergonomic methods as ``Client``, as coroutines (``iter_jobs`` is an async
iterator), on top of the generated ``AsyncApi`` (``client.api``). The logic they share
lives in ``_jobs``, ``_wait`` and ``_core``; only the ``await``s differ from ``Client``.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from typing import AsyncIterator, Iterable, List, Optional, Union

import httpx

from ._codec import JsonValue
from ._core import ClientConfig
from ._generated import operations as ops
from ._generated.api import AsyncApi
from ._generated.models import BatchItem, JobListItem, JobPage, JobView, SignalRequest, SignalSent
from ._jobs import Delay, Enqueued, JobSpec, JobState, KeyScope, Priority, batch_request, enqueue_request
from ._transport import DEFAULT_TIMEOUT, AsyncTransport
from ._wait import Seconds, WaitPlan, format_duration, is_finished
from .errors import JobTimeout


class AsyncClient:
    """An asyncio client of one Sluice server, as one tenant.

    ``AsyncClient("http://127.0.0.1:8080", token)``; ``tenant`` (sent as ``X-Sluice-Tenant``)
    lets an admin token act for another tenant. ``timeout`` is each request's HTTP
    timeout in seconds (``None``: none); ``http_client`` an ``httpx.AsyncClient`` to
    use instead of the client's own (it is then not closed by ``aclose``). Use it as an
    async context manager, or call ``aclose``.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        tenant: Optional[str] = None,
        *,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        self._transport = AsyncTransport(ClientConfig(base_url, token, tenant), timeout, http_client)
        #: Every operation of the API, generated from its OpenAPI document.
        self.api = AsyncApi(self._transport)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connections (unless the ``httpx.AsyncClient`` was given)."""
        await self._transport.aclose()

    async def enqueue(
        self,
        type: str,
        payload: JsonValue = None,
        *,
        priority: Optional[Priority] = None,
        run_at: Union[_dt.datetime, str, None] = None,
        delay: Optional[Delay] = None,
        max_attempts: Optional[int] = None,
        idempotency_key: Optional[str] = None,
        key_scope: Optional[KeyScope] = None,
        concurrency_key: Optional[str] = None,
    ) -> Enqueued:
        """Enqueues a job of ``type``: ``payload`` is any JSON (default ``{}``); ``run_at``
        (an aware datetime) or ``delay`` (``"5m"``, seconds or a timedelta) defers it.
        ``created`` is False when ``idempotency_key`` was taken: ``job`` is the holder."""
        body = enqueue_request(
            type,
            payload,
            priority=priority,
            run_at=run_at,
            delay=delay,
            max_attempts=max_attempts,
            idempotency_key=idempotency_key,
            key_scope=key_scope,
            concurrency_key=concurrency_key,
        )
        reply = await self._transport.call(ops.ENQUEUE, {}, body)
        return Enqueued(reply.value, created=reply.status == 201)

    async def enqueue_batch(self, jobs: Iterable[JobSpec]) -> List[BatchItem]:
        """Enqueues 1 to 1000 jobs, all or none; one ``BatchItem`` (id, created) per job,
        in order. Each job is an ``EnqueueRequest`` or a dict of ``enqueue``'s arguments."""
        return (await self.api.enqueue_batch(batch_request(jobs))).jobs

    async def get(self, id: int) -> JobView:
        """The job ``id`` with its payload and output (``NotFoundError`` if none)."""
        return await self.api.get_job(id)

    async def wait(self, id: int, timeout: Seconds) -> JobView:
        """Waits until job ``id`` is finished (``completed``, ``dead`` or ``cancelled``)
        and returns it; raises ``JobTimeout`` (with the last view in ``.job``) when
        ``timeout`` (seconds or a timedelta) passes first. Long-polls the server in
        requests of at most 60 s."""
        plan = WaitPlan(timeout)
        job: Optional[JobView] = None
        while True:
            chunk = plan.next_chunk()
            if chunk is None:
                assert job is not None
                raise JobTimeout(job, plan.timeout)
            started = plan.clock()
            job = await self.api.get_job(
                id,
                wait=format_duration(chunk) if chunk > 0 else None,
                request_timeout=plan.http_timeout(chunk, self._transport.default_timeout),
            )
            if is_finished(job.state):
                return job
            pause = plan.pause(started)
            if pause > 0:
                await asyncio.sleep(pause)

    async def list(
        self,
        *,
        state: Optional[JobState] = None,
        type: Optional[str] = None,
        parent: Optional[int] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> JobPage:
        """One page of the tenant's jobs, newest first; pass ``next_cursor`` as
        ``cursor`` for the next page (``iter_jobs`` does it for you)."""
        return await self.api.list_jobs(state=state, type=type, parent=parent, limit=limit, cursor=cursor)

    async def iter_jobs(
        self,
        *,
        state: Optional[JobState] = None,
        type: Optional[str] = None,
        parent: Optional[int] = None,
        page_size: Optional[int] = None,
    ) -> AsyncIterator[JobListItem]:
        """Every job matching the filters, newest first, fetching page after page."""
        cursor: Optional[str] = None
        while True:
            page = await self.list(state=state, type=type, parent=parent, limit=page_size, cursor=cursor)
            for job in page.jobs:
                yield job
            if page.next_cursor is None or not page.jobs:
                return
            cursor = page.next_cursor

    async def cancel(self, id: int) -> JobView:
        """Cancels a pending job, or asks a running one to stop (``ConflictError`` when
        it is already finished)."""
        return await self.api.cancel_job(id)

    async def retry(self, id: int) -> JobView:
        """Runs a dead or cancelled job again with fresh attempts (``ConflictError``
        otherwise)."""
        return await self.api.retry_job(id)

    async def signal(self, id: int, name: str, payload: JsonValue = None) -> SignalSent:
        """Sends the signal ``name`` with ``payload`` to job ``id``; ``woke`` says
        whether a job awaiting it woke now."""
        return await self.api.send_signal(id, name, SignalRequest(payload=payload))
