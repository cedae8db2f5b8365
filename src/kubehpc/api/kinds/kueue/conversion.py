"""Lossless conversion between Kueue v1beta1 (served) and v1beta2 (storage).

Each kind has a pair of plain converters per section (``spec``, ``status``): renames such as
ClusterQueue ``cohort`` -> ``cohortName``, Workload ``priorityClassName``/``priorityClassSource``
-> ``priorityClassRef``, topology ``domains`` -> ``slices``. Some fields exist in one version
only (v1beta1 ``retryDelayMinutes``, v1beta2 ``concurrentAdmissionPolicy``, ...), so a plain
conversion can lose data. Like Kubernetes' own conversions, we then keep the original section in
an annotation on the converted object, with a digest of the converted section: converting back
restores the original while the section is unchanged since, and falls back to the plain
conversion once someone has changed it in the other version.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubehpc.api.registry import Obj

Section = dict[str, Any]
SectionConvert = Callable[[Section], Section]

# Where the original section of the *other* version is kept (v1beta1 data on stored v1beta2
# objects, v1beta2 data on v1beta1 objects served from storage).
STASH_V1BETA1 = "conversion.kubehpc.io/kueue-v1beta1"
STASH_V1BETA2 = "conversion.kubehpc.io/kueue-v1beta2"


def _identity(section: Section) -> Section:
    return section


def _digest(section: Any) -> str:
    return hashlib.sha256(orjson.dumps(section, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


@dataclass(frozen=True)
class KindConversion:
    """v1beta1 <-> v1beta2 for one kind, by section; missing sections convert unchanged."""

    up: dict[str, SectionConvert] = field(default_factory=dict)  # v1beta1 -> v1beta2
    down: dict[str, SectionConvert] = field(default_factory=dict)  # v1beta2 -> v1beta1

    def to_storage(self, obj: Obj) -> Obj:
        return self._convert(obj, self.up, self.down, stash_out=STASH_V1BETA1, stash_in=STASH_V1BETA2)

    def from_storage(self, obj: Obj) -> Obj:
        return self._convert(obj, self.down, self.up, stash_out=STASH_V1BETA2, stash_in=STASH_V1BETA1)

    def _convert(
        self,
        obj: Obj,
        forward: dict[str, SectionConvert],
        backward: dict[str, SectionConvert],
        *,
        stash_out: str,
        stash_in: str,
    ) -> Obj:
        out = dict(obj)
        given = obj.get("metadata")
        meta: dict[str, Any] = copy.deepcopy(given) if isinstance(given, dict) else {}
        annotations: dict[str, Any] = meta.get("annotations") or {}
        incoming = _load(annotations.pop(stash_in, None))
        outgoing: dict[str, Any] = {}
        for name in sorted(set(forward) | set(backward)):
            if not isinstance(obj.get(name), dict):
                continue
            original: Section = obj[name]
            kept = incoming.get(name)
            if isinstance(kept, dict) and kept.get("digest") == _digest(original) and "value" in kept:
                # Converting back a section nobody changed since: restore it exactly.
                out[name] = copy.deepcopy(kept["value"])
                continue
            converted = forward.get(name, _identity)(copy.deepcopy(original))
            out[name] = converted
            if backward.get(name, _identity)(copy.deepcopy(converted)) != original:
                outgoing[name] = {"digest": _digest(converted), "value": copy.deepcopy(original)}
        if outgoing:
            annotations[stash_out] = orjson.dumps(outgoing, option=orjson.OPT_SORT_KEYS).decode()
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
        if "metadata" in obj or meta:
            out["metadata"] = meta
        return out


def _load(text: Any) -> dict[str, Any]:
    if not isinstance(text, str):
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _rename(section: Section, old: str, new: str) -> None:
    if old in section:
        section[new] = section.pop(old)


# --- ClusterQueue --------------------------------------------------------------------------------

# v1beta1's deprecated spellings of MayStopSearch.
_FUNGIBILITY_ALIASES = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


def _cluster_queue_spec_up(spec: Section) -> Section:
    _rename(spec, "cohort", "cohortName")
    checks = spec.pop("admissionChecks", None)
    if checks and "admissionChecksStrategy" not in spec:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in checks]}
    fungibility = spec.get("flavorFungibility")
    if isinstance(fungibility, dict):
        for key, alias in _FUNGIBILITY_ALIASES.items():
            if fungibility.get(key) == alias:
                fungibility[key] = "MayStopSearch"
    return spec


def _cluster_queue_spec_down(spec: Section) -> Section:
    _rename(spec, "cohortName", "cohort")
    spec.pop("concurrentAdmissionPolicy", None)
    return spec


def _drop_admission_fair_sharing(status: Section) -> Section:
    fair = status.get("fairSharing")
    if isinstance(fair, dict):
        fair.pop("admissionFairSharingStatus", None)
    return status


def _cluster_queue_status_up(status: Section) -> Section:
    status.pop("pendingWorkloadsStatus", None)
    return _drop_admission_fair_sharing(status)


CLUSTER_QUEUE = KindConversion(
    up={"spec": _cluster_queue_spec_up, "status": _cluster_queue_status_up},
    down={"spec": _cluster_queue_spec_down},
)
COHORT = KindConversion(up={"status": _drop_admission_fair_sharing})


# --- LocalQueue ----------------------------------------------------------------------------------


def _local_queue_status_up(status: Section) -> Section:
    _rename(status, "flavorUsage", "flavorsUsage")
    status.pop("flavors", None)
    return status


def _local_queue_status_down(status: Section) -> Section:
    _rename(status, "flavorsUsage", "flavorUsage")
    return status


LOCAL_QUEUE = KindConversion(up={"status": _local_queue_status_up}, down={"status": _local_queue_status_down})


# --- AdmissionCheck ------------------------------------------------------------------------------


def _admission_check_spec_up(spec: Section) -> Section:
    spec.pop("retryDelayMinutes", None)
    return spec


ADMISSION_CHECK = KindConversion(up={"spec": _admission_check_spec_up})


# --- Workload ------------------------------------------------------------------------------------

_PRIORITY_SOURCES = {
    "kueue.x-k8s.io/workloadpriorityclass": ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass"),
}
_PRIORITY_REFS = {v: k for k, v in _PRIORITY_SOURCES.items()}


def _workload_spec_up(spec: Section) -> Section:
    name = spec.pop("priorityClassName", None)
    source = spec.pop("priorityClassSource", None)
    if name is not None and source in _PRIORITY_SOURCES:
        group, kind = _PRIORITY_SOURCES[source]
        spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name}
    return spec


def _workload_spec_down(spec: Section) -> Section:
    ref = spec.pop("priorityClassRef", None)
    spec.pop("preemptionGates", None)
    for pod_set in spec.get("podSets") or ():
        request = pod_set.get("topologyRequest") if isinstance(pod_set, dict) else None
        if isinstance(request, dict):
            request.pop("podsetSliceRequiredTopologyConstraints", None)
    if isinstance(ref, dict):
        spec["priorityClassName"] = ref.get("name")
        spec["priorityClassSource"] = _PRIORITY_REFS.get((str(ref.get("group")), str(ref.get("kind"))), "")
    return spec


def domains_to_slices(assignment: dict[str, Any]) -> dict[str, Any]:
    """v1beta1 ``{levels, domains: [{values, count}]}`` -> v1beta2 ``{levels, slices}``."""
    slices = [
        {
            "domainCount": 1,
            "podCounts": {"universal": d.get("count")},
            "valuesPerLevel": [{"universal": v} for v in d.get("values") or ()],
        }
        for d in assignment.get("domains") or ()
    ]
    return {"levels": assignment.get("levels"), "slices": slices}


def slices_to_domains(assignment: dict[str, Any]) -> dict[str, Any]:
    """v1beta2 ``slices`` expanded into v1beta1's one entry per domain."""
    domains = []
    for s in assignment.get("slices") or ():
        counts = s.get("podCounts") or {}
        for i in range(int(s.get("domainCount") or 0)):
            values = []
            for level in s.get("valuesPerLevel") or ():
                if "universal" in level:
                    values.append(level["universal"])
                else:
                    ind = level.get("individual") or {}
                    values.append(
                        f"{ind.get('prefix', '')}{(ind.get('roots') or [''])[i]}{ind.get('suffix', '')}"
                    )
            count = counts["universal"] if "universal" in counts else (counts.get("individual") or [0])[i]
            domains.append({"values": values, "count": count})
    return {"levels": assignment.get("levels"), "domains": domains}


def _map_assignments(status: Section, convert: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    admission = status.get("admission")
    for psa in (admission.get("podSetAssignments") or ()) if isinstance(admission, dict) else ():
        if isinstance(psa, dict) and isinstance(psa.get("topologyAssignment"), dict):
            psa["topologyAssignment"] = convert(psa["topologyAssignment"])


def _workload_status_up(status: Section) -> Section:
    _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
    _map_assignments(status, domains_to_slices)
    return status


def _workload_status_down(status: Section) -> Section:
    _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
    status.pop("preemptionGates", None)
    _map_assignments(status, slices_to_domains)
    return status


WORKLOAD = KindConversion(
    up={"spec": _workload_spec_up, "status": _workload_status_up},
    down={"spec": _workload_spec_down, "status": _workload_status_down},
)
