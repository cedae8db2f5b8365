"""Update rules: what an update may change, per kind, with the API server's messages.

Each rule takes the stored object and the proposed one (both defaulted) and returns the
violations. ``metadata_update_causes`` applies to every kind, custom ones included. Server-set
fields the client may omit on update (``uid``, ``creationTimestamp``, a Service's allocated
``clusterIP``) are only checked when the client sends a different value; the store copies
them over from the stored object, as the API server does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kubehpc.api.errors import Cause
from kubehpc.api.quantity import parse_quantity
from kubehpc.api.schema import show_value

Obj = dict[str, Any]
Rule = Callable[[Obj, Obj], list[Cause]]

POD_UPDATE_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _immutable(path: str, value: Any) -> Cause:
    return Cause(path, f"Invalid value: {show_value(value)}: field is immutable")


def metadata_update_causes(old: Obj, new: Obj) -> list[Cause]:
    causes = []
    for key in ("name", "namespace"):
        if (_get(old, "metadata", key) or "") != (_get(new, "metadata", key) or ""):
            causes.append(_immutable(f"metadata.{key}", _get(new, "metadata", key)))
    for key in ("uid", "creationTimestamp"):
        sent = _get(new, "metadata", key)
        if sent and sent != _get(old, "metadata", key):
            causes.append(_immutable(f"metadata.{key}", sent))
    return causes


def _changed(old: Obj, new: Obj, path: str, *keys: str) -> list[Cause]:
    old_value, new_value = _get(old, *keys), _get(new, *keys)
    return [] if old_value == new_value else [_immutable(path, new_value)]


# --- Pod --------------------------------------------------------------------------------------


def pod_update_causes(old: Obj, new: Obj) -> list[Cause]:
    causes = metadata_update_causes(old, new)
    old_spec, new_spec = _get(old, "spec") or {}, _get(new, "spec") or {}
    if not isinstance(old_spec, dict) or not isinstance(new_spec, dict):
        return causes
    # Undo the changes Kubernetes allows on a copy of the new spec; whatever still differs is not.
    mutated = copy.deepcopy(new_spec)
    for key in ("containers", "initContainers"):
        old_list, new_list = old_spec.get(key) or [], mutated.get(key) or []
        if isinstance(new_list, list) and isinstance(old_list, list) and len(old_list) == len(new_list):
            for old_c, new_c in zip(old_list, new_list, strict=True):
                if isinstance(new_c, dict) and isinstance(old_c, dict) and "image" in old_c:
                    new_c["image"] = old_c["image"]
    old_deadline, new_deadline = old_spec.get("activeDeadlineSeconds"), mutated.get("activeDeadlineSeconds")
    if isinstance(new_deadline, int) and (old_deadline is None or new_deadline <= old_deadline):
        _restore(mutated, old_spec, "activeDeadlineSeconds")
    elif new_deadline != old_deadline:
        causes.append(
            Cause(
                "spec.activeDeadlineSeconds",
                f"Invalid value: {show_value(new_deadline)}: must be less than or equal to the previous value"
                if new_deadline is not None
                else "Invalid value: null: must not be removed once set",
            )
        )
        _restore(mutated, old_spec, "activeDeadlineSeconds")
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = mutated.get("tolerations") or []
    if isinstance(new_tolerations, list) and all(t in new_tolerations for t in old_tolerations):
        _restore(mutated, old_spec, "tolerations")
    old_gates = old_spec.get("schedulingGates") or []
    new_gates = mutated.get("schedulingGates") or []
    if isinstance(new_gates, list) and all(g in old_gates for g in new_gates):
        _restore(mutated, old_spec, "schedulingGates")
        if old_gates:
            # a gated pod may gain node selector terms before it is scheduled (PodSchedulingReadiness)
            old_selector = old_spec.get("nodeSelector") or {}
            new_selector = mutated.get("nodeSelector") or {}
            if isinstance(new_selector, dict) and all(
                new_selector.get(k) == v for k, v in old_selector.items()
            ):
                _restore(mutated, old_spec, "nodeSelector")
    if mutated != old_spec:
        changed = sorted(k for k in set(mutated) | set(old_spec) if mutated.get(k) != old_spec.get(k))
        detail = ", ".join(f"spec.{k}" for k in changed)
        causes.append(
            Cause("spec", f"Forbidden: {POD_UPDATE_MESSAGE} (changed: {detail})", "FieldValueForbidden")
        )
    return causes


def _restore(target: Obj, source: Obj, key: str) -> None:
    if key in source:
        target[key] = copy.deepcopy(source[key])
    else:
        target.pop(key, None)


# --- Job --------------------------------------------------------------------------------------

# What Kueue may change in the pod template of a suspended Job that never started.
_SPEC_MUTABLE_WHILE_SUSPENDED = frozenset(("nodeSelector", "tolerations", "schedulingGates"))
_META_MUTABLE_WHILE_SUSPENDED = frozenset(("labels", "annotations"))


def job_update_causes(old: Obj, new: Obj) -> list[Cause]:
    causes = metadata_update_causes(old, new)
    causes += _changed(old, new, "spec.selector", "spec", "selector")
    causes += _changed(old, new, "spec.completionMode", "spec", "completionMode")
    causes += _changed(old, new, "spec.podFailurePolicy", "spec", "podFailurePolicy")
    causes += _changed(old, new, "spec.backoffLimitPerIndex", "spec", "backoffLimitPerIndex")
    if _get(old, "spec", "completions") != _get(new, "spec", "completions") and not _elastic_indexed(
        old, new
    ):
        causes.append(_immutable("spec.completions", _get(new, "spec", "completions")))
    old_template, new_template = _get(old, "spec", "template"), _get(new, "spec", "template")
    if old_template != new_template:
        # Kueue injects node selectors and tolerations into a Job it admits: allowed while the
        # Job is suspended and has never started, exactly as the API server allows it.
        never_started = bool(_get(old, "spec", "suspend")) and not _get(old, "status", "startTime")
        if not never_started or _strip_scheduling(old_template) != _strip_scheduling(new_template):
            causes.append(_immutable("spec.template", "..."))
    return causes


def _elastic_indexed(old: Obj, new: Obj) -> bool:
    """Indexed Jobs may scale when completions follows parallelism (elastic Indexed Jobs)."""
    spec_old, spec_new = _get(old, "spec") or {}, _get(new, "spec") or {}
    return (
        spec_new.get("completionMode") == "Indexed"
        and spec_old.get("completions") == spec_old.get("parallelism")
        and spec_new.get("completions") == spec_new.get("parallelism")
    )


def _strip_scheduling(template: Any) -> Any:
    """A view of ``template`` without what may change while suspended, for comparing: it
    shares the rest with ``template`` (nothing is copied) and must not be changed."""
    if not isinstance(template, dict):
        return template
    out = dict(template)
    spec = out.get("spec")
    if isinstance(spec, dict):
        out["spec"] = {k: v for k, v in spec.items() if k not in _SPEC_MUTABLE_WHILE_SUSPENDED}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _META_MUTABLE_WHILE_SUSPENDED}
    return out


# --- Other kinds ------------------------------------------------------------------------------


_IMMUTABLE_SET = "Forbidden: field is immutable when `immutable` is set"


def _immutable_data_causes(old: Obj, new: Obj, data_keys: tuple[str, ...]) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    causes = []
    if new.get("immutable") is not True:
        causes.append(Cause("immutable", _IMMUTABLE_SET, "FieldValueForbidden"))
    for key in data_keys:
        if (old.get(key) or {}) != (new.get(key) or {}):
            causes.append(
                Cause(key, "Forbidden: field is immutable when `immutable` is set", "FieldValueForbidden")
            )
    return causes


def configmap_update_causes(old: Obj, new: Obj) -> list[Cause]:
    return metadata_update_causes(old, new) + _immutable_data_causes(old, new, ("data", "binaryData"))


def secret_update_causes(old: Obj, new: Obj) -> list[Cause]:
    causes = metadata_update_causes(old, new) + _changed(old, new, "type", "type")
    return causes + _immutable_data_causes(old, new, ("data", "stringData"))


def pvc_update_causes(old: Obj, new: Obj) -> list[Cause]:
    causes = metadata_update_causes(old, new)
    old_spec, new_spec = _get(old, "spec") or {}, _get(new, "spec") or {}
    if not isinstance(old_spec, dict) or not isinstance(new_spec, dict):
        return causes
    comparable_old, comparable_new = copy.deepcopy(old_spec), copy.deepcopy(new_spec)
    for spec in (comparable_old, comparable_new):
        spec.pop("volumeAttributesClassName", None)
        requests = _get(spec, "resources", "requests")
        if isinstance(requests, dict):
            requests.pop("storage", None)
    if not old_spec.get("volumeName"):
        comparable_new.pop("volumeName", None)  # binding sets the volume once
        comparable_old.pop("volumeName", None)
    if comparable_old != comparable_new:
        causes.append(
            Cause(
                "spec",
                "Forbidden: spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims",
                "FieldValueForbidden",
            )
        )
    old_size = _get(old_spec, "resources", "requests", "storage")
    new_size = _get(new_spec, "resources", "requests", "storage")
    if old_size is not None and new_size is not None:
        try:
            shrinks = parse_quantity(new_size).amount < parse_quantity(old_size).amount
        except ValueError:
            shrinks = False  # the schema check reports the bad quantity
        if shrinks:
            causes.append(
                Cause(
                    "spec.resources.requests.storage",
                    f"Forbidden: field can not be less than previous value ({old_size})",
                    "FieldValueForbidden",
                )
            )
    return causes


def service_update_causes(old: Obj, new: Obj) -> list[Cause]:
    causes = metadata_update_causes(old, new)
    old_ip, new_ip = _get(old, "spec", "clusterIP"), _get(new, "spec", "clusterIP")
    if old_ip and new_ip and old_ip != new_ip:
        causes.append(_immutable("spec.clusterIP", new_ip))
    return causes


def priority_class_update_causes(old: Obj, new: Obj) -> list[Cause]:
    return (
        metadata_update_causes(old, new)
        + _changed(old, new, "value", "value")
        + _changed(old, new, "preemptionPolicy", "preemptionPolicy")
    )
