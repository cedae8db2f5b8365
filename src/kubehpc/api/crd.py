"""Custom kinds from pydantic models: validation, defaulting and CustomResourceDefinitions.

A custom kind (Kueue, Volcano, KubeRay, MPI Operator) is described once, as pydantic models of
its object per served version. This module turns such a model into everything the registry
needs:

* :func:`validator` — a :data:`registry.Validate` that checks an object as the API server checks
  a custom resource against its CRD: types, required fields, enums, bounds, the CRD's CEL rules
  (written as model validators), quantities and names, and embedded built-in definitions (a
  ``PodTemplateSpec`` inside a Workload) against the official Kubernetes schema. Unknown fields
  follow ``fieldValidation``. The object itself is never changed: the model only validates.
* :func:`openapi_schema` — the model as an OpenAPI v3 *structural* schema, with the CRD's
  defaults, for ``/openapi/v3`` and for generated CRDs.
* :func:`defaulter` — a :data:`registry.Default` applying the schema's defaults as the API server
  applies CRD defaults (a default fills a missing field whose parent object exists).
* :func:`custom_resource_definition` — an ``apiextensions.k8s.io/v1`` CustomResourceDefinition
  for a :class:`registry.ResourceType`, which cluster mode installs.

Metadata is not checked here: the store runs :mod:`kubehpc.api.meta` for every kind.
"""

from __future__ import annotations

import copy
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Union

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, GetJsonSchemaHandler, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from kubehpc.api.crd_checks import (
    check_date_time,
    check_dns_label,
    check_dns_subdomain,
    check_non_negative_quantity,
    check_qualified_name,
    check_quantity,
    has_null,
)
from kubehpc.api.errors import Cause, invalid, unknown_field
from kubehpc.api.registry import Default, FieldValidation, Obj, ResourceType, Validate
from kubehpc.api.schema import Collector, definitions, validate_definition

# ---------------------------------------------------------------------------------------------
# Building blocks for models


class CRDModel(BaseModel):
    """Base of every custom-kind model: camelCase aliases, strict JSON types, unknown fields
    reported (the validator decides, per ``fieldValidation``, whether they are errors)."""

    # Only the JSON (camelCase) names are accepted: a snake_case key in a manifest is an unknown field.
    model_config = ConfigDict(
        extra="forbid", strict=True, validate_by_name=False, validate_by_alias=True, frozen=True
    )


@dataclass(frozen=True)
class Embedded:
    """Marks a field holding a built-in Kubernetes type (``io.k8s.api.core.v1.PodTemplateSpec``),
    checked against the official schema and inlined into generated CRDs."""

    definition: str

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {_EMBEDDED: self.definition}


@dataclass(frozen=True, eq=False)  # identity hash: the schema is a dict
class JsonSchemaExtra:
    """Replaces a field's schema (for types pydantic cannot describe structurally)."""

    schema: Mapping[str, Any]

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return dict(self.schema)


_EMBEDDED = "x-kubehpc-definition"

# The pattern upstream CRDs put on quantities (controller-gen's, for resource.Quantity).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|"
    r"(\.[0-9]+))))?$"
)
_QUANTITY_SCHEMA = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": QUANTITY_PATTERN,
    "x-kubernetes-int-or-string": True,
}
DNS_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

# The value checks themselves are compiled: kubehpc.api.crd_checks.

# A resource.Quantity: an integer or a string ("500m", "8Gi"), parsed exactly.
Quantity = Annotated[Any, AfterValidator(check_quantity), JsonSchemaExtra(_QUANTITY_SCHEMA)]
# A quantity that may not be negative (quotas, limits, weights).
NonNegativeQuantity = Annotated[
    Any, AfterValidator(check_non_negative_quantity), JsonSchemaExtra(_QUANTITY_SCHEMA)
]
# A metav1.Time: an RFC 3339 date-time string.
DateTime = Annotated[
    str, AfterValidator(check_date_time), JsonSchemaExtra({"type": "string", "format": "date-time"})
]
# Names of other objects, as the upstream CRDs constrain them.
DNSSubdomain = Annotated[
    str,
    AfterValidator(check_dns_subdomain),
    JsonSchemaExtra({"type": "string", "maxLength": 253, "pattern": DNS_SUBDOMAIN_PATTERN}),
]
DNSLabel = Annotated[
    str,
    AfterValidator(check_dns_label),
    JsonSchemaExtra({"type": "string", "maxLength": 63, "pattern": DNS_LABEL_PATTERN}),
]
QualifiedName = Annotated[
    str,
    AfterValidator(check_qualified_name),
    JsonSchemaExtra({"type": "string", "maxLength": 316}),
]


# ---------------------------------------------------------------------------------------------
# Validation


def validator(kind: str, group: str, model: type[BaseModel]) -> Validate:
    """A :data:`registry.Validate` checking objects against ``model`` (metadata excluded)."""

    def validate(obj: Obj, mode: FieldValidation, /, *, unchanged: frozenset[str] = frozenset()) -> list[str]:
        causes, warnings = check_model(model, obj, mode, unchanged=unchanged)
        if causes:
            meta = obj.get("metadata")
            name = str(meta.get("name") or meta.get("generateName") or "") if isinstance(meta, dict) else ""
            raise invalid(kind, name, causes, group=group)
        return warnings

    return validate


def check_model(
    model: type[BaseModel],
    obj: Obj,
    mode: FieldValidation = FieldValidation.STRICT,
    *,
    unchanged: frozenset[str] = frozenset(),
) -> tuple[list[Cause], list[str]]:
    """Problems of ``obj`` against ``model``: (causes, warnings). Unknown fields are causes
    under Strict, warnings under Warn and nothing under Ignore; under Warn and Ignore they are
    also pruned from ``obj``, as the API server prunes what a structural schema does not know.
    The embedded built-in definitions under the top-level fields in ``unchanged`` (the stored
    version's own) are not walked again."""
    body = {k: v for k, v in obj.items() if k != "metadata"}
    if has_null(body):
        body = _drop_nulls(body)
    causes, unknown, unknown_locs = _run(model, body)
    if unknown_locs:
        # An unknown field stops pydantic from running the checks of the objects around it (the
        # CEL rules); check again without the unknown fields so those still apply under Warn.
        pruned = copy.deepcopy(body)
        for loc in unknown_locs:
            _delete(pruned, loc)
        causes, _, _ = _run(model, pruned)
    warnings: list[str] = []
    if mode == FieldValidation.STRICT:
        causes = [unknown_field(p) for p in unknown] + causes
    elif mode == FieldValidation.WARN:
        warnings = [f'unknown field "{p}"' for p in unknown]
    if mode != FieldValidation.STRICT:
        # Locations in ``body`` are locations in ``obj``: dropping nulls keeps keys and indexes.
        for loc in unknown_locs:
            _delete(obj, loc)
    # Embedded built-in definitions are checked on the object itself, so that their own unknown
    # fields are pruned from what is stored too.
    view = {k: v for k, v in obj.items() if k != "metadata" and k not in unchanged}
    if mode == FieldValidation.STRICT:
        embedded_causes, embedded_warnings = _embedded_causes_remembered(model, view)
    else:
        embedded_causes, embedded_warnings = _embedded_causes(model, view, "", mode)
    return causes + embedded_causes, warnings + embedded_warnings


# (model, top-level field, its JSON) -> (causes, warnings) of the embedded built-in definitions
# under it. Under Strict nothing is pruned, so the answer is a function of these alone: an update
# that leaves the pod templates as they were does not walk them again.
_EMBEDDED_SEEN: dict[tuple[type[BaseModel], str, bytes], tuple[tuple[Cause, ...], tuple[str, ...]]] = {}
_EMBEDDED_SEEN_MAX = 1024


def _embedded_causes_remembered(model: type[BaseModel], view: Obj) -> tuple[list[Cause], list[str]]:
    causes: list[Cause] = []
    warnings: list[str] = []
    for key, child in view.items():
        if not _may_embed(model, key):
            continue  # nothing under this field can be an embedded definition (a status)
        try:
            memo_key = (model, key, orjson.dumps(child)) if isinstance(child, dict | list) else None
        except TypeError:  # not plain JSON: check it as it is
            memo_key = None
        if memo_key is None:
            found, said = _embedded_causes(model, {key: child}, "", FieldValidation.STRICT)
            causes += found
            warnings += said
            continue
        seen = _EMBEDDED_SEEN.get(memo_key)
        if seen is None:
            found, said = _embedded_causes(model, {key: child}, "", FieldValidation.STRICT)
            seen = (tuple(found), tuple(said))
            if len(_EMBEDDED_SEEN) >= _EMBEDDED_SEEN_MAX:
                _EMBEDDED_SEEN.clear()
            _EMBEDDED_SEEN[memo_key] = seen
        causes += seen[0]
        warnings += seen[1]
    return causes, warnings


@functools.lru_cache(maxsize=1024)
def _may_embed(model: type[BaseModel], key: str) -> bool:
    """Whether the top-level field ``key`` of ``model`` can hold an embedded built-in
    definition (a fixed answer per model and key, asked on every write)."""
    info = _field_by_key(model, key)
    return info is not None and (_embedded_of(info) is not None or _can_embed(info.annotation))


def _run(model: type[BaseModel], body: Obj) -> tuple[list[Cause], list[str], list[tuple[Any, ...]]]:
    try:
        model.model_validate(body)
    except ValidationError as e:
        causes: list[Cause] = []
        unknown: list[str] = []
        unknown_locs: list[tuple[Any, ...]] = []
        for err in e.errors(include_url=False):
            path = field_path(model, err["loc"])
            if err["type"] == "extra_forbidden":
                unknown.append(path)
                unknown_locs.append(err["loc"])
            else:
                causes.append(_cause(path, err))
        return causes, unknown, unknown_locs
    return [], [], []


def _drop_nulls(value: Any) -> Any:
    """An explicit null reads as "not set", as Go's JSON decoding (and CRD pruning) treats it."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _delete(body: Any, loc: tuple[Any, ...]) -> None:
    for key in loc[:-1]:
        body = body[key]
    body.pop(loc[-1], None)


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _cause(path: str, err: Any) -> Cause:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return Cause(path, "Required value", "FieldValueRequired")
    if kind == "literal_error":
        return Cause(
            path,
            f"Unsupported value: {_show(value)}: supported values: {ctx.get('expected', '')}",
            "FieldValueNotSupported",
        )
    if kind == "too_long" and isinstance(value, list | dict):
        return Cause(
            path, f"Too many: {len(value)}: must have at most {ctx['max_length']} items", "FieldValueTooMany"
        )
    if kind == "too_long":
        return Cause(path, f"Too long: may not be more than {ctx['max_length']} bytes", "FieldValueTooLong")
    if kind == "too_short":
        return Cause(path, f"Invalid value: {len(value)}: must have at least {ctx['min_length']} items")
    if kind == "string_too_long":
        return Cause(path, f"Too long: may not be more than {ctx['max_length']} bytes", "FieldValueTooLong")
    if kind == "string_too_short":
        return Cause(path, f"Invalid value: {_show(value)}: must be at least {ctx['min_length']} characters")
    if kind in ("greater_than_equal", "less_than_equal"):
        bound = "greater" if kind == "greater_than_equal" else "less"
        limit = ctx.get("ge", ctx.get("le"))
        return Cause(path, f"Invalid value: {_show(value)}: must be {bound} than or equal to {limit}")
    if kind == "string_pattern_mismatch":
        return Cause(path, f"Invalid value: {_show(value)}: should match '{ctx.get('pattern', '')}'")
    if kind.endswith("_type") or kind in ("model_type", "dict_type", "list_type"):
        expected = {
            "int_type": "an integer",
            "string_type": "a string",
            "bool_type": "a boolean",
            "float_type": "a number",
            "list_type": "a list",
            "dict_type": "an object",
            "model_type": "an object",
        }.get(kind, kind.removesuffix("_type"))
        return Cause(path, f"Invalid value: {_show(value)}: must be {expected}", "FieldValueTypeInvalid")
    return Cause(path, str(err["msg"]).removeprefix("Value error, "))


# ---------------------------------------------------------------------------------------------
# Walking a model's types alongside an object


def _unwrap(tp: Any) -> Any:
    """The type inside ``Annotated[...]`` and ``X | None``."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if key == (info.alias or name):
            return info
    return None


def field_path(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a Kubernetes field path, map keys in brackets:
    ``spec.resourceGroups[0].flavors[1].resources[0].nominalQuota``, ``spec.nodeLabels[zone]``."""
    tp: Any = model
    path = ""
    for key in loc:
        if key == "[key]":
            continue
        tp = _unwrap(tp)
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            info = _field_by_key(tp, str(key))
            path = f"{path}.{key}" if path else str(key)
            tp = info.annotation if info is not None else Any
        elif origin is list or isinstance(key, int):
            path += f"[{key}]"
            args = typing.get_args(tp)
            tp = args[0] if args else Any
        elif origin is dict:
            path += f"[{key}]"
            tp = typing.get_args(tp)[1]
        else:
            path = f"{path}.{key}" if path else str(key)
            tp = Any
    return path


def _embedded_of(info: Any) -> str | None:
    for meta in getattr(info, "metadata", ()):
        if isinstance(meta, Embedded):
            return meta.definition
    return None


def _embedded_causes(tp: Any, value: Any, path: str, mode: FieldValidation) -> tuple[list[Cause], list[str]]:
    """Check every embedded built-in definition found under ``value`` against the official
    schema (causes, warnings)."""
    out = Collector(mode)
    _walk_embedded(tp, value, path, mode, out)
    return out.causes, out.warnings


# type -> whether a value of it can hold an embedded built-in definition, decided once per type
_CAN_EMBED: dict[Any, bool] = {}
_DECIDING: set[Any] = set()


def _can_embed(tp: Any) -> bool:
    """Whether :func:`_walk_embedded` could find an embedded definition under a value of type
    ``tp``; False lets it skip the value (a Workload's status, a queue's quotas) unwalked.
    Whenever unsure (a recursive type, an unhashable annotation) the answer is True."""
    tp = _unwrap(tp)
    try:
        known = _CAN_EMBED.get(tp)
    except TypeError:
        return True
    if known is not None:
        return known
    if tp in _DECIDING:
        return True  # a recursive type: walk it rather than reason about the cycle
    _DECIDING.add(tp)
    try:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            found = any(
                _embedded_of(info) is not None or _can_embed(info.annotation)
                for info in tp.model_fields.values()
            )
        elif typing.get_origin(tp) is list:
            found = _can_embed(typing.get_args(tp)[0])
        elif typing.get_origin(tp) is dict:
            found = _can_embed(typing.get_args(tp)[1])
        else:
            found = False  # _walk_embedded looks no further into anything else
    finally:
        _DECIDING.discard(tp)
    # A False rests only on Falses, so it is exact; a True may rest on a cycle's provisional
    # True above, which at worst walks a value for nothing.
    _CAN_EMBED[tp] = found
    return found


def _walk_embedded(tp: Any, value: Any, path: str, mode: FieldValidation, out: Collector) -> None:
    step = _walk_step(tp)
    if step is None:
        return
    if isinstance(step, dict):
        if not isinstance(value, dict):
            return
        for key, child in value.items():
            field = step.get(key)
            if field is None:
                continue  # not a field, or none that can hold an embedded definition
            definition, child_tp = field
            child_path = f"{path}.{key}" if path else key
            if definition is not None:
                validate_definition(definition, child, child_path, mode, out)
            else:
                _walk_embedded(child_tp, child, child_path, mode, out)
    elif step[0] == "list":
        if isinstance(value, list):
            for i, child in enumerate(value):
                _walk_embedded(step[1], child, f"{path}[{i}]", mode, out)
    elif isinstance(value, dict):
        for key, child in value.items():
            _walk_embedded(step[1], child, f"{path}[{key}]", mode, out)


# What _walk_embedded does with a value of a type, decided once per type: None (nothing
# embedded can be under it), for a model {key: (embedded definition or None, field type)} over
# the fields that can hold one, for a list or a dict ("list" | "dict", item type). The walk ran
# per Workload create, and working this out from the type every time cost four fifths of the
# validation of a Workload whose pod template had not been seen yet (docs/performance.md).
_WalkStep = dict[str, tuple[str | None, Any]] | tuple[str, Any] | None
# Keyed by the type's id, the type kept in the entry (so its id is never reused meanwhile):
# hashing a typing generic such as list[PodSet] runs Python code, and some cannot be hashed.
_WALK_STEPS: dict[int, tuple[Any, _WalkStep]] = {}


def _walk_step(tp: Any) -> _WalkStep:
    known = _WALK_STEPS.get(id(tp))
    if known is not None:
        return known[1]
    step = _plan_step(tp)
    _WALK_STEPS[id(tp)] = (tp, step)
    return step


def _plan_step(tp: Any) -> _WalkStep:
    tp = _unwrap(tp)
    if not _can_embed(tp):
        return None
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        fields: dict[str, tuple[str | None, Any]] = {}
        for name, info in tp.model_fields.items():
            definition = _embedded_of(info)
            if definition is not None or _can_embed(info.annotation):
                fields[info.alias or name] = (definition, info.annotation)
        return fields
    if typing.get_origin(tp) is list:
        return ("list", typing.get_args(tp)[0])
    if typing.get_origin(tp) is dict:
        return ("dict", typing.get_args(tp)[1])
    return None


# ---------------------------------------------------------------------------------------------
# OpenAPI v3 structural schema


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model`` as an OpenAPI v3 structural schema: no ``$ref``, a type at every node, CRD
    defaults kept, embedded built-in definitions inlined from the official schema."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = _structural(raw, defs)
    props = schema.setdefault("properties", {})
    props["metadata"] = {"type": "object"}
    return schema


_DROP = {"title", "additionalProperties", "$defs"}


def _structural(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_structural(n, defs) for n in node]
    if not isinstance(node, Mapping):
        return node
    if "$ref" in node:
        target = _structural(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **_structural(extra, defs)}
    if _EMBEDDED in node:
        return builtin_definition_schema(node[_EMBEDDED])
    any_of = node.get("anyOf")
    if any_of and not node.get("x-kubernetes-int-or-string"):
        non_null = [s for s in any_of if s.get("type") != "null"]
        if len(non_null) == 1:
            merged = {**{k: v for k, v in node.items() if k != "anyOf"}, **non_null[0]}
            return _structural(merged, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP and not (key == "additionalProperties" and isinstance(value, Mapping)):
            continue
        if key == "default" and value is None:
            continue
        if key == "properties":
            out[key] = {k: _structural(v, defs) for k, v in value.items()}
        elif key in ("enum", "required", "default", "x-kubernetes-list-map-keys", "const"):
            out[key] = value
        else:
            out[key] = _structural(value, defs)
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if "properties" in out:
        out["type"] = "object"
    return out


def builtin_definition_schema(name: str) -> dict[str, Any]:
    """An official Kubernetes definition inlined as a structural schema (as controller-gen
    embeds a PodTemplateSpec into a CRD)."""
    schema: dict[str, Any] = _inline(definitions(), definitions()[name], ())
    return schema


# The vendor extensions a CRD schema may carry (patch strategies, unions and group-version-kind
# markers of the official definitions are not among them).
_CRD_EXTENSIONS = {
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
}
_INT_OR_STRING_DEFS = (
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
)


def _inline(defs: Mapping[str, Any], node: Any, stack: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(defs, n, stack) for n in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name in _INT_OR_STRING_DEFS:
            return {"x-kubernetes-int-or-string": True}
        if name in stack:  # recursive definitions (none in pod specs) stay open
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return _inline(defs, defs[name], (*stack, name))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (
            key in ("description", "uniqueItems")
            or (key.startswith("x-kubernetes-") and key not in _CRD_EXTENSIONS)
            or (key == "additionalProperties" and not isinstance(value, Mapping))
        ):
            continue
        if key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            out[key] = kinds[0] if len(kinds) == 1 else kinds
        elif key == "properties":
            out[key] = {k: _inline(defs, v, stack) for k, v in value.items()}
        elif key in ("enum", "required", "x-kubernetes-list-map-keys"):
            out[key] = value
        else:
            out[key] = _inline(defs, value, stack)
    if "properties" in out:
        out["type"] = "object"
    return out


# ---------------------------------------------------------------------------------------------
# Defaulting


def defaulter(schema: Mapping[str, Any]) -> Default:
    """Apply ``schema``'s defaults in place, as the API server defaults custom resources."""
    plan = _defaults_of(schema)

    def default(obj: Obj) -> None:
        if plan is not None:
            _apply_defaults(plan, obj)

    return default


def apply_defaults(schema: Mapping[str, Any], value: Any) -> None:
    """Fill in the defaults ``schema`` declares, in place, wherever ``value`` lacks them."""
    defaulter(schema)(value)


@dataclass(frozen=True)
class _Defaults:
    """The defaults of one schema node, and the children that hold some further down: a walk
    visits only those (a Workload's pod templates declare a handful among hundreds of fields)."""

    here: tuple[tuple[str, Any], ...]
    children: tuple[tuple[str, _Defaults], ...]
    extra: _Defaults | None
    items: _Defaults | None


def _defaults_of(schema: Mapping[str, Any]) -> _Defaults | None:
    """The defaults under ``schema`` (None: none at all), worked out once per schema node."""
    memo: dict[int, tuple[Mapping[str, Any], _Defaults | None]] = {}

    def compile_(node: Mapping[str, Any]) -> _Defaults | None:
        seen = memo.get(id(node))
        if seen is not None:
            return seen[1]
        here: list[tuple[str, Any]] = []
        children: list[tuple[str, _Defaults]] = []
        for key, sub in (node.get("properties") or {}).items():
            if "default" in sub:
                here.append((key, sub["default"]))
            child = compile_(sub) if key != "metadata" else None
            if child is not None:
                children.append((key, child))
        extra_schema, items_schema = node.get("additionalProperties"), node.get("items")
        extra = compile_(extra_schema) if isinstance(extra_schema, Mapping) else None
        items = compile_(items_schema) if isinstance(items_schema, Mapping) else None
        plan = None
        if here or children or extra is not None or items is not None:
            plan = _Defaults(tuple(here), tuple(children), extra, items)
        memo[id(node)] = (node, plan)  # the node is kept, so its id is not reused meanwhile
        return plan

    return compile_(schema)


def _apply_defaults(plan: _Defaults, value: Any) -> None:
    if isinstance(value, dict):
        for key, default in plan.here:
            if key not in value:
                value[key] = copy.deepcopy(default)
        for key, child in plan.children:
            if key in value:
                _apply_defaults(child, value[key])
        if plan.extra is not None:
            for item in value.values():
                _apply_defaults(plan.extra, item)
    elif isinstance(value, list) and plan.items is not None:
        for item in value:
            _apply_defaults(plan.items, item)


# ---------------------------------------------------------------------------------------------
# CustomResourceDefinition


def custom_resource_definition(rt: ResourceType) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition serving ``rt``."""
    names_: dict[str, Any] = {
        "kind": rt.kind,
        "listKind": rt.list_kind,
        "plural": rt.plural,
        "singular": rt.singular,
    }
    if rt.short_names:
        names_["shortNames"] = list(rt.short_names)
    if rt.categories:
        names_["categories"] = list(rt.categories)
    versions = []
    for v in rt.versions:
        if v.openapi_schema is None:
            raise ValueError(f"{rt.kind} {v.name} has no OpenAPI schema")
        version: dict[str, Any] = {
            "name": v.name,
            "served": True,
            "storage": v.name == rt.storage_version,
            "schema": {"openAPIV3Schema": copy.deepcopy(dict(v.openapi_schema))},
        }
        if rt.status_subresource:
            version["subresources"] = {"status": {}}
        columns = [
            {
                k: val
                for k, val in (
                    ("name", c.name),
                    ("type", c.type),
                    ("jsonPath", c.json_path),
                    ("priority", c.priority),
                    ("description", c.description),
                    ("format", c.format),
                )
                if val
            }
            for c in v.printer_columns
            if c.json_path
        ]
        if columns:
            version["additionalPrinterColumns"] = columns
        versions.append(version)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{rt.plural}.{rt.group}"},
        "spec": {
            "group": rt.group,
            "names": names_,
            "scope": "Namespaced" if rt.namespaced else "Cluster",
            "versions": versions,
        },
    }
