"""kubehpc's models of custom kinds, held side by side with the upstream CRDs in shared/crds.

For every registered custom kind that has an upstream CRD (Kueue now; Volcano, KubeRay and the
MPI Operator later, with no change here):

* every sample manifest of that kind validates under fieldValidation=Strict;
* objects generated from the upstream CRD's openAPIV3Schema get the same verdict from kubehpc as
  from the CRD (schema plus its CEL rules, evaluated with a CEL interpreter): everything the CRD
  accepts, kubehpc accepts, and what its CEL rules reject, kubehpc rejects;
* an unknown field injected at any depth is rejected by both, kubehpc naming its path;
* the CRD kubehpc generates declares the same group, names, scope, versions and columns as the
  upstream one, and a schema whose property tree covers the upstream tree.

The generator narrows the CRD schema in three places where kubehpc is deliberately as strict as
the controllers' Go types (which cannot decode such values), not as loose as the CRD's regex:
quantities must parse as Kubernetes quantities and be non-negative, and integers must fit their
declared int32/int64 format.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import pytest
import yaml
from celpy import celtypes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubehpc.api.crd import apply_defaults, custom_resource_definition
from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import FieldValidation, ResourceType
from kubehpc.api.schema import definitions, kubernetes_version

# Collection needs the reference data's location before fixtures run; tests that use it also
# take the ``shared_dir`` fixture, which fails loudly when the data is missing.
SHARED = Path(__file__).resolve().parents[2].parent / "shared"
REGISTRY = build_registry()
EXAMPLES = 40
# Strategies for whole Workloads (with pod templates) have long reprs; that is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
UNKNOWN = "kubehpcUnknownField"
# Non-negative, and parsable by Kubernetes' quantity parser (the CRD's regex also allows "1e2.5").
QUANTITY_RE = r"\A\+?(([0-9]{1,6}(\.[0-9]{0,3})?)|(\.[0-9]{1,3}))(([KMGTPE]i)|[numkMGTPE]|([eE]\+?[0-9]))?\Z"


def python_pattern(pattern: str) -> str:
    """Go's RE2 takes ``^(?i)...``; Python wants global flags first."""
    return "(?i)^" + pattern[5:] if pattern.startswith("^(?i)") else pattern


INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def crd_path(rt: ResourceType) -> Path:
    return SHARED / "crds" / f"{rt.group}_{rt.plural}.yaml"


CUSTOM_KINDS = sorted((rt for rt in REGISTRY if crd_path(rt).is_file()), key=lambda rt: rt.key)
# Versions served beyond the upstream CRD file: MPIJob v1 is the older MPI Operator's API, whose
# CRD is not in shared/crds (the samples and the seed use it).
EXTRA_VERSIONS = {("MPIJob", "v1")}
KIND_VERSIONS = [
    (rt, v.name) for rt in CUSTOM_KINDS for v in rt.versions if (rt.kind, v.name) not in EXTRA_VERSIONS
]


def _kind_id(rt: ResourceType) -> str:
    return f"{rt.kind}.{rt.group}"


def _version_id(param: tuple[ResourceType, str]) -> str:
    return f"{param[0].kind}.{param[0].group}/{param[1]}"


# Pod spec fields an upstream CRD inlines from an older Kubernetes that kubehpc's Kubernetes
# definitions (api/schema.py: the newest kubernetes-validate ships) no longer have. kubehpc checks
# pod templates against those definitions, as a current API server checks the pods an operator
# creates from them, so such a field could not reach a pod: the comparisons leave it out.
RETIRED_POD_SPEC_FIELDS = {
    # The MPI Operator's CRD is generated against Kubernetes 1.35, where PodSpec.workloadRef was
    # alpha; 1.36 removed it (PodSpec.schedulingGroup took its place).
    "workloadRef": "removed from PodSpec in Kubernetes 1.36",
}


def _without_retired_pod_spec_fields(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _without_retired_pod_spec_fields(item)
        return
    if not isinstance(node, dict):
        return
    props = node.get("properties")
    if isinstance(props, dict) and "containers" in props:  # a PodSpec
        for name in RETIRED_POD_SPEC_FIELDS:
            props.pop(name, None)
    for value in node.values():
        _without_retired_pod_spec_fields(value)


def test_the_retired_pod_spec_fields_are_gone_from_kubehpcs_kubernetes_definitions() -> None:
    """The exception above holds only while the definitions kubehpc uses lack these fields."""
    pod_spec = definitions()["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert not set(RETIRED_POD_SPEC_FIELDS) & set(pod_spec), kubernetes_version()


@functools.cache
def upstream_crd(rt: ResourceType) -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(crd_path(rt).read_text())
    _without_retired_pod_spec_fields(crd)
    return crd


def upstream_schema(rt: ResourceType, version: str) -> dict[str, Any]:
    for v in upstream_crd(rt)["spec"]["versions"]:
        if v["name"] == version:
            schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(f"upstream CRD of {rt.kind} does not serve {version}")


# --- the CRD's verdict ---------------------------------------------------------------------------


def json_schema(node: Any) -> Any:
    """The CRD schema as plain JSON Schema, closed where Kubernetes prunes or rejects unknown
    fields, and narrowed where kubehpc is as strict as the Go types (see the module doc)."""
    if isinstance(node, list):
        return [json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (
            key == "description"
            or key.startswith("x-kubernetes")
            or (key == "format" and value != "date-time")
        ):
            continue
        if key == "properties":
            out[key] = {k: json_schema(v) for k, v in value.items()}
        elif key in ("enum", "required", "default"):
            out[key] = value
        elif key == "pattern":
            out[key] = python_pattern(value)
        else:
            out[key] = json_schema(value)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("pattern", None)
        out["anyOf"] = [
            {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
            {"type": "string", "pattern": QUANTITY_RE if "pattern" in node else r"\A[a-z0-9]{1,8}\Z"},
        ]
    if node.get("type") == "integer":
        low, high = INT_BOUNDS.get(node.get("format", ""), INT_BOUNDS["int64"])
        out["minimum"] = max(out.get("minimum", low), low)
        out["maximum"] = min(out.get("maximum", high), high)
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


_CEL = celpy.Environment()
# The first compilation raises the recursion limit; do it at import, not inside a Hypothesis run.
_CEL.compile("true")


@functools.cache
def _cel_program(rule: str) -> Any:
    return _CEL.program(_CEL.compile(rule))


def cel_failures(schema: dict[str, Any], value: Any, path: str = "") -> Iterator[str]:
    """The CRD's ``x-kubernetes-validations`` rules that ``value`` breaks (creation rules only:
    transition rules need the old object)."""
    for r in schema.get("x-kubernetes-validations") or ():
        if "oldSelf" in r["rule"]:
            continue
        try:
            result = _cel_program(r["rule"]).evaluate({"self": celpy.json_to_cel(value)})
        except Exception:  # an evaluation error rejects the object, as on the API server
            result = None
        if not (isinstance(result, celtypes.BoolType) and bool(result)):
            yield f"{path}: {r.get('message', r['rule'])}"
    if isinstance(value, dict):
        for key, child in value.items():
            sub = (schema.get("properties") or {}).get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None and key != "metadata":
                yield from cel_failures(sub, child, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, child in enumerate(value):
            yield from cel_failures(schema["items"], child, f"{path}[{i}]")


# --- generating objects from the CRD -------------------------------------------------------------

MAX_OPTIONAL_DEPTH = 9
_TEXT = st.text(alphabet="abcxyz019-", min_size=1, max_size=8)
_TIMES = st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1)).map(
    lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
)


def _string(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    low, high = schema.get("minLength", 0), schema.get("maxLength", 10**9)
    if schema.get("format") == "date-time":
        return _TIMES
    if "pattern" in schema:
        return st.from_regex(python_pattern(schema["pattern"]), fullmatch=True).filter(
            lambda s: low <= len(s) <= min(high, 80)
        )
    return st.text(alphabet="abcxyz019-./", min_size=low, max_size=max(low, min(high, 10)))


def _list(schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    low = schema.get("minItems", 0)
    high = max(low, min(schema.get("maxItems", 3), 3))
    items = schema.get("items") or {}
    keys = items.get("required") or ()
    unique_by = None
    if schema.get("x-kubernetes-list-type") == "map":
        map_keys = schema.get("x-kubernetes-list-map-keys") or keys

        def unique_by(x: Any) -> str:
            return json.dumps([x.get(k) for k in map_keys])

    elif schema.get("x-kubernetes-list-type") == "set":

        def unique_by(x: Any) -> str:
            return json.dumps(x, sort_keys=True)

    return st.lists(strategy(items, depth + 1), min_size=low, max_size=high, unique_by=unique_by)


def strategy(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values the CRD schema accepts: required fields always, optional ones at random (down to
    a depth), lists of up to three items, enums, bounds and patterns respected."""
    if schema.get("x-kubernetes-int-or-string"):
        if "pattern" in schema:
            return st.one_of(st.integers(0, 10**6), st.from_regex(QUANTITY_RE, fullmatch=True))
        return st.one_of(st.integers(0, 65535), st.from_regex(r"\A[a-z0-9]{1,8}\Z", fullmatch=True))
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties")
        if props:
            required = set(schema.get("required") or ())
            optional = (
                {} if depth >= MAX_OPTIONAL_DEPTH else {k: v for k, v in props.items() if k not in required}
            )
            return st.fixed_dictionaries(
                {k: strategy(props[k], depth + 1) for k in sorted(required)},
                optional={k: strategy(v, depth + 1) for k, v in optional.items()},
            )
        if isinstance(schema.get("additionalProperties"), dict):
            return st.dictionaries(_TEXT, strategy(schema["additionalProperties"], depth + 1), max_size=2)
        return st.just({})
    if kind == "array":
        return _list(schema, depth)
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        low, high = INT_BOUNDS.get(schema.get("format", ""), INT_BOUNDS["int64"])
        low, high = max(schema.get("minimum", -1000), low), min(schema.get("maximum", 1000), high)
        return st.integers(low, max(low, high))
    if kind == "boolean":
        return st.booleans()
    if kind == "number":
        return st.integers(0, 1000)
    return st.just({})


@functools.cache
def object_strategy(rt: ResourceType, version: str) -> st.SearchStrategy[dict[str, Any]]:
    schema = copy.deepcopy(upstream_schema(rt, version))
    props = schema["properties"]
    props.pop("metadata", None)
    for key in ("apiVersion", "kind"):
        props.pop(key, None)
        if key in (schema.get("required") or ()):
            schema["required"].remove(key)
    meta = {"name": "generated"}
    if rt.namespaced:
        meta["namespace"] = "default"
    return strategy(schema).map(
        lambda body: {"apiVersion": rt.api_version(version), "kind": rt.kind, "metadata": dict(meta), **body}
    )


def crd_verdict(rt: ResourceType, version: str, obj: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Why the upstream CRD rejects ``obj`` after applying its defaults: (schema errors, broken
    CEL rules); both empty when it accepts the object."""
    schema = upstream_schema(rt, version)
    defaulted = copy.deepcopy(obj)
    apply_defaults(schema, defaulted)
    validator = jsonschema.Draft7Validator(json_schema(schema))
    return [e.message for e in validator.iter_errors(defaulted)], list(cel_failures(schema, defaulted))


def kubehpc_verdict(rt: ResourceType, version: str, obj: dict[str, Any]) -> list[str]:
    spec = rt.version(version)
    defaulted = copy.deepcopy(obj)
    if spec.default is not None:
        spec.default(defaulted)
    try:
        spec.validate(defaulted, FieldValidation.STRICT)
    except Invalid as e:
        return [f"{c.field}: {c.message}" for c in e.causes]
    return []


# --- the tests -----------------------------------------------------------------------------------


def test_every_kueue_kind_is_held_against_its_upstream_crd(shared_dir: Path) -> None:
    kinds = {rt.kind for rt in CUSTOM_KINDS if rt.group == "kueue.x-k8s.io"}
    upstream = {
        yaml.safe_load(p.read_text())["spec"]["names"]["kind"] for p in shared_dir.glob("crds/kueue*.yaml")
    }
    assert kinds == upstream


def _samples() -> list[tuple[str, int]]:
    found = []
    for path in sorted((SHARED / "samples" / "manifests").rglob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if isinstance(doc, dict) and any(
                rt.kind == doc.get("kind") and doc.get("apiVersion", "").startswith(rt.group + "/")
                for rt in CUSTOM_KINDS
            ):
                found.append((str(path.relative_to(SHARED)), i))
    return found


@pytest.mark.parametrize(("sample", "index"), _samples())
def test_sample_manifest_validates_under_strict(shared_dir: Path, sample: str, index: int) -> None:
    doc = list(yaml.safe_load_all((shared_dir / sample).read_text()))[index]
    rt, spec = REGISTRY.for_kind(doc["apiVersion"], doc["kind"])
    before = copy.deepcopy(doc)
    assert spec.validate(doc, FieldValidation.STRICT) == []
    assert doc == before, "validation must not change the object"
    assert kubehpc_verdict(rt, spec.name, doc) == []


@pytest.mark.parametrize("param", KIND_VERSIONS, ids=_version_id)
def test_generated_objects_get_the_upstream_crds_verdict(
    shared_dir: Path, param: tuple[ResourceType, str]
) -> None:
    rt, version = param
    verdicts: list[bool] = []

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(object_strategy(rt, version))
    def check(obj: dict[str, Any]) -> None:
        schema_errors, upstream = crd_verdict(rt, version, obj)
        assert not schema_errors, f"the generator broke the CRD schema: {schema_errors}"
        ours = kubehpc_verdict(rt, version, obj)
        detail = f"\n{json.dumps(obj, indent=1)[:4000]}\nupstream: {upstream}\nkubehpc: {ours}"
        assert bool(upstream) == bool(ours), detail
        verdicts.append(not upstream)

    check()
    assert any(verdicts), f"no generated {rt.kind} {version} was valid: the comparison proved nothing"


def _struct_paths(
    schema: dict[str, Any], value: Any, path: tuple[Any, ...] = ()
) -> Iterator[tuple[Any, ...]]:
    """Locations in ``value`` of objects with a fixed set of fields (not maps), metadata aside."""
    if (
        isinstance(value, dict)
        and schema.get("properties")
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        yield path
        for key, child in value.items():
            if key in schema["properties"] and not (path == () and key == "metadata"):
                yield from _struct_paths(schema["properties"][key], child, (*path, key))
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, child in value.items():
            yield from _struct_paths(schema["additionalProperties"], child, (*path, MapKey(key)))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, child in enumerate(value):
            yield from _struct_paths(schema["items"], child, (*path, i))


class MapKey(str):
    """A key of a map (``additionalProperties``): a field path shows it in brackets."""


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for key in loc:
        out += f"[{key}]" if isinstance(key, int | MapKey) else (f".{key}" if out else str(key))
    return out


@pytest.mark.parametrize("param", KIND_VERSIONS, ids=_version_id)
def test_an_unknown_field_at_any_depth_is_rejected_by_both(
    shared_dir: Path, param: tuple[ResourceType, str]
) -> None:
    rt, version = param
    schema = upstream_schema(rt, version)

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(object_strategy(rt, version), st.data())
    def check(obj: dict[str, Any], data: st.DataObject) -> None:
        loc = data.draw(st.sampled_from(sorted(_struct_paths(schema, obj), key=len)))
        target: Any = obj
        for key in loc:
            target = target[key]
        target[UNKNOWN] = "x"
        path = _field_path((*loc, UNKNOWN))
        schema_errors, _ = crd_verdict(rt, version, obj)
        assert any(f"'{UNKNOWN}' was unexpected" in e for e in schema_errors), path
        assert f'{path}: unknown field "{path}"' in kubehpc_verdict(rt, version, obj)

    check()


def _property_tree(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, type) of every node reachable through properties, items and map values."""
    yield path, schema.get("type") or ("int-or-string" if schema.get("x-kubernetes-int-or-string") else None)
    for key, sub in (schema.get("properties") or {}).items():
        yield from _property_tree(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        yield from _property_tree(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _property_tree(schema["additionalProperties"], f"{path}{{}}")


def _enums(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, list[Any]]]:
    if "enum" in schema:
        yield path, schema["enum"]
    for key, sub in (schema.get("properties") or {}).items():
        yield from _enums(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        yield from _enums(schema["items"], f"{path}[]")


@pytest.mark.parametrize("rt", CUSTOM_KINDS, ids=_kind_id)
def test_generated_crd_declares_what_the_upstream_crd_declares(shared_dir: Path, rt: ResourceType) -> None:
    ours, theirs = custom_resource_definition(rt), upstream_crd(rt)
    assert ours["metadata"]["name"] == theirs["metadata"]["name"]
    for key in ("group", "scope"):
        assert ours["spec"][key] == theirs["spec"][key]
    for key in ("kind", "listKind", "plural", "singular", "shortNames", "categories"):
        assert ours["spec"]["names"].get(key) == theirs["spec"]["names"].get(key), key
    served = {v["name"]: v for v in ours["spec"]["versions"]}
    extra = {v for k, v in EXTRA_VERSIONS if k == rt.kind}
    assert set(served) - extra == {v["name"] for v in theirs["spec"]["versions"] if v["served"]}
    for v in theirs["spec"]["versions"]:
        mine = served[v["name"]]
        assert mine["storage"] == v["storage"], v["name"]
        assert ("status" in (mine.get("subresources") or {})) == ("status" in (v.get("subresources") or {}))
        columns = [
            (c["name"], c["type"], c["jsonPath"], c.get("priority", 0))
            for c in v.get("additionalPrinterColumns") or ()
        ]
        assert [
            (c["name"], c["type"], c["jsonPath"], c.get("priority", 0))
            for c in mine.get("additionalPrinterColumns") or ()
        ] == columns


@pytest.mark.parametrize("param", KIND_VERSIONS, ids=_version_id)
def test_generated_schema_covers_the_upstream_property_tree(
    shared_dir: Path, param: tuple[ResourceType, str]
) -> None:
    rt, version = param
    mine = dict(_property_tree(rt.version(version).openapi_schema or {}))
    theirs = upstream_schema(rt, version)
    missing = [p for p, _ in _property_tree(theirs) if p not in mine and not p.startswith(".metadata.")]
    assert not missing, f"{rt.kind} {version} lacks {missing[:20]}"
    wrong = [
        (p, t, mine[p]) for p, t in _property_tree(theirs) if p in mine and t and mine[p] and t != mine[p]
    ]
    assert not wrong, f"{rt.kind} {version}: (path, upstream type, kubehpc type) {wrong[:20]}"
    ours_enums = dict(_enums(rt.version(version).openapi_schema or {}))
    narrower = [(p, e) for p, e in _enums(theirs) if not set(e) <= set(ours_enums.get(p, e))]
    assert not narrower, f"{rt.kind} {version}: enums missing values {narrower}"
