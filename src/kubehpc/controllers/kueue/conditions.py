"""Status conditions, set the way apimachinery's ``meta.SetStatusCondition`` sets them.

``lastTransitionTime`` moves only when the status flips; reason, message and
observedGeneration follow every call. Each helper returns whether anything changed, so
callers write only real changes.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from kubehpc.api import fields as F
from kubehpc.store.strategy import rfc3339

Obj = dict[str, Any]
MAX_MESSAGE = 32768  # the CRD's maxLength for a condition message


def format_time(when: datetime) -> str:
    # rfc3339 formats each second once: every condition an admission cycle sets stamps it.
    return rfc3339(math.floor(when.timestamp()))


def conditions_of(obj: Obj) -> list[Obj]:
    return list(F.status(obj).get("conditions") or [])


def find(obj: Obj, ctype: str) -> Obj | None:
    for cond in F.list_field(F.status(obj), "conditions"):
        if isinstance(cond, dict) and cond.get("type") == ctype:
            return cond
    return None


def is_true(obj: Obj, ctype: str) -> bool:
    cond = find(obj, ctype)
    return cond is not None and cond.get("status") == "True"


def truncate(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def set_condition(
    status: Obj,
    ctype: str,
    value: str,
    reason: str,
    message: str,
    now: datetime,
    generation: int | None = None,
) -> bool:
    """Set condition ``ctype`` in ``status`` (a Workload's or queue's status dict, in place)."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    message = truncate(message)
    for cond in conditions:
        if cond.get("type") != ctype:
            continue
        before = dict(cond)
        if cond.get("status") != value:
            cond["status"] = value
            cond["lastTransitionTime"] = format_time(now)
        cond["reason"] = reason
        cond["message"] = message
        if generation is not None:
            cond["observedGeneration"] = generation
        return cond != before
    new: Obj = {
        "type": ctype,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": format_time(now),
    }
    if generation is not None:
        new["observedGeneration"] = generation
    conditions.append(new)
    return True


def remove_condition(status: Obj, ctype: str) -> bool:
    conditions = status.get("conditions") or []
    kept = [c for c in conditions if c.get("type") != ctype]
    if len(kept) == len(conditions):
        return False
    status["conditions"] = kept
    return True
