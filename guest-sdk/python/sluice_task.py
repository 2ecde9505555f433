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

This module is self-contained (it is all `sluice task new` copies). The later contracts'
capabilities live in sibling modules of guest-sdk/python, importable from here too (each
is loaded when first imported, which happens while the component is built):

| names (`from sluice_task import ...`) | module | contract |
|---|---|---|
| `http`, `HttpError`, `Response`, `request` | `sluice_http` | 0.2 (`wit/v0.2`) |
| `enqueue`, `EnqueueError`, `jobs` | `sluice_jobs` | 0.2; 0.3 returns the id |
| `get_secret`, `SecretError` | `sluice_secrets` | 0.2 |
| `durable` (`sleep`, `await_signal`, `await_jobs`), `WaitError`, `ChildOutcome` | `sluice_durable` | 0.3 (`wit/v0.3`) |
| `flow` (`snooze`, `snooze_when_busy`) | `sluice_flow` | 0.3 |

The contract is the WIT directory the component is built against (`componentize-py -d
wit/v0.2 -w task ...`); a capability of a later contract raises `Fatal` naming it.
docs/guests/python.md has examples of each.
"""

import importlib as _importlib
import importlib.util as _importlib_util
import json as _json
import sys as _sys
import traceback as _traceback
from typing import Any, Callable, Optional, Union

import wit_world as _world
from componentize_py_types import Err as _Err
from wit_world.imports import host as _host

__all__ = [
    "Fatal",
    "Job",
    "Retry",
    "TaskError",
    "cancelled",
    "log",
    "task",
]  # and the names of `_LAZY` whose modules are present (at the end of the module)


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


# The names of the sibling modules, loaded on first use (PEP 562): `sluice_http` imports
# this module, so importing it from here at the top would be circular.
_LAZY = {
    "HttpError": ("sluice_http", "HttpError"),
    "Response": ("sluice_http", "Response"),
    "http": ("sluice_http", "http"),
    "request": ("sluice_http", "request"),
    "EnqueueError": ("sluice_jobs", "EnqueueError"),
    "enqueue": ("sluice_jobs", "enqueue"),
    "jobs": ("sluice_jobs", None),
    "SecretError": ("sluice_secrets", "SecretError"),
    "get_secret": ("sluice_secrets", "get_secret"),
    "ChildOutcome": ("sluice_durable", "ChildOutcome"),
    "WaitError": ("sluice_durable", "WaitError"),
    "durable": ("sluice_durable", None),
    "flow": ("sluice_flow", None),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    try:
        module = _importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name != module_name:
            raise
        raise AttributeError(
            f"sluice_task.{name} needs {module_name}.py next to sluice_task.py "
            "(copy it from guest-sdk/python in the Sluice repository)"
        ) from None
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


__all__ += sorted(
    name for name, (module, _) in _LAZY.items() if _importlib_util.find_spec(module) is not None
)
