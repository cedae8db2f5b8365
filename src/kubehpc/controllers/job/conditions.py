"""Job conditions as batch/v1 writes them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubehpc.controllers.job.spec import format_time

Obj = dict[str, Any]


def new(ctype: str, status: str, reason: str, message: str, now: datetime) -> Obj:
    cond: Obj = {
        "type": ctype,
        "status": status,
        "lastProbeTime": format_time(now),
        "lastTransitionTime": format_time(now),
    }
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def find(conditions: list[Obj], ctype: str) -> Obj | None:
    for cond in conditions:
        if cond.get("type") == ctype:
            return cond
    return None


def is_true(conditions: list[Obj], ctype: str) -> bool:
    cond = find(conditions, ctype)
    return bool(cond and cond.get("status") == "True")


def ensure(conditions: list[Obj], ctype: str, status: str, reason: str, message: str, now: datetime) -> bool:
    """Set the condition, in place; returns whether anything changed. A missing condition is
    not added as False (going from nothing to False says nothing), as Kubernetes does."""
    cond = find(conditions, ctype)
    if cond is not None:
        if (cond.get("status"), cond.get("reason", ""), cond.get("message", "")) != (status, reason, message):
            cond.clear()
            cond.update(new(ctype, status, reason, message, now))
            return True
        return False
    if status != "False":
        conditions.append(new(ctype, status, reason, message, now))
        return True
    return False
