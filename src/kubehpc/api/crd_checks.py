"""The value checks custom-kind models run on every write, compiled with the store.

pydantic calls these from its core for each quantity, timestamp and name in a custom object (a
Workload's status alone holds a dozen), and the models' CEL-like rules call :func:`rule`: as
interpreted functions each call cost an interpreter frame. They live here, apart from
:mod:`kubehpc.api.crd` (whose models mypyc cannot compile), so that the build compiles them.
pydantic finds no signature on a compiled function and calls it with the value alone, as it
calls these.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
from pydantic_core import PydanticCustomError

from kubehpc.api import names
from kubehpc.api.quantity import parse_quantity

_DATE_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")

# Values found valid lately, per check: the names of queues, flavors and priority classes, and
# the timestamps of one second's writes, come back on write after write.
_SEEN_MAX = 4096
_VALID_SUBDOMAINS: dict[str, None] = {}
_VALID_LABELS: dict[str, None] = {}
_VALID_QUALIFIED: dict[str, None] = {}
_VALID_DATE_TIMES: dict[str, None] = {}


def _remember(seen: dict[str, None], value: str) -> None:
    if len(seen) >= _SEEN_MAX:
        seen.clear()
    seen[value] = None


def _error(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, message)


def rule(ok: bool, message: str) -> None:
    """A CRD ``x-kubernetes-validations`` rule, reported on the object that carries it."""
    if not ok:
        raise _error("rule", message)


def check_quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _error("quantity", "must be a quantity: an integer or a string such as 500m or 8Gi")
    try:
        parse_quantity(value)
    except ValueError as e:
        raise _error("quantity", str(e)) from None
    return value


def check_non_negative_quantity(value: Any) -> Any:
    check_quantity(value)
    if parse_quantity(value).amount < 0:
        raise _error("quantity", f"Invalid value: {value!r}: must be greater than or equal to 0")
    return value


def check_date_time(value: str) -> str:
    if value in _VALID_DATE_TIMES:
        return value
    if not _DATE_TIME_RE.fullmatch(value):
        raise _error("date_time", f'Invalid value: "{value}": must be an RFC 3339 date-time')
    _remember(_VALID_DATE_TIMES, value)
    return value


def _checked_name(value: str, seen: dict[str, None], problems_of: Callable[[str], list[str]]) -> str:
    if value not in seen:
        problems = problems_of(value)
        if problems:
            raise _error("name", f'Invalid value: "{value}": ' + "; ".join(problems))
        _remember(seen, value)
    return value


def check_dns_subdomain(value: str) -> str:
    return _checked_name(value, _VALID_SUBDOMAINS, names.dns1123_subdomain)


def check_dns_label(value: str) -> str:
    return _checked_name(value, _VALID_LABELS, names.dns1123_label)


def check_qualified_name(value: str) -> str:
    return _checked_name(value, _VALID_QUALIFIED, names.qualified_name)


def has_null(value: Any) -> bool:
    """Whether ``value`` may hold a null anywhere: one serialisation and a byte search, a
    tenth of the walk that drops them (a string containing "null" only costs that walk)."""
    try:
        return b"null" in orjson.dumps(value)
    except TypeError:  # not plain JSON: let the walk and the model say what it is
        return True


class RememberedValid:
    """The inputs one frozen model found valid lately, remembered by their JSON with the
    instance made of them, for a ``model_validator(mode="wrap")`` to hand back: a value that
    comes back write after write (a Workload's pod set assignment, the same flavors, usage and
    node for every workload of a shape) is built and checked once, not on every write.

    Only what validated is remembered, so an invalid value is reported every time; the key is
    the exact input (types and key order included), so a hit is an input validated before. The
    instance is shared: a frozen model's is never changed. Bounded: all forgotten at ``limit``."""

    def __init__(self, limit: int = _SEEN_MAX) -> None:
        self._seen: dict[bytes, Any] = {}
        self._limit = limit

    def validate(self, value: Any, handler: Callable[[Any], Any]) -> Any:
        if type(value) is not dict:
            return handler(value)  # an instance already, or not an object: the model says
        try:
            key = orjson.dumps(value)
        except TypeError:  # not plain JSON: the model says what it is
            return handler(value)
        seen = self._seen.get(key)
        if seen is None:
            seen = handler(value)
            if len(self._seen) >= self._limit:
                self._seen.clear()
            self._seen[key] = seen
        return seen

    def __len__(self) -> int:
        return len(self._seen)
