"""JSON <-> Python for the generated models, driven by their type hints.

Owns: the ``UNSET`` sentinel (a field left out of a request, as opposed to ``None``, which
is sent as JSON ``null``), the ``JsonValue`` type, RFC 3339 instants, and ``decode`` /
``encode``, which walk a dataclass's resolved annotations (``Optional``, ``Union``,
``List``, ``Dict``, ``Literal``, ``datetime``, nested models). The generated modules are
therefore plain declarations; every conversion rule lives here, once.

Decoding is lenient where the server may grow: unknown object fields are ignored and an
enum (``Literal``) field keeps a value it does not list. It is strict where the answer
would be unusable: a missing required field or a value of the wrong JSON kind raises
``DecodeError``. Must not: do any I/O.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import re
import sys
import typing
from typing import Any, Dict, List, Tuple, Type, TypeVar, Union

__all__ = [
    "UNSET",
    "Unset",
    "JsonValue",
    "DecodeError",
    "Model",
    "decode",
    "encode",
    "parse_datetime",
    "format_datetime",
]


class Unset:
    """The type of ``UNSET``: a request field that is not sent at all."""

    _instance: "Unset | None" = None

    def __new__(cls) -> "Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __copy__(self) -> "Unset":
        return self

    def __deepcopy__(self, memo: Any) -> "Unset":
        return self


UNSET: Unset = Unset()

#: Any JSON value, as ``json.loads`` returns it.
JsonValue = Union[None, bool, int, float, str, List[Any], Dict[str, Any]]

_NONE_TYPE = type(None)
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


class DecodeError(ValueError):
    """A JSON value does not have the shape its type declares (``path`` says where)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def parse_datetime(text: str) -> _dt.datetime:
    """An RFC 3339 instant (``2026-12-03T13:45:55.120123456Z``) as an aware datetime.

    Works on Python 3.9 and 3.10, whose ``fromisoformat`` reads neither ``Z`` nor more
    than six fractional digits (the extra digits are dropped).
    """
    match = _RFC3339.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not an RFC 3339 instant")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, offset = match.group(7), match.group(8)
    micros = int((fraction[1:] + "000000")[:6]) if fraction else 0
    if offset in ("Z", "z"):
        tz = _dt.timezone.utc
    else:
        sign = -1 if offset[0] == "-" else 1
        tz = _dt.timezone(sign * _dt.timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6])))
    return _dt.datetime(year, month, day, hour, minute, second, micros, tzinfo=tz)


def format_datetime(value: _dt.datetime) -> str:
    """An aware datetime as RFC 3339 in UTC (``2026-12-03T13:45:55.120000Z``)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{value!r} has no time zone; pass an aware datetime (e.g. timezone.utc)")
    utc = value.astimezone(_dt.timezone.utc)
    return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


_HINTS: Dict[type, Dict[str, Any]] = {}


def _hints(cls: type) -> Dict[str, Any]:
    """The resolved annotations of a model, evaluated in its module only (a field named
    like a type cannot shadow that type)."""
    hints = _HINTS.get(cls)
    if hints is None:
        namespace = vars(sys.modules[cls.__module__])
        hints = typing.get_type_hints(cls, globalns=namespace, localns=namespace)
        _HINTS[cls] = hints
    return hints


def _json_name(field: "dataclasses.Field[Any]") -> str:
    return str(field.metadata.get("json", field.name))


def _kind_matches(tp: Any, value: Any) -> bool:
    """Whether ``value``'s JSON kind can be ``tp`` (to pick a member of a union)."""
    origin = typing.get_origin(tp)
    if tp is Any or tp == JsonValue:
        return True
    if origin is Union:
        return any(_kind_matches(arg, value) for arg in typing.get_args(tp))
    if origin is typing.Literal:
        return any(type(arg) is type(value) for arg in typing.get_args(tp))
    if origin in (list, List):
        return isinstance(value, list)
    if origin in (dict, Dict) or dataclasses.is_dataclass(tp):
        return isinstance(value, dict)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp in (str, _dt.datetime):
        return isinstance(value, str)
    if tp is _NONE_TYPE:
        return value is None
    return False


def decode(tp: Any, value: Any, path: str = "$") -> Any:
    """``value`` (parsed JSON) as the Python type ``tp``; raises ``DecodeError``."""
    if tp is Any or tp == JsonValue:
        return value
    origin = typing.get_origin(tp)
    if origin is Union:
        args = [a for a in typing.get_args(tp) if a is not Unset]
        if value is None:
            if _NONE_TYPE in args:
                return None
            raise DecodeError(path, "is null")
        members = [a for a in args if a is not _NONE_TYPE]
        if len(members) == 1:
            return decode(members[0], value, path)
        for member in members:
            if _kind_matches(member, value):
                try:
                    return decode(member, value, path)
                except DecodeError:
                    continue
        raise DecodeError(path, f"{_kind(value)} matches none of {tp}")
    if value is None and tp is not _NONE_TYPE:
        raise DecodeError(path, "is null")
    if origin is typing.Literal:
        if not _kind_matches(tp, value):
            raise DecodeError(path, f"{_kind(value)} is not one of {typing.get_args(tp)}")
        return value  # a value this client does not list yet is kept as it is
    if origin in (list, List):
        if not isinstance(value, list):
            raise DecodeError(path, f"{_kind(value)} is not an array")
        (item,) = typing.get_args(tp) or (Any,)
        return [decode(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            raise DecodeError(path, f"{_kind(value)} is not an object")
        pair = typing.get_args(tp)
        item = pair[1] if len(pair) == 2 else Any
        return {k: decode(item, v, f"{path}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _decode_model(tp, value, path)
    if tp is _dt.datetime:
        if not isinstance(value, str):
            raise DecodeError(path, f"{_kind(value)} is not an instant")
        try:
            return parse_datetime(value)
        except ValueError as e:
            raise DecodeError(path, str(e)) from None
    if tp in (bool, int, float, str, _NONE_TYPE):
        if not _kind_matches(tp, value):
            raise DecodeError(path, f"{_kind(value)} is not {tp.__name__}")
        return value  # an int stays an int where a number is declared
    return value


def _decode_model(cls: type, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise DecodeError(path, f"{_kind(value)} is not an object ({cls.__name__})")
    hints = _hints(cls)
    kwargs: Dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        name = _json_name(field)
        if name in value:
            kwargs[field.name] = decode(hints[field.name], value[name], f"{path}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise DecodeError(path, f"missing field {name!r} ({cls.__name__})")
    return cls(**kwargs)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def encode(value: Any) -> Any:
    """A model (or anything inside one) as JSON-ready Python: ``UNSET`` fields left out,
    instants as RFC 3339 text, enums by value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: Dict[str, Any] = {}
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if item is not UNSET:
                out[_json_name(field)] = encode(item)
        return out
    if isinstance(value, _dt.datetime):
        return format_datetime(value)
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items() if v is not UNSET}
    if isinstance(value, enum.Enum):
        return value.value
    return value


M = TypeVar("M", bound="Model")


class Model:
    """Base of the generated dataclasses: ``from_json`` and ``to_json``."""

    @classmethod
    def from_json(cls: Type[M], data: Any) -> M:
        """This model from parsed JSON (raises ``DecodeError`` when it does not fit)."""
        result: M = decode(cls, data)
        return result

    def to_json(self) -> Dict[str, Any]:
        """This model as JSON-ready Python (``UNSET`` fields left out)."""
        result: Dict[str, Any] = encode(self)
        return result


def model_fields(cls: type) -> List[Tuple[str, str]]:
    """(python name, JSON name) of each field of a generated model."""
    return [(f.name, _json_name(f)) for f in dataclasses.fields(cls)]
