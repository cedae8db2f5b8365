"""Where the runtime estimates a policy plans with come from, and how long jobs really run.

- ``requested`` (default): the user's requested time; the run time when the trace has none;
  raised to the run time when smaller (unless jobs are killed at their limit, where the run is
  cut to the requested time instead). This is the golden figures' convention.
- ``actual``: the real run time (an oracle: the best any estimate can be).
- ``predictor``: the mean of the user's last two *finished* jobs' run times (Tsafrir, Etsion &
  Feitelson 2007), capped at the requested time; the requested time (or the run time when the
  trace has none) until the user has a finished job. Computed online as the replay runs, so it
  never looks into the future. A job can outlive a predicted estimate; the policies then
  expect it to end ``sched.backfill.MIN_REMAINING`` seconds from now.
"""

from __future__ import annotations

import enum
from collections import Counter

import numpy as np

from kubehpc.sim.traces.common import NO_REQUESTED_TIME, RAISED_TO_RUNTIME, FloatArray, Trace

KILLED_AT_LIMIT = "run time > requested time: killed at the limit"


class EstimateSource(enum.StrEnum):
    REQUESTED = "requested"
    ACTUAL = "actual"
    PREDICTOR = "predictor"


def run_times(trace: Trace, kill_at_limit: bool) -> tuple[FloatArray, Counter[str]]:
    """How long each job runs: its trace run time, cut to the requested time when killed."""
    notes: Counter[str] = Counter()
    if not kill_at_limit:
        return trace.run, notes
    over = trace.run > trace.requested  # nan compares False: no limit, never killed
    if over.any():
        notes[KILLED_AT_LIMIT] = int(over.sum())
    return np.where(over, trace.requested, trace.run), notes


def static_estimates(
    trace: Trace, runs: FloatArray, source: EstimateSource
) -> tuple[FloatArray, Counter[str]]:
    """Estimates known at submit: ``requested`` and ``actual``; for ``predictor`` the fallback
    used before a user has history (the same as ``requested``)."""
    notes: Counter[str] = Counter()
    if source is EstimateSource.ACTUAL:
        return runs.copy(), notes
    missing = np.isnan(trace.requested)
    if missing.any():
        notes[NO_REQUESTED_TIME] = int(missing.sum())
    est = np.where(missing, runs, trace.requested)
    low = est < runs
    if low.any():
        notes[RAISED_TO_RUNTIME] = int(low.sum())
        est = np.maximum(est, runs)
    return est, notes


class UserPredictor:
    """Online per-user predictor: mean of the last two finished run times, capped at the limit."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[int, tuple[float, ...]] = {}

    def predict(self, user: int, fallback: float, limit: float) -> float:
        history = self._last.get(user)
        if not history:
            return fallback
        guess = sum(history) / len(history)
        return min(guess, limit) if limit == limit else guess  # limit is nan when unknown

    def finished(self, user: int, run: float) -> None:
        previous = self._last.get(user, ())
        self._last[user] = (*previous[-1:], run)
