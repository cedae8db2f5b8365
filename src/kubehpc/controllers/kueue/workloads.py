"""Workload objects: how one is made for a job, and the status transitions Kueue writes.

Pure functions on plain dicts (Kueue's ``pkg/workload``): the reconciler and the admission
loop decide *when*; these say *what* the object looks like afterwards, with Kueue's reasons
and messages.
"""

from __future__ import annotations

import functools
import hashlib
from datetime import datetime
from typing import Any, TypeVar

import orjson

from kubehpc.api import fields as F
from kubehpc.api.kinds.kueue.workload import workload_state
from kubehpc.controllers.job.spec import parse_time
from kubehpc.controllers.kueue import constants as k
from kubehpc.controllers.kueue.conditions import find, is_true, set_condition
from kubehpc.controllers.kueue.jobframework import Integration
from kubehpc.controllers.kueue.runtimes import runtime_fields
from kubehpc.sched.admission.reservations import RUNTIME_ESTIMATE_ANNOTATION

Obj = dict[str, Any]
_J = TypeVar("_J", dict[str, Any], list[dict[str, Any]])
_HASH_LENGTH = 5
_MAX_PREFIX = 252 - _HASH_LENGTH  # 253 for the name, less "-" and the hash


def group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


@functools.lru_cache(maxsize=16384)  # asked on every pass over a job; a hash per ask added up
def workload_name(owner_name: str, owner_uid: str, api_version: str, kind: str) -> str:
    """``<kind>-<name>-<hash>``, exactly as Kueue names the Workload of a job."""
    prefix = f"{kind.lower()}-{owner_name}"[:_MAX_PREFIX]
    digest = hashlib.sha1(usedforsecurity=False)
    for part in (kind, group_of(api_version), owner_name, owner_uid):
        digest.update(part.encode())
        digest.update(b"\n")
    return f"{prefix}-{digest.hexdigest()[:_HASH_LENGTH]}"


def new_workload(
    integration: Integration,
    job: Obj,
    queue: str,
    pod_sets: list[Obj],
    priority: int,
    priority_class_ref: Obj | None,
) -> Obj:
    meta = job["metadata"]
    name = workload_name(meta["name"], meta["uid"], integration.api_version, integration.kind)
    spec: Obj = {"queueName": queue, "podSets": pod_sets, "priority": priority}
    if priority_class_ref is not None:
        spec["priorityClassRef"] = priority_class_ref
    # kubehpc (H2): the runtime estimate backfill and estimated starts plan with (runtimes.py).
    max_exec, estimate = runtime_fields(job)
    if max_exec is not None:
        spec["maximumExecutionTimeSeconds"] = max_exec
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": k.WORKLOAD,
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace") or "default",
            "labels": {k.JOB_UID_LABEL: meta["uid"]},
            **({"annotations": {RUNTIME_ESTIMATE_ANNOTATION: estimate}} if estimate is not None else {}),
            "ownerReferences": [
                {
                    "apiVersion": integration.api_version,
                    "kind": integration.kind,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def private_copy(obj: _J) -> _J:
    """A copy to change and write back, of a shared (read-only) or cached object (or list of
    them): a JSON round trip, several times faster than deepcopy on API objects."""
    out: _J = orjson.loads(orjson.dumps(obj))
    return out


def status_copy(obj: Obj) -> Obj:
    """A copy of a shared (read-only) or cached object to change the status of and write back
    with ``update_status``: its status is the caller's own, the rest stays shared, read only.
    A status write reads nothing else, and a Workload's spec (its pod templates) is most of it."""
    out = dict(obj)
    out["status"] = private_copy(F.status(obj))
    return out


# --- reading --------------------------------------------------------------------------------------


def key_of(obj: Obj) -> str:
    meta = F.metadata(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def has_quota_reservation(wl: Obj) -> bool:
    return is_true(wl, k.QUOTA_RESERVED)


def is_admitted(wl: Obj) -> bool:
    return is_true(wl, k.ADMITTED)


def is_finished(wl: Obj) -> bool:
    return is_true(wl, k.FINISHED)


def is_evicted(wl: Obj) -> bool:
    return is_true(wl, k.EVICTED)


def cluster_queue_of(wl: Obj) -> str:
    return str(F.obj_field(F.status(wl), "admission").get("clusterQueue") or "")


def state(wl: Obj) -> str:
    return workload_state(wl)


def queued_since(wl: Obj) -> datetime | None:
    """When the workload (re)entered its queue: the Requeued condition's time, else creation."""
    requeued = find(wl, k.REQUEUED)
    if requeued is not None and requeued.get("lastTransitionTime"):
        return parse_time(requeued["lastTransitionTime"])
    return parse_time(F.metadata(wl).get("creationTimestamp"))


# --- transitions (on a status dict, in place; each returns whether it changed anything) ----------


def _generation(wl: Obj) -> int | None:
    value = F.metadata(wl).get("generation")
    return int(value) if isinstance(value, int) else None


def sync_admitted(wl: Obj, now: datetime) -> bool:
    """Admitted follows QuotaReserved (no admission checks in kubehpc yet)."""
    status = wl.setdefault("status", {})
    reserved = has_quota_reservation(wl)
    if is_admitted(wl) == reserved:
        return False
    if reserved:
        return set_condition(
            status, k.ADMITTED, "True", k.REASON_ADMITTED, k.MESSAGE_ADMITTED, now, _generation(wl)
        )
    if find(wl, k.ADMITTED) is None:
        return False
    return set_condition(
        status, k.ADMITTED, "False", k.REASON_NO_RESERVATION, k.MESSAGE_NO_RESERVATION, now, _generation(wl)
    )


def set_quota_reservation(wl: Obj, admission: Obj, now: datetime) -> None:
    """Kueue's ``SetQuotaReservation`` + ``SyncAdmittedCondition``."""
    status = wl.setdefault("status", {})
    status["admission"] = admission
    generation = _generation(wl)
    message = f"Quota reserved in ClusterQueue {admission['clusterQueue']}"
    set_condition(status, k.QUOTA_RESERVED, "True", k.REASON_QUOTA_RESERVED, message, now, generation)
    for ctype in (k.EVICTED, k.PREEMPTED):
        previous = find(wl, ctype)
        if previous is not None and previous.get("status") == "True":
            set_condition(
                status,
                ctype,
                "False",
                k.REASON_QUOTA_RESERVED,
                "Previously: " + str(previous.get("message", "")),
                now,
                generation,
            )
    sync_admitted(wl, now)


def unset_quota_reservation(wl: Obj, reason: str, message: str, now: datetime) -> bool:
    """Kueue's ``UnsetQuotaReservationWithCondition``."""
    status = wl.setdefault("status", {})
    changed = set_condition(status, k.QUOTA_RESERVED, "False", reason, message, now, _generation(wl))
    if status.get("admission") is not None:
        status.pop("admission")
        changed = True
    return sync_admitted(wl, now) or changed


def set_evicted(wl: Obj, reason: str, message: str, now: datetime) -> bool:
    return set_condition(
        wl.setdefault("status", {}), k.EVICTED, "True", reason, message, now, _generation(wl)
    )


def set_preempted(wl: Obj, reason: str, message: str, now: datetime) -> bool:
    status = wl.setdefault("status", {})
    return set_condition(status, k.PREEMPTED, "True", reason, message, now, _generation(wl))


def set_requeued(wl: Obj, reason: str, message: str, requeued: bool, now: datetime) -> bool:
    status = wl.setdefault("status", {})
    value = "True" if requeued else "False"
    return set_condition(status, k.REQUEUED, value, reason, message, now, _generation(wl))


def set_finished(wl: Obj, succeeded: bool, message: str, now: datetime) -> bool:
    reason = k.REASON_SUCCEEDED if succeeded else k.REASON_FAILED
    status = wl.setdefault("status", {})
    return set_condition(status, k.FINISHED, "True", reason, message, now, _generation(wl))


def preemption_message(preemptor_uid: str, preemptor_job_uid: str, reason: str) -> str:
    """The Evicted / Preempted message Kueue writes on a victim."""
    uids = f"UID: {preemptor_uid or 'UNKNOWN'}, JobUID: {preemptor_job_uid or 'UNKNOWN'}"
    human = k.HUMAN_PREEMPTION_REASONS.get(reason, "UNKNOWN")
    return f"Preempted to accommodate a workload ({uids}) due to {human}"
