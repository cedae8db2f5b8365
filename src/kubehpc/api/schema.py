"""Validation of built-in kinds against the official Kubernetes JSON schemas.

The schemas come from the ``kubernetes-validate`` package (newest version, strict variant,
``_definitions.json``). Each definition is compiled once, lazily, into a tree of closures; a
typical Pod or Job validates in tens of microseconds. Behaviour follows the API server:

* wrong types, missing required fields and enum violations are errors (``errors.Cause`` with
  the field path, e.g. ``spec.template.spec.containers[0].image``);
* quantities are parsed with :mod:`kubehpc.api.quantity` (``invalid quantity "8Gx"``);
* unknown fields follow ``fieldValidation``: Strict -> an error per field, Warn -> a warning
  ``unknown field "spec.foo"``, Ignore -> nothing. Under Warn and Ignore the unknown fields are
  also removed from the object in place, as the API server's decoder drops them, so what is
  stored and returned holds only fields the schema knows;
* an explicit ``null`` reads as "not set", as Go's JSON decoding does.

The same definitions give strategic-merge-patch metadata (:func:`patch_meta`) and the OpenAPI v3
components served under ``/openapi/v3`` (:func:`openapi_components`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import NoneType
from typing import Any

import orjson

from kubehpc.api.errors import Cause, unknown_field
from kubehpc.api.quantity import parse_quantity
from kubehpc.api.registry import FieldValidation, PatchMeta

Schema = Mapping[str, Any]

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_REF_PREFIX = "#/$defs/"
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_DATE_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_SIMPLE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")


class Collector:
    """Where one validation run puts its errors and warnings."""

    __slots__ = ("causes", "prune", "strict", "warn", "warnings")

    def __init__(self, mode: FieldValidation) -> None:
        self.causes: list[Cause] = []
        self.warnings: list[str] = []
        self.strict = mode == FieldValidation.STRICT
        self.warn = mode == FieldValidation.WARN
        # Strict rejects the object instead, so there is nothing to prune.
        self.prune = not self.strict

    def unknown(self, path: str) -> None:
        if self.strict:
            self.causes.append(unknown_field(path))
        elif self.warn:
            self.warnings.append(f'unknown field "{path}"')

    def type_error(self, path: str, value: Any, expected: str) -> None:
        self.causes.append(
            Cause(path, f"Invalid value: {show_value(value)}: must be {expected}", "FieldValueTypeInvalid")
        )


Check = Callable[[Any, str, Collector], None]


def show_value(value: Any) -> str:
    """A value as JSON for messages (``"8Gx"``, ``true``), shortened when long."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def child_path(path: str, key: str) -> str:
    """``spec`` + ``foo`` -> ``spec.foo``; keys that are not identifiers go in brackets."""
    if _SIMPLE_KEY_RE.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


@functools.cache
def schema_dir() -> Path:
    """The newest strict schema directory shipped by kubernetes-validate."""
    import kubernetes_validate

    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"

    def version(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in p.name[1:].split("-")[0].split("."))

    strict = [p for p in base.iterdir() if p.name.endswith("-local-strict")]
    if not strict:
        raise RuntimeError(f"no strict schemas under {base}")
    return max(strict, key=version)


@functools.cache
def definitions() -> dict[str, Any]:
    defs: dict[str, Any] = orjson.loads((schema_dir() / "_definitions.json").read_bytes())["$defs"]
    return defs


def kubernetes_version() -> str:
    """The Kubernetes version of the schemas in use (``v1.37.0``)."""
    return schema_dir().name.split("-")[0]


# ---------------------------------------------------------------------------------------------
# Compiler


# Definitions whose values repeat from object to object: every pod of a Job, and every Job of
# one template, carries the same PodSpec. A value found valid under Strict is remembered.
REMEMBERED = frozenset({"io.k8s.api.core.v1.PodSpec"})
_REMEMBERED_MAX = 1024


def _remembering(check: Check) -> Check:
    """``check``, skipped for a value whose JSON it has already passed under Strict. Under
    Strict a check only reads the value (nothing is pruned) and its verdict depends on the
    value alone; only a clean pass is remembered, so a bad value is reported (at its own path)
    on every write, and Warn and Ignore, which prune, always run the check."""
    passed: dict[bytes, None] = {}

    def check_remembered(value: Any, path: str, out: Collector) -> None:
        if not out.strict:
            check(value, path, out)
            return
        try:
            key = orjson.dumps(value)
        except TypeError:  # not plain JSON: check it as it is
            check(value, path, out)
            return
        if key in passed:
            return
        found = len(out.causes), len(out.warnings)
        check(value, path, out)
        if (len(out.causes), len(out.warnings)) == found:
            if len(passed) >= _REMEMBERED_MAX:
                passed.clear()
            passed[key] = None

    return check_remembered


class _Compiler:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.compiled: dict[str, Check] = {}

    def definition(self, name: str) -> Check:
        check = self.compiled.get(name)
        if check is None:
            if name not in self.defs:
                raise KeyError(f"no schema definition {name!r}")
            if name == QUANTITY:
                check = _check_quantity
            elif name == INT_OR_STRING:
                check = _check_int_or_string
            else:
                check = self.compile(self.defs[name])
                if name in REMEMBERED:
                    check = _remembering(check)
            self.compiled[name] = check
        return check

    def ref(self, name: str) -> Check:
        """A reference compiled on first use, so recursive definitions terminate."""
        if name in self.compiled:
            return self.compiled[name]
        cell: list[Check] = []

        def check(value: Any, path: str, out: Collector) -> None:
            if not cell:
                cell.append(self.definition(name))
            cell[0](value, path, out)

        return check

    def compile(self, schema: Schema, skip: frozenset[str] = frozenset()) -> Check:
        ref = schema.get("$ref")
        if ref is not None:
            return self.ref(ref.removeprefix(_REF_PREFIX))
        types = schema.get("type")
        kind = next((t for t in types if t != "null"), None) if isinstance(types, list) else types
        if kind == "object":
            return self._object(schema, skip)
        if kind == "array":
            return self._array(schema)
        if kind == "string":
            return self._string(schema)
        if kind == "integer":
            return self._integer(schema)
        if kind == "number":
            return _check_number
        if kind == "boolean":
            return _check_boolean
        return _accept

    def _object(self, schema: Schema, skip: frozenset[str]) -> Check:
        props_schema: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        if not props_schema and isinstance(extra, Mapping):
            return self._map(self.compile(extra))
        if not props_schema and extra is None:
            return _check_free_object  # RawExtension-like: any object, kept as written
        props = {k: self.compile(v) for k, v in props_schema.items() if k not in skip}
        # Per property, the one type its check always passes (a plain string field holding a
        # string): such a value is not checked at all, and no path is built for it.
        passing = {k: _PASSING_TYPE.get(check, NoneType) for k, check in props.items()}
        required = tuple(r for r in schema.get("required") or () if r not in skip)
        enums = {k: tuple(v["enum"]) for k, v in props_schema.items() if "enum" in v and k not in skip}
        closed = extra is False

        def check(value: Any, path: str, out: Collector) -> None:
            if value is None:
                return
            if type(value) is not dict:
                out.type_error(path, value, "an object")
                return
            unknown: list[str] | None = None
            for key, item in value.items():
                prop = props.get(key)
                if prop is not None:
                    if item is not None and type(item) is not passing[key]:
                        prop(item, f"{path}.{key}" if path else key, out)
                elif key in skip:
                    continue
                elif closed:
                    out.unknown(child_path(path, key))
                    unknown = [*(unknown or ()), key]
            if unknown is not None and out.prune:
                for key in unknown:
                    del value[key]
            for key in required:
                if value.get(key) is None:
                    out.causes.append(Cause(child_path(path, key), "Required value", "FieldValueRequired"))
            for key, allowed in enums.items():
                item = value.get(key)
                if item is not None and item not in allowed:
                    shown = ", ".join(f'"{a}"' for a in allowed)
                    out.causes.append(
                        Cause(
                            child_path(path, key),
                            f"Unsupported value: {show_value(item)}: supported values: {shown}",
                            "FieldValueNotSupported",
                        )
                    )

        return check

    @staticmethod
    def _map(values: Check) -> Check:
        passing = _PASSING_TYPE.get(values, NoneType)  # labels and annotations: str

        def check(value: Any, path: str, out: Collector) -> None:
            if value is None:
                return
            if type(value) is not dict:
                out.type_error(path, value, "an object")
                return
            for key, item in value.items():
                if item is not None and type(item) is not passing:
                    values(item, child_path(path, str(key)), out)

        return check

    def _array(self, schema: Schema) -> Check:
        items = self.compile(schema.get("items") or {})
        passing = _PASSING_TYPE.get(items, NoneType)  # a command's arguments: str

        def check(value: Any, path: str, out: Collector) -> None:
            if value is None:
                return
            if type(value) is not list:
                out.type_error(path, value, "a list")
                return
            for i, item in enumerate(value):
                if type(item) is not passing:
                    items(item, f"{path}[{i}]", out)

        return check

    @staticmethod
    def _string(schema: Schema) -> Check:
        fmt = schema.get("format", "")
        if fmt == "byte":
            return _check_base64
        if fmt == "date-time":
            return _check_date_time
        return _check_string

    @staticmethod
    def _integer(schema: Schema) -> Check:
        low, high = _INT_RANGES.get(schema.get("format", ""), _INT_RANGES["int64"])
        expected = f"an integer ({schema.get('format', 'int64')})"

        def check(value: Any, path: str, out: Collector) -> None:
            if type(value) is not int:
                if value is not None:
                    out.type_error(path, value, expected)
            elif not low <= value <= high:
                out.type_error(path, value, expected)

        return check


def _accept(value: Any, path: str, out: Collector) -> None:
    return None


def _check_free_object(value: Any, path: str, out: Collector) -> None:
    if value is not None and type(value) is not dict:
        out.type_error(path, value, "an object")


def _check_string(value: Any, path: str, out: Collector) -> None:
    if type(value) is not str and value is not None:
        out.type_error(path, value, "a string")


def _check_boolean(value: Any, path: str, out: Collector) -> None:
    if type(value) is not bool and value is not None:
        out.type_error(path, value, "a boolean")


def _check_number(value: Any, path: str, out: Collector) -> None:
    if value is not None and (type(value) not in (int, float)):
        out.type_error(path, value, "a number")


def _check_base64(value: Any, path: str, out: Collector) -> None:
    if value is None:
        return
    if type(value) is not str:
        out.type_error(path, value, "a base64 string")
        return
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        out.causes.append(Cause(path, f"Invalid value: {show_value(value)}: illegal base64 data"))


# Date-times found valid lately: the timestamps of one second's writes are the same string.
_VALID_DATE_TIMES: dict[str, None] = {}
_VALID_DATE_TIMES_MAX = 256


def _check_date_time(value: Any, path: str, out: Collector) -> None:
    if value is None:
        return
    if type(value) is not str:
        out.type_error(path, value, "an RFC 3339 date-time")
    elif value not in _VALID_DATE_TIMES:
        if not _DATE_TIME_RE.fullmatch(value):
            out.type_error(path, value, "an RFC 3339 date-time")
            return
        if len(_VALID_DATE_TIMES) >= _VALID_DATE_TIMES_MAX:
            _VALID_DATE_TIMES.clear()
        _VALID_DATE_TIMES[value] = None


def _check_quantity(value: Any, path: str, out: Collector) -> None:
    if value is None:
        return
    try:
        parse_quantity(value)
    except ValueError as e:
        out.causes.append(Cause(path, str(e)))


def _check_int_or_string(value: Any, path: str, out: Collector) -> None:
    if value is not None and type(value) not in (int, str):
        out.type_error(path, value, "an integer or a string")


# Leaf checks and the one type each passes without looking further. A check missing here
# maps to NoneType, which a value handed to it never has (None is not checked).
_PASSING_TYPE: dict[Check, type] = {
    _check_string: str,
    _check_boolean: bool,
    _check_free_object: dict,
    _check_int_or_string: str,
}


@functools.cache
def _compiler() -> _Compiler:
    return _Compiler(definitions())


@functools.cache
def _root_check(name: str, skip: frozenset[str]) -> Check:
    # metadata of the object itself is checked by kubehpc.api.meta for every kind
    return _compiler().compile(definitions()[name], skip=skip | {"metadata"})


def validate_object(
    name: str, obj: Any, mode: FieldValidation, *, skip: frozenset[str] = frozenset()
) -> tuple[list[Cause], list[str]]:
    """Check a whole object of definition ``name``, skipping its top-level ``metadata`` and
    the top-level fields in ``skip``."""
    out = Collector(mode)
    _root_check(name, skip)(obj, "", out)
    return out.causes, out.warnings


def validate_definition(
    name: str, value: Any, path: str, mode: FieldValidation, out: Collector | None = None
) -> tuple[list[Cause], list[str]]:
    """Check ``value`` (found at ``path``) against definition ``name``, e.g. a PodTemplateSpec
    embedded in a custom kind. Appends to ``out`` when given; returns its causes and warnings."""
    out = out if out is not None else Collector(mode)
    _compiler().definition(name)(value, path, out)
    return out.causes, out.warnings


@functools.cache
def kind_roots() -> dict[tuple[str, str, str], str]:
    """Definition name of each (group, version, kind) with a top-level schema."""
    roots: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            roots.setdefault((gvk.get("group", ""), gvk["version"], gvk["kind"]), name)
    return roots


def definition_for_kind(group: str, version: str, kind: str) -> str:
    try:
        return kind_roots()[(group, version, kind)]
    except KeyError:
        raise KeyError(f"no schema for {group}/{version} {kind}") from None


# ---------------------------------------------------------------------------------------------
# Strategic merge patch metadata


class SchemaPatchMeta:
    """:class:`registry.PatchMeta` over one node of the official schema."""

    __slots__ = ("_children", "_schema", "merge_key", "strategy")

    def __init__(self, schema: Schema) -> None:
        self.strategy: str = schema.get("x-kubernetes-patch-strategy", "")
        self.merge_key: str = schema.get("x-kubernetes-patch-merge-key", "")
        self._schema = _resolve(schema)
        self._children: dict[str, SchemaPatchMeta | None] = {}

    def child(self, key: str) -> PatchMeta | None:
        if key not in self._children:
            props = self._schema.get("properties") or {}
            sub = props.get(key)
            if sub is None and isinstance(self._schema.get("additionalProperties"), Mapping):
                sub = self._schema["additionalProperties"]
            self._children[key] = SchemaPatchMeta(sub) if sub is not None else None
        return self._children[key]

    def item(self) -> PatchMeta | None:
        if "\0items" not in self._children:
            items = self._schema.get("items")
            self._children["\0items"] = SchemaPatchMeta(items) if items is not None else None
        return self._children["\0items"]


def _resolve(schema: Schema) -> Schema:
    while "$ref" in schema:
        schema = definitions()[schema["$ref"].removeprefix(_REF_PREFIX)]
    return schema


@functools.cache
def patch_meta(name: str) -> SchemaPatchMeta:
    """Strategic-merge-patch metadata of definition ``name`` (patch strategy and merge keys
    come from the Go struct tags, published as ``x-kubernetes-patch-*``; list types alone do
    not change strategic merge patch, exactly as on the API server)."""
    return SchemaPatchMeta(definitions()[name])


# ---------------------------------------------------------------------------------------------
# OpenAPI v3


def _to_openapi(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_to_openapi(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = "#/components/schemas/" + value.removeprefix(_REF_PREFIX)
        elif key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            out[key] = kinds[0] if len(kinds) == 1 else kinds
        elif key in ("properties", "patternProperties") and isinstance(value, Mapping):
            out[key] = {k: _to_openapi(v) for k, v in value.items()}
        elif key in ("enum", "required", "x-kubernetes-group-version-kind", "x-kubernetes-list-map-keys"):
            out[key] = value
        else:
            out[key] = _to_openapi(value)
    if "$ref" in out and len(out) > 1:
        # OpenAPI 3.0 ignores siblings of $ref; the API server wraps the reference in allOf.
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}]
    return out


@functools.cache
def openapi_components() -> dict[str, Any]:
    """Every definition as an OpenAPI v3 schema (``#/components/schemas/<name>`` references)."""
    return {name: _to_openapi(schema) for name, schema in definitions().items()}


def component_ref(name: str) -> dict[str, str]:
    """A kind's ``VersionSpec.openapi_schema``: a reference into :func:`openapi_components`."""
    return {"$ref": "#/components/schemas/" + name}


def reachable_components(roots: Iterable[str]) -> dict[str, Any]:
    """The components a document for ``roots`` needs (the roots and all they reference)."""
    components = openapi_components()
    seen: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen[name] = components[name]
        todo.extend(_refs(components[name]))
    return seen


def _refs(schema: Any) -> Iterable[str]:
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key == "$ref":
                yield value.removeprefix("#/components/schemas/")
            else:
                yield from _refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _refs(item)
