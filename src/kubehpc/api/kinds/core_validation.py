"""The API server's semantic rules for built-in kinds, beyond what their schema says.

Messages and field paths follow Kubernetes' ``pkg/apis/core/validation`` and
``pkg/apis/batch/validation`` (``field.Invalid`` -> ``Invalid value: <v>: <detail>``,
``field.Required`` -> ``Required value: <detail>``, ``field.Duplicate`` / ``field.NotFound``),
so a client sees the same error from kubehpc as from a real cluster. These run only once the
object has passed its schema, so the types here are the schema's.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from kubehpc.api import schema
from kubehpc.api.errors import Cause
from kubehpc.api.names import dns1123_label
from kubehpc.api.quantity import Quantity, is_extended_resource, is_native_resource, parse_quantity

Obj = dict[str, Any]

REQUIRED = "FieldValueRequired"
DUPLICATE = "FieldValueDuplicate"
NOT_FOUND = "FieldValueNotFound"
NOT_SUPPORTED = "FieldValueNotSupported"

NEGATIVE = "must be greater than or equal to 0"
PORT_RANGE = "must be between 1 and 65535, inclusive"
NO_LIMIT = "Limit must be set for non overcommitable resources"
# RelaxedEnvironmentVariableValidation is GA since Kubernetes 1.34 (the schemas are newer), so the
# server checks IsRelaxedEnvVarName, not the old C-identifier-like IsEnvVarName.
ENV_NAME = "a valid environment variable name must consist only of printable ASCII characters other than '='"
_ENV_NAME_RE = re.compile(r"[\x20-\x3c\x3e-\x7e]+")
_JOB_RESTART = ("OnFailure", "Never")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {schema.show_value(value)}: {detail}")


def _required(path: str, detail: str = "") -> Cause:
    return Cause(path, f"Required value: {detail}" if detail else "Required value", REQUIRED)


def _dns_label_causes(name: Any, path: str) -> list[Cause]:
    if not isinstance(name, str):
        return []  # the schema already named a missing or mistyped name
    if not name:
        return [_required(path)]
    return [_invalid(path, name, msg) for msg in dns1123_label(name)]


# --- pod spec -----------------------------------------------------------------------------------


# Pod specs repeat from object to object (every pod of a Job, every Job of one template, a Job
# and its unsuspending update): a spec these rules found nothing wrong with is remembered by its
# JSON and the path it was checked at (the rules read nothing else). A spec with problems is checked
# again on every write, so its causes are always a fresh check's.
_CLEAN_POD_SPECS: dict[tuple[bytes, str], None] = {}
_CLEAN_POD_SPECS_MAX = 1024


def pod_spec_causes(spec: Any, path: str) -> list[Cause]:
    """API-server rules on a pod spec (``ValidatePodSpec``); ``path`` prefixes every field, so
    the same rules serve Pods (``spec``) and pod templates (``spec.template.spec``)."""
    if not isinstance(spec, dict):
        return []
    try:
        key = (orjson.dumps(spec), path)
    except TypeError:  # not plain JSON: check it as it is
        return _pod_spec_causes(spec, path)
    if key in _CLEAN_POD_SPECS:
        return []
    causes = _pod_spec_causes(spec, path)
    if not causes:
        if len(_CLEAN_POD_SPECS) >= _CLEAN_POD_SPECS_MAX:
            _CLEAN_POD_SPECS.clear()
        _CLEAN_POD_SPECS[key] = None
    return causes


def _pod_spec_causes(spec: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    containers = _list(spec.get("containers"))
    if not containers:
        causes.append(_required(f"{path}.containers"))
    restart = spec.get("restartPolicy") or "Always"  # defaulted to Always when unset
    if restart not in ("Always", "OnFailure", "Never"):
        causes.append(
            Cause(
                f"{path}.restartPolicy",
                f'Unsupported value: "{restart}": supported values: "Always", "OnFailure", "Never"',
                NOT_SUPPORTED,
            )
        )
    volumes = _volume_causes(spec.get("volumes"), f"{path}.volumes", causes)
    # Regular containers first: a name an init container shares with one of them is reported on
    # the init container, as validateInitContainers does.
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        for i, container in enumerate(_list(spec.get(key))):
            if isinstance(container, dict):
                cpath = f"{path}.{key}[{i}]"
                _container_causes(container, cpath, names, volumes, causes)
                if key == "containers" and not container.get("image"):
                    causes.append(_required(f"{cpath}.image"))
    return causes


def _volume_causes(volumes: Any, path: str, causes: list[Cause]) -> set[str]:
    """Check volume names (DNS-1123 labels, unique); return the valid ones, which are all that
    volumeMounts may name (an invalid volume is "Not found" too, as upstream)."""
    names: set[str] = set()
    for i, volume in enumerate(_list(volumes)):
        name = _dict(volume).get("name")
        if not isinstance(name, str):
            continue
        npath = f"{path}[{i}].name"
        problems = _dns_label_causes(name, npath)
        if name in names:
            problems.append(Cause(npath, f"Duplicate value: {schema.show_value(name)}", DUPLICATE))
        if problems:
            causes.extend(problems)
        else:
            names.add(name)
    return names


def _container_causes(
    container: Obj, path: str, names: set[str], volumes: set[str], causes: list[Cause]
) -> None:
    name = container.get("name")
    if isinstance(name, str):
        causes.extend(_dns_label_causes(name, f"{path}.name"))
        if name in names:
            causes.append(Cause(f"{path}.name", f"Duplicate value: {schema.show_value(name)}", DUPLICATE))
        names.add(name)
    for i, port in enumerate(_list(container.get("ports"))):
        for key in ("containerPort", "hostPort"):
            number = _dict(port).get(key)
            if not isinstance(number, int):
                continue  # absent (the schema requires containerPort) or mistyped
            where = f"{path}.ports[{i}].{key}"
            if number == 0 and key == "containerPort":
                causes.append(_required(where))
            elif number != 0 and not 0 < number < 65536:
                causes.append(_invalid(where, number, PORT_RANGE))
    for i, env in enumerate(_list(container.get("env"))):
        env_name = _dict(env).get("name")
        if env_name == "":
            causes.append(_required(f"{path}.env[{i}].name"))
        elif isinstance(env_name, str) and not _ENV_NAME_RE.fullmatch(env_name):
            causes.append(_invalid(f"{path}.env[{i}].name", env_name, ENV_NAME))
    for i, mount in enumerate(_list(container.get("volumeMounts"))):
        volume = _dict(mount).get("name")
        if volume == "":
            causes.append(_required(f"{path}.volumeMounts[{i}].name"))
        elif isinstance(volume, str) and volume not in volumes:
            causes.append(
                Cause(f"{path}.volumeMounts[{i}].name", f"Not found: {schema.show_value(volume)}", NOT_FOUND)
            )
    resources = container.get("resources")
    if isinstance(resources, dict):
        causes.extend(resource_causes(resources, f"{path}.resources"))


def _overcommit_allowed(name: str) -> bool:
    """``helper.IsOvercommitAllowed``: native resources other than hugepages."""
    return is_native_resource(name) and not name.startswith("hugepages-")


def resource_causes(resources: Obj, path: str) -> list[Cause]:
    """``ValidateResourceRequirements``: quantities non-negative, extended resources whole, and
    each request within its limit (equal to it for resources that cannot be overcommitted)."""
    causes: list[Cause] = []
    limits = _dict(resources.get("limits"))
    for name, value in limits.items():
        _quantity_causes(name, value, f"{path}.limits", causes)
    requests = resources.get("requests")
    if not isinstance(requests, dict):
        return causes
    for name, value in requests.items():
        request = _quantity_causes(name, value, f"{path}.requests", causes)
        if request is None:
            continue
        if name not in limits:
            if not _overcommit_allowed(name):
                causes.append(_required(f"{path}.limits", NO_LIMIT))
            continue
        try:
            limit = parse_quantity(limits[name])
        except ValueError:
            continue  # the schema check already named it
        # As upstream, the message shows the request at ``requests`` (not ``requests[<name>]``).
        if request.amount == limit.amount:
            continue  # the common case; spelling the quantities out is only for messages
        where = f"{path}.requests"
        if not _overcommit_allowed(name):
            causes.append(_invalid(where, str(request), f"must be equal to {name} limit of {limit}"))
        elif request.amount > limit.amount:
            detail = f"must be less than or equal to {name} limit of {limit}"
            causes.append(_invalid(where, str(request), detail))
    return causes


def _quantity_causes(name: str, value: Any, path: str, causes: list[Cause]) -> Quantity | None:
    """``ValidateResourceQuantityValue`` of ``<path>[<name>]``; returns the parsed quantity."""
    try:
        q = parse_quantity(value)
    except ValueError:
        return None  # the schema check already named it
    if q.amount.numerator < 0:
        causes.append(_invalid(schema.child_path(path, name), value, NEGATIVE))
    elif q.amount.denominator != 1 and is_extended_resource(name):
        causes.append(_invalid(schema.child_path(path, name), value, "must be an integer"))
    return q


def pod_causes(pod: Obj) -> list[Cause]:
    return pod_spec_causes(pod.get("spec"), "spec")


# --- Job ----------------------------------------------------------------------------------------

_NON_NEGATIVE_JOB_FIELDS = (
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "backoffLimit",
    "ttlSecondsAfterFinished",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
)


def job_causes(job: Obj) -> list[Cause]:
    """``ValidateJobSpec`` (the rules a Job's controller relies on), then its pod template."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    causes = []
    for key in _NON_NEGATIVE_JOB_FIELDS:
        value = spec.get(key)
        if isinstance(value, int) and value < 0:
            causes.append(_invalid(f"spec.{key}", value, NEGATIVE))
    causes += _indexed_causes(spec)
    template = spec.get("template")
    if not isinstance(template, dict):
        return [*causes, _required("spec.template")]
    if spec.get("manualSelector") is True:
        causes += _manual_selector_causes(spec.get("selector"), _dict(template.get("metadata")).get("labels"))
    pod_spec = template.get("spec")
    causes += pod_spec_causes(pod_spec, "spec.template.spec")
    causes += _job_restart_causes(spec, _dict(pod_spec).get("restartPolicy"))
    return causes


def _indexed_causes(spec: Obj) -> list[Cause]:
    """Rules tying completionMode, backoffLimitPerIndex, maxFailedIndexes and successPolicy."""
    causes = []
    indexed = spec.get("completionMode") == "Indexed"
    completions = spec.get("completions")
    per_index = spec.get("backoffLimitPerIndex")
    max_failed = spec.get("maxFailedIndexes")
    if max_failed is not None and per_index is None:
        causes.append(_required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    if indexed:
        if completions is None:
            causes.append(_required("spec.completions", "when completion mode is Indexed"))
        elif isinstance(max_failed, int) and isinstance(completions, int) and max_failed > completions:
            causes.append(
                _invalid("spec.maxFailedIndexes", max_failed, "must be less than or equal to completions")
            )
    else:
        for key, value in (("backoffLimitPerIndex", per_index), ("maxFailedIndexes", max_failed)):
            if value is not None:
                causes.append(_invalid(f"spec.{key}", value, "requires indexed completion mode"))
        if spec.get("successPolicy") is not None:
            causes.append(
                _invalid("spec.successPolicy", spec["successPolicy"], "requires indexed completion mode")
            )
    for i, rule in enumerate(_list(_dict(spec.get("podFailurePolicy")).get("rules"))):
        if _dict(rule).get("action") == "FailIndex" and per_index is None:
            causes.append(
                _invalid(
                    f"spec.podFailurePolicy.rules[{i}].action",
                    "FailIndex",
                    "requires the backoffLimitPerIndex to be set",
                )
            )
    return causes


def _job_restart_causes(spec: Obj, restart: Any) -> list[Cause]:
    """A Job's pods must not restart in place forever; with a podFailurePolicy the controller
    must see every failure, so only Never is allowed."""
    path = "spec.template.spec.restartPolicy"
    if restart in (None, "", "Always"):
        return [_required(path, 'valid values: "OnFailure", "Never"')]
    if restart not in _JOB_RESTART:
        return [
            Cause(
                path,
                f'Unsupported value: {schema.show_value(restart)}: supported values: "OnFailure", "Never"',
                NOT_SUPPORTED,
            )
        ]
    if spec.get("podFailurePolicy") is not None and restart != "Never":
        return [_invalid(path, restart, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def _manual_selector_causes(selector: Any, labels: Any) -> list[Cause]:
    """With ``manualSelector: true`` the user's selector must select the template's labels."""
    if not isinstance(selector, dict):
        return [_required("spec.selector")]
    labels = labels if isinstance(labels, dict) else {}
    match = _dict(selector.get("matchLabels"))
    if any(labels.get(k) != v for k, v in match.items()):
        return [
            _invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")
        ]
    return []


# --- Service ------------------------------------------------------------------------------------


def service_causes(svc: Obj) -> list[Cause]:
    spec = _dict(svc.get("spec"))
    kind = spec.get("type") or "ClusterIP"
    if kind != "ExternalName" and spec.get("clusterIP") != "None" and not spec.get("ports"):
        return [_required("spec.ports")]
    return []
