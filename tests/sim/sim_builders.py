"""Hand-built traces for simulator tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubehpc.sched.backfill import Policy
from kubehpc.sim.engine import SimOptions, SimResult, simulate
from kubehpc.sim.estimates import EstimateSource
from kubehpc.sim.traces.common import Trace, build_trace


def trace(
    jobs: Sequence[tuple[float, int, float, float | None]], users: Sequence[int] | None = None
) -> Trace:
    """``jobs``: (submit, size, run, requested time or None), ids 1.. in the given order."""
    n = len(jobs)
    return build_trace(
        "hand-built",
        ("cpu",),
        np.arange(1, n + 1, dtype=np.int64),
        np.array([j[0] for j in jobs], dtype=np.float64),
        np.array([j[2] for j in jobs], dtype=np.float64),
        np.array([np.nan if j[3] is None else j[3] for j in jobs], dtype=np.float64),
        np.array([[j[1]] for j in jobs], dtype=np.int64).reshape(n, 1),
        users=None if users is None else np.array(users, dtype=np.int64),
        user_names=tuple(f"u{i}" for i in range(max(users or [0]) + 1)),
    )


def run(
    jobs: Sequence[tuple[float, int, float, float | None]],
    capacity: int,
    policy: Policy,
    estimate: EstimateSource = EstimateSource.REQUESTED,
    kill_at_limit: bool = False,
    users: Sequence[int] | None = None,
    start_estimates: bool = False,
) -> SimResult:
    return simulate(
        trace(jobs, users),
        np.array([capacity], dtype=np.int64),
        SimOptions(policy, estimate, kill_at_limit, start_estimates),
    )


def starts(result: SimResult) -> dict[int, float]:
    """Job id -> start time."""
    return {int(i): float(s) for i, s in zip(result.trace.ids, result.start, strict=True)}
