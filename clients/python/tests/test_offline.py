"""Offline tests (no server): request building, error decoding, durations and the wait
plan, the JSON codec, both clients against a scripted fake server, and the client's
agreement with the OpenAPI snapshot (generated files current, hand-written vocabularies
equal to the document's enums).

Run: ``python -m unittest discover -s clients/python/tests`` (from the repository root).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
import typing
import unittest
from pathlib import Path

import httpx

# The working copy of the package, whatever is installed; then the test helpers.
sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

from fakes import FakeServer, error, job_json, list_item_json  # noqa: E402

from sluice_client import (  # noqa: E402
    ApiError,
    AsyncClient,
    Client,
    ErrorCode,
    JobTimeout,
    JobTypeNotFoundError,
    NotFoundError,
    RateLimitedError,
    SluiceConnectionError,
    UnexpectedResponseError,
    _jobs,
    errors,
)
from sluice_client._codec import UNSET, DecodeError, decode, format_datetime, parse_datetime  # noqa: E402
from sluice_client._codec import _hints as model_hints  # noqa: E402
from sluice_client._core import ClientConfig, build_request, decode_reply  # noqa: E402
from sluice_client._generated import models  # noqa: E402
from sluice_client._generated import operations as ops  # noqa: E402
from sluice_client._wait import MAX_WAIT_CHUNK, WaitPlan, format_duration  # noqa: E402

PACKAGE = Path(__file__).resolve().parent.parent
CONFIG = ClientConfig("http://sluice.test:8080/", "sluice_tok", tenant=None)


class DurationTest(unittest.TestCase):
    def test_durations_are_written_as_the_api_reads_them(self) -> None:
        cases: typing.Dict[typing.Any, str] = {
            0: "0s",
            0.25: "250ms",
            0.1: "100ms",
            1.5: "1500ms",
            30: "30s",
            60: "1m",
            90: "90s",
            300: "5m",
            3600: "1h",
            dt.timedelta(days=7): "7d",
            dt.timedelta(milliseconds=250): "250ms",
            "1h 30m": "1h 30m",
        }
        for value, text in cases.items():
            with self.subTest(value=value):
                self.assertEqual(format_duration(value), text)

    def test_a_negative_duration_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            format_duration(-1)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class WaitPlanTest(unittest.TestCase):
    def test_the_timeout_is_cut_into_chunks_of_at_most_60_seconds(self) -> None:
        clock = FakeClock()
        plan = WaitPlan(150, clock)
        chunks = []
        while (chunk := plan.next_chunk()) is not None:
            chunks.append(format_duration(chunk))
            clock.now += chunk
        self.assertEqual(chunks, ["1m", "1m", "30s"])
        self.assertEqual(MAX_WAIT_CHUNK, 60)

    def test_a_zero_timeout_still_asks_once_without_waiting(self) -> None:
        plan = WaitPlan(0, FakeClock())
        self.assertEqual(plan.next_chunk(), 0.0)
        self.assertIsNone(plan.next_chunk())

    def test_a_server_answering_early_is_polled_not_hammered(self) -> None:
        clock = FakeClock()
        plan = WaitPlan(10, clock)
        started = clock.now
        plan.next_chunk()
        clock.now += 0.1
        self.assertAlmostEqual(plan.pause(started), 0.4)
        clock.now += 5
        self.assertEqual(plan.pause(started), 0.0)

    def test_the_http_timeout_outlasts_the_chunk(self) -> None:
        plan = WaitPlan(60, FakeClock())
        self.assertEqual(plan.http_timeout(60, 30.0), 75.0)
        self.assertEqual(plan.http_timeout(1, 30.0), 30.0)
        self.assertIsNone(plan.http_timeout(60, None))


class RequestBuildingTest(unittest.TestCase):
    def test_path_parameters_are_escaped_and_query_parameters_encoded(self) -> None:
        request = build_request(CONFIG, ops.GET_JOB, {"id": 42, "wait": "30s"})
        self.assertEqual(request.method, "GET")
        self.assertEqual(request.url, "http://sluice.test:8080/v1/jobs/42?wait=30s")
        request = build_request(CONFIG, ops.SEND_SIGNAL, {"id": 7, "name": "a/b c"}, {"payload": 1})
        self.assertEqual(request.url, "http://sluice.test:8080/v1/jobs/7/signals/a%2Fb%20c")

    def test_absent_query_parameters_are_left_out(self) -> None:
        args = {"state": "pending", "type": "send email&more", "parent": None, "limit": 2, "cursor": None}
        request = build_request(CONFIG, ops.LIST_JOBS, args)
        self.assertEqual(
            request.url, "http://sluice.test:8080/v1/jobs?state=pending&type=send%20email%26more&limit=2"
        )

    def test_headers_carry_the_token_and_the_tenant(self) -> None:
        request = build_request(CONFIG, ops.GET_JOB, {"id": 1})
        self.assertEqual(request.headers["Authorization"], "Bearer sluice_tok")
        self.assertNotIn("X-Sluice-Tenant", request.headers)
        admin = ClientConfig("http://h/prefix", "adm", tenant="acme")
        request = build_request(admin, ops.GET_JOB, {"id": 1})
        self.assertEqual(request.headers["X-Sluice-Tenant"], "acme")
        self.assertEqual(request.url, "http://h/prefix/v1/jobs/1")

    def test_the_json_body_leaves_unset_fields_out_and_sends_null(self) -> None:
        body = _jobs.enqueue_request("echo", {"n": 1}, priority="high", delay=dt.timedelta(hours=1))
        request = build_request(CONFIG, ops.ENQUEUE, {}, body)
        self.assertEqual(request.headers["Content-Type"], "application/json")
        assert request.content is not None
        self.assertEqual(
            json.loads(request.content),
            {"type": "echo", "payload": {"n": 1}, "priority": "high", "delay": "1h"},
        )
        sent = models.SignalRequest(payload=None)
        request = build_request(CONFIG, ops.SEND_SIGNAL, {"id": 1, "name": "go"}, sent)
        self.assertEqual(request.content, b'{"payload":null}')

    def test_run_at_is_sent_in_utc_and_must_be_aware(self) -> None:
        at = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))
        body = _jobs.enqueue_request("echo", run_at=at).to_json()
        self.assertEqual(body["run_at"], "2030-01-02T01:04:05.000000Z")
        with self.assertRaises(ValueError):
            _jobs.enqueue_request("echo", run_at=dt.datetime(2030, 1, 1))
        with self.assertRaises(ValueError):
            _jobs.enqueue_request("echo", run_at=at, delay=5)

    def test_a_missing_path_parameter_is_refused_before_sending(self) -> None:
        with self.assertRaises(ValueError):
            build_request(CONFIG, ops.GET_JOB, {"id": None})


class ErrorDecodingTest(unittest.TestCase):
    def decode_error(self, status: int, body: bytes, headers: typing.Dict[str, str]) -> BaseException:
        with self.assertRaises(Exception) as raised:
            decode_reply(ops.GET_JOB, status, headers, body)
        return raised.exception

    def test_a_known_code_raises_its_class(self) -> None:
        body = b'{"error": {"code": "job_type_not_found", "message": "unknown job type \\"x\\""}}'
        e = self.decode_error(404, body, {})
        self.assertIsInstance(e, JobTypeNotFoundError)
        self.assertIsInstance(e, NotFoundError)
        assert isinstance(e, ApiError)
        self.assertEqual((e.status, e.code, e.message), (404, "job_type_not_found", 'unknown job type "x"'))
        self.assertIs(e.code, ErrorCode.JOB_TYPE_NOT_FOUND)
        self.assertIsNone(e.retry_after)

    def test_an_unknown_code_is_kept_as_its_string(self) -> None:
        e = self.decode_error(
            418, b'{"error": {"code": "teapot_overflow", "message": "short and stout"}}', {}
        )
        self.assertIs(type(e), ApiError)
        assert isinstance(e, ApiError)
        self.assertEqual(e.code, "teapot_overflow")
        self.assertFalse(e.known_code)
        self.assertIn("teapot_overflow", str(e))

    def test_retry_after_is_read_in_seconds(self) -> None:
        body = b'{"error": {"code": "rate_limited", "message": "slow down"}}'
        e = self.decode_error(429, body, {"retry-after": "7"})
        self.assertIsInstance(e, RateLimitedError)
        assert isinstance(e, ApiError)
        self.assertEqual(e.retry_after, 7)
        self.assertEqual(errors.parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480), 10)
        self.assertIsNone(errors.parse_retry_after("soon"))

    def test_a_body_without_the_error_shape_is_unexpected(self) -> None:
        e = self.decode_error(502, b"<html>bad gateway</html>", {})
        self.assertIsInstance(e, UnexpectedResponseError)
        e = self.decode_error(200, b'{"id": "not a job"}', {})
        self.assertIsInstance(e, UnexpectedResponseError)
        e = self.decode_error(299, b"{}", {})
        self.assertIsInstance(e, UnexpectedResponseError)


class CodecTest(unittest.TestCase):
    def test_instants_are_rfc_3339(self) -> None:
        parsed = parse_datetime("2026-12-03T13:45:55.120123456Z")
        self.assertEqual(parsed, dt.datetime(2026, 12, 3, 13, 45, 55, 120123, tzinfo=dt.timezone.utc))
        self.assertEqual(parse_datetime("2026-12-03T14:45:55+01:00"), parsed.replace(microsecond=0))
        self.assertEqual(format_datetime(parsed), "2026-12-03T13:45:55.120123Z")

    def test_a_job_decodes_with_unknown_fields_and_states_kept(self) -> None:
        job = models.JobView.from_json(job_json(3, "paused_forever", brand_new_field=1))
        self.assertEqual(job.state, "paused_forever")
        self.assertEqual(job.payload, {"hello": "world"})
        self.assertEqual(job.run_at.tzinfo, dt.timezone.utc)

    def test_a_missing_required_field_or_wrong_kind_fails(self) -> None:
        broken = job_json()
        del broken["tenant"]
        with self.assertRaises(DecodeError):
            models.JobView.from_json(broken)
        with self.assertRaises(DecodeError):
            models.JobView.from_json(job_json(id="7"))  # type: ignore[arg-type]

    def test_unset_is_left_out_and_none_is_null(self) -> None:
        self.assertEqual(models.EnqueueRequest(type="echo").to_json(), {"type": "echo"})
        self.assertEqual(
            models.EnqueueRequest(type="echo", delay=None).to_json(), {"type": "echo", "delay": None}
        )
        self.assertFalse(UNSET)
        self.assertEqual(decode(typing.Optional[int], None), None)


class DocumentAgreementTest(unittest.TestCase):
    """The hand-written vocabularies equal the document's enums, and the generated
    layer is what ``generate.py`` writes from ``clients/openapi.json``."""

    def literal_values(self, model: type, field: str) -> typing.Set[typing.Any]:
        hint = typing.get_type_hints(model, vars(models), vars(models))[field]
        values: typing.Set[typing.Any] = set()
        for arg in typing.get_args(hint) or (hint,):
            if typing.get_origin(arg) is typing.Literal:
                values |= set(typing.get_args(arg))
        if typing.get_origin(hint) is typing.Literal:
            values |= set(typing.get_args(hint))
        return values

    def test_error_codes_are_the_documents(self) -> None:
        documented = self.literal_values(models.ErrorDetail, "code")
        if not documented:
            self.skipTest("ErrorDetail.code is not an enum in this snapshot")
        self.assertEqual({c.value for c in ErrorCode}, documented)
        self.assertEqual(set(errors.ERROR_CLASSES), set(ErrorCode))

    def test_job_states_priorities_and_key_scopes_are_the_documents(self) -> None:
        self.assertEqual(set(typing.get_args(_jobs.JobState)), self.literal_values(models.JobView, "state"))
        self.assertEqual(
            set(typing.get_args(_jobs.KeyScope)), self.literal_values(models.JobView, "key_scope")
        )
        labels = set(typing.get_args(typing.get_args(_jobs.Priority)[0]))
        self.assertEqual(labels, self.literal_values(models.EnqueueRequest, "priority"))

    def test_every_generated_annotation_evaluates(self) -> None:
        for name in models.__all__:
            value = getattr(models, name)
            if isinstance(value, type):
                with self.subTest(model=name):
                    self.assertTrue(model_hints(value) or not dataclasses.fields(value))
        for op in ops.OPERATIONS.values():
            for reply in op.replies.values():
                self.assertTrue(reply.kind in ("json", "text", "bytes", "empty"), op.name)

    def test_the_generated_files_are_current(self) -> None:
        snapshot = PACKAGE.parent / "openapi.json"
        if not snapshot.exists():
            self.skipTest(f"no snapshot at {snapshot}")
        run = subprocess.run(
            [sys.executable, str(PACKAGE / "generate.py"), "--check"], capture_output=True, text=True
        )
        self.assertEqual(run.returncode, 0, run.stdout[-4000:] + run.stderr)


class ClientTest(unittest.TestCase):
    """The blocking client against a scripted fake server."""

    def client(self, server: FakeServer) -> Client:
        return Client("http://sluice.test", "tok", http_client=server.sync_http())

    def test_enqueue_reports_whether_it_created_the_job(self) -> None:
        server = FakeServer((201, job_json(5)), (200, job_json(5)))
        client = self.client(server)
        first = client.enqueue("echo", {"hello": "world"}, idempotency_key="k1", key_scope="unfinished")
        second = client.enqueue("echo", {"hello": "world"}, idempotency_key="k1")
        self.assertEqual((first.id, first.created, second.id, second.created), (5, True, 5, False))
        self.assertEqual(server.body(0)["key_scope"], "unfinished")
        self.assertEqual(server.requests[0].url.path, "/v1/jobs")

    def test_wait_long_polls_until_the_job_is_finished(self) -> None:
        done = job_json(9, "completed", output={"hello": "world"})
        server = FakeServer((200, job_json(9, "running")), (200, done))
        job = self.client(server).wait(9, timeout=90)
        self.assertEqual(job.output, {"hello": "world"})
        self.assertEqual(server.query(0)["wait"], "1m")
        self.assertEqual(server.query(1)["wait"], "1m")

    def test_wait_raises_job_timeout_with_the_last_view(self) -> None:
        server = FakeServer(*[(200, job_json(4, "pending"))] * 10)
        with self.assertRaises(JobTimeout) as raised:
            self.client(server).wait(4, timeout=0.2)
        self.assertEqual((raised.exception.job_id, raised.exception.state), (4, "pending"))
        self.assertEqual(raised.exception.job.id, 4)

    def test_iter_jobs_follows_the_cursor(self) -> None:
        server = FakeServer(
            (200, {"jobs": [list_item_json(3), list_item_json(2)], "next_cursor": "2"}),
            (200, {"jobs": [list_item_json(1)], "next_cursor": None}),
        )
        ids = [j.id for j in self.client(server).iter_jobs(state="pending", page_size=2)]
        self.assertEqual(ids, [3, 2, 1])
        self.assertEqual(server.query(1), {"state": "pending", "limit": "2", "cursor": "2"})

    def test_errors_and_connection_failures_are_typed(self) -> None:
        server = FakeServer(error(404, "not_found"), httpx.ConnectError("connection refused"))
        client = self.client(server)
        with self.assertRaises(NotFoundError):
            client.get(12345)
        with self.assertRaises(SluiceConnectionError):
            client.cancel(1)

    def test_batch_sends_every_job_and_returns_the_items(self) -> None:
        items = {"jobs": [{"id": 1, "created": True}, {"id": 2, "created": False}]}
        server = FakeServer((200, items))
        got = self.client(server).enqueue_batch(
            [{"type": "echo", "payload": 1}, models.EnqueueRequest(type="x")]
        )
        self.assertEqual([(i.id, i.created) for i in got], [(1, True), (2, False)])
        self.assertEqual(server.body(0), {"jobs": [{"type": "echo", "payload": 1}, {"type": "x"}]})


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    """The asyncio client against the same fake server."""

    async def test_the_job_methods_match_the_blocking_client(self) -> None:
        server = FakeServer(
            (201, job_json(5)),
            (200, job_json(5, "running")),
            (200, job_json(5, "completed", output=1)),
            (200, {"jobs": [list_item_json(5)], "next_cursor": None}),
            error(409, "conflict"),
            (200, {"job_id": 5, "name": "go", "woke": False}),
        )
        async with AsyncClient("http://sluice.test", "tok", http_client=server.async_http()) as client:
            enqueued = await client.enqueue("echo", 1, priority=20)
            self.assertTrue(enqueued.created)
            job = await client.wait(5, 30)
            self.assertEqual(job.output, 1)
            self.assertEqual([j.id async for j in client.iter_jobs()], [5])
            with self.assertRaises(ApiError) as raised:
                await client.retry(5)
            self.assertEqual(raised.exception.code, ErrorCode.CONFLICT)
            sent = await client.signal(5, "go", {"by": "ana"})
            self.assertFalse(sent.woke)
        self.assertEqual(server.query(1)["wait"], "30s")
        self.assertEqual(server.body(5), {"payload": {"by": "ana"}})

    async def test_connection_failures_are_typed(self) -> None:
        server = FakeServer(httpx.ConnectError("refused"))
        async with AsyncClient("http://sluice.test", "tok", http_client=server.async_http()) as client:
            with self.assertRaises(SluiceConnectionError):
                await client.get(1)


if __name__ == "__main__":
    unittest.main()
