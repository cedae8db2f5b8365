"""Figures of merit for one replay: per job, overall, over time, per user and per queue.

wait = start - submit; response = wait + run; bounded slowdown with tau = 10 s:
``max(1, (wait + run) / max(run, tau))`` (RLScheduler's job_score, the golden figures').
Utilisation = resource-seconds used / (capacity x makespan), makespan = last end - first submit.
Fairness: Jain's index ``(sum x)^2 / (n sum x^2)`` over per-user (per-queue) mean bounded
slowdown — 1 when every user is treated alike, 1/n when one user takes all the waiting.
Estimate accuracy: predicted start (at submit) vs actual start, for jobs that waited.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubehpc.sim.engine import SimResult
from kubehpc.sim.traces.common import FloatArray

TAU = 10.0


def waits(r: SimResult) -> FloatArray:
    return r.start - r.trace.submit


def bounded_slowdowns(r: SimResult, tau: float = TAU) -> FloatArray:
    w = waits(r)
    return np.maximum(1.0, (w + r.run) / np.maximum(r.run, tau))


def _stats(x: FloatArray) -> dict[str, float | None]:
    if len(x) == 0:
        return {"mean": None, "median": None, "p95": None, "max": None}
    return {
        "mean": float(x.mean()),
        "median": float(np.median(x)),
        "p95": float(np.percentile(x, 95)),
        "max": float(x.max()),
    }


def jain(values: FloatArray) -> float | None:
    if len(values) == 0 or not np.any(values):
        return None
    return float(values.sum() ** 2 / (len(values) * (values**2).sum()))


def _groups(codes: np.ndarray, names: tuple[str, ...], w: FloatArray, b: FloatArray) -> dict[str, Any]:
    per: dict[str, dict[str, float]] = {}
    for code in np.unique(codes):
        mask = codes == code
        name = names[code] if 0 <= code < len(names) else "unknown"
        per[name] = {
            "jobs": int(mask.sum()),
            "avg_wait_s": float(w[mask].mean()),
            "avg_bsld": float(b[mask].mean()),
        }
    means = np.array([v["avg_bsld"] for v in per.values()])
    return {"count": len(per), "jain_bsld": jain(means), "groups": per}


def utilization(r: SimResult) -> FloatArray:
    """Per resource, used resource-seconds over capacity x makespan."""
    if len(r.start) == 0:
        return np.zeros(len(r.capacity))
    makespan = float((r.start + r.run).max() - r.trace.submit.min())
    used = (r.trace.sizes * r.run[:, None]).sum(axis=0)
    if makespan <= 0:
        return np.zeros(len(r.capacity))
    return np.asarray(used / (r.capacity * makespan), dtype=np.float64)


def estimate_accuracy(r: SimResult) -> dict[str, float | int | None]:
    known = ~np.isnan(r.predicted_start)
    waited = known & (r.start > r.trace.submit)
    if not waited.any():
        return {"jobs": 0, "mean_abs_error_s": None, "median_abs_error_s": None, "late_fraction": None}
    err = r.start[waited] - r.predicted_start[waited]
    return {
        "jobs": int(waited.sum()),
        "mean_abs_error_s": float(np.abs(err).mean()),
        "median_abs_error_s": float(np.median(np.abs(err))),
        "late_fraction": float((err > 0).mean()),
    }


def summary(r: SimResult) -> dict[str, Any]:
    """The single JSON object ``kubehpc sim --json`` prints."""
    w = waits(r)
    b = bounded_slowdowns(r)
    resp = w + r.run
    util = utilization(r)
    n = len(w)
    skipped = dict(r.trace.skipped)
    return {
        "trace": r.trace.name,
        "policy": str(r.options.policy),
        "placement": str(r.placement),
        "estimate": str(r.options.estimate),
        "kill_at_limit": r.options.kill_at_limit,
        "resources": dict(zip(r.trace.resources, r.capacity.tolist(), strict=True)),
        "records": r.trace.records,
        "jobs": n,
        "skipped": sum(skipped.values()),
        "skipped_by_reason": skipped,
        "adjusted_by_reason": {**dict(r.trace.adjusted), **dict(r.notes)},
        "avg_wait_s": float(w.mean()) if n else None,
        "avg_bsld": float(b.mean()) if n else None,
        "max_wait_s": float(w.max()) if n else None,
        "wait_s": _stats(w),
        "response_s": _stats(resp),
        "bsld": _stats(b),
        "utilization": float(util[0]) if len(util) else None,
        "utilization_by_resource": dict(zip(r.trace.resources, util.tolist(), strict=True)),
        "backfilled_jobs": int(r.backfilled.sum()),
        "makespan_s": float((r.start + r.run).max() - r.trace.submit.min()) if n else 0.0,
        "max_queue_length": int(r.event_queue.max()) if len(r.event_queue) else 0,
        "users": _groups(r.trace.users, r.trace.user_names, w, b) if n else None,
        "queues": _groups(r.trace.queues, r.trace.queue_names, w, b) if n else None,
        "start_estimates": estimate_accuracy(r) if not np.isnan(r.predicted_start).all() else None,
        "decisions": r.decisions,
        "sim_seconds": r.wall_seconds,
        "policy_seconds": r.policy_seconds,
        "jobs_per_s": n / r.wall_seconds if r.wall_seconds > 0 else None,
    }
