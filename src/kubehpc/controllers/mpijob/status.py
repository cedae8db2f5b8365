"""MPIJob conditions and replica statuses, as the MPI Operator (training-operator common) sets them.

A condition changes only when its status, reason or message does (``lastUpdateTime`` and
``lastTransitionTime`` move then); ``Succeeded`` or ``Failed`` turning True sets ``Running``
False, as the operator's ``setCondition`` does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]

REASON_CREATED = "MPIJobCreated"
REASON_RUNNING = "MPIJobRunning"
REASON_SUCCEEDED = "MPIJobSucceeded"
REASON_FAILED = "MPIJobFailed"
REASON_SUSPENDED = "MPIJobSuspended"
REASON_RESUMED = "MPIJobResumed"
REASON_EVICTED = "MPIJobEvicted"
REASON_PROGRAM_MISSING = "LauncherProgramNotFound"
REASON_VALIDATION = "ValidationError"


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get_condition(status: Obj, type_: str) -> Obj | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == type_), None)


def set_condition(status: Obj, type_: str, value: str, reason: str, message: str, now: str) -> bool:
    """Set a condition; returns whether anything changed."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    current = get_condition(status, type_)
    if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
        value,
        reason,
        message,
    ):
        return False
    new = {"type": type_, "status": value, "reason": reason, "message": message, "lastUpdateTime": now}
    new["lastTransitionTime"] = (
        current.get("lastTransitionTime", now)
        if current is not None and current.get("status") == value
        else now
    )
    if current is not None:
        conditions[conditions.index(current)] = new
    else:
        conditions.append(new)
    if value == "True" and type_ in ("Succeeded", "Failed"):
        running = get_condition(status, "Running")
        if running is not None and running.get("status") == "True":
            running.update(status="False", lastUpdateTime=now, lastTransitionTime=now)
    return True


def is_finished(status: Obj) -> bool:
    return any(
        c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def init_replica(status: Obj, role: str) -> Obj:
    replicas: Obj = status.setdefault("replicaStatuses", {})
    if role not in replicas or replicas[role] is None:
        replicas[role] = {}
    # Counts are recomputed on every pass (the operator's initializeMPIJobStatuses).
    replica: Obj = replicas[role]
    for key in ("active", "succeeded", "failed"):
        replica.pop(key, None)
    return replica


def job_condition(job: Obj, type_: str) -> Obj | None:
    return next(
        (c for c in (job.get("status") or {}).get("conditions") or () if c.get("type") == type_), None
    )


def job_succeeded(job: Obj) -> bool:
    c = job_condition(job, "Complete")
    return c is not None and c.get("status") == "True"


def job_failed(job: Obj) -> bool:
    c = job_condition(job, "Failed")
    return c is not None and c.get("status") == "True"


def job_finished(job: Obj) -> bool:
    return job_succeeded(job) or job_failed(job)
