"""Typed reads of the nested fields of a JSON object (a decoded Kubernetes object).

``(obj.get("status") or {}).get("conditions")`` reads well, but compiled with mypyc the inner
value is ``Any``: every ``.get`` on it looks the method up by name and calls it through the
generic protocol, three times the cost of the dictionary lookup mypyc emits for a value typed
``dict`` (about 960 such calls per Job end to end: docs/performance.md, twenty-fourth pass).
These helpers are that expression with a type: ``obj_field(obj, "status")`` is
``obj.get("status") or {}``, a new empty object when the field is absent, null or empty.

A field that holds something other than what its schema says reads as absent: the store validates
every object against its kind's schema first, so only an object nobody validated can hold one,
and its reader's default is then what it gets.
"""

from typing import Any

Obj = dict[str, Any]


def obj_field(obj: Obj, key: str) -> Obj:
    """``obj[key]`` when it is a non-empty object; else a new empty one."""
    value = obj.get(key)
    if value and isinstance(value, dict):
        return value
    return {}


def list_field(obj: Obj, key: str) -> list[Any]:
    """``obj[key]`` when it is a non-empty list; else a new empty one (a tuple, as objects
    built in code may hold, is copied into a list)."""
    value = obj.get(key)
    if value and isinstance(value, list):
        return value
    if value and isinstance(value, tuple):
        return list(value)
    return []


def object_list(obj: Obj, key: str) -> list[Obj]:
    """:func:`list_field` of a field whose items its schema says are objects. The items are
    not checked here: compiled code checks each one as it reads it."""
    return list_field(obj, key)


def metadata(obj: Obj) -> Obj:
    """``obj["metadata"]``, or an empty object."""
    return obj_field(obj, "metadata")


def spec(obj: Obj) -> Obj:
    """``obj["spec"]``, or an empty object."""
    return obj_field(obj, "spec")


def status(obj: Obj) -> Obj:
    """``obj["status"]``, or an empty object."""
    return obj_field(obj, "status")


def labels(obj: Obj) -> Obj:
    """``obj["metadata"]["labels"]``, or an empty object."""
    return obj_field(obj_field(obj, "metadata"), "labels")


def annotations(obj: Obj) -> Obj:
    """``obj["metadata"]["annotations"]``, or an empty object."""
    return obj_field(obj_field(obj, "metadata"), "annotations")


def conditions(obj: Obj) -> list[Obj]:
    """``obj["status"]["conditions"]``, or an empty list."""
    return object_list(obj_field(obj, "status"), "conditions")
