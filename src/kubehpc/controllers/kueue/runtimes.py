"""A job's runtime estimate, carried onto its Workload when the Workload is made.

Backfill and start-time estimates (``sched/admission/reservations.py``) read it from the
Workload; this says where it comes from on the job.
"""

from __future__ import annotations

from typing import Any

from kubehpc.api import fields as F
from kubehpc.sched.admission.reservations import RUNTIME_ESTIMATE_ANNOTATION

Obj = dict[str, Any]

MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
"""Kueue's label on a job: copied to its Workload's ``spec.maximumExecutionTimeSeconds``."""


def runtime_fields(job: Obj) -> tuple[int | None, str | None]:
    """(spec.maximumExecutionTimeSeconds, runtime-estimate annotation) for a job's Workload.

    Kueue's label ``kueue.x-k8s.io/max-exec-time-seconds`` gives the first; the job's own
    ``kubehpc.io/runtime-estimate-seconds`` annotation (sbatch --time sets it), else its
    ``spec.activeDeadlineSeconds``, the second. Values that are not positive integers are left
    out (the Workload would be rejected for them).
    """
    meta = F.metadata(job)
    max_exec = _positive_int(F.obj_field(meta, "labels").get(MAX_EXEC_TIME_LABEL))
    annotations = F.obj_field(meta, "annotations")
    estimate = _positive_int(annotations.get(RUNTIME_ESTIMATE_ANNOTATION))
    if estimate is None:
        estimate = _positive_int(F.spec(job).get("activeDeadlineSeconds"))
    return max_exec, None if estimate is None else str(estimate)


def _positive_int(value: Any) -> int | None:
    if value is None:  # the usual case: raising and catching costs more than the rest
        return None
    try:
        n = int(str(value))
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None
