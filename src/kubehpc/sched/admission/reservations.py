"""Backfill and start-time estimates in the admission core: reservations on a ClusterQueue's quota.

Kueue has no notion of time: under BestEffortFIFO any workload that fits is admitted, so a large
head can wait for ever behind a stream of small ones; under StrictFIFO nothing passes the head.
A ClusterQueue with a *backfill policy* sits in between, with the rules of ``sched.backfill``
(the simulator's): the quota the ClusterQueue may use is a pool, running workloads release
theirs at their estimated ends (admitted at + runtime estimate), and

- ``easy``: the first workload that does not fit gets a reservation — the shadow time at which
  enough quota will have been released, and the extra quota left over then. A later workload
  that fits now is admitted only if it ends by the shadow time or fits in the extra quota
  (``sched.backfill.may_backfill``); otherwise it waits (``WaitsForReservation``).
- ``conservative``: every workload that does not fit gets a reservation at its earliest slot in
  the capacity profile (``sched.backfill.Profile``); a later workload is admitted only if its
  earliest slot, given all those reservations, is now.

Reservations are recomputed from scratch at every decision (nothing is stored), as the
simulator's EASY does. The pool's dimensions are the ClusterQueue's (flavor, resource) cells;
what is available in each over time comes from the quota tree itself — releasing holders one
end at a time and asking the tree — so cohort borrowing and lending limits count exactly for
the releases. Workloads admitted in other ClusterQueues of the cohort during the same decision
do not see this queue's reservation (each queue protects its own head).

The same profile, built after the decision for every ClusterQueue, gives each pending workload
its estimated start (``estimated_starts``): what ``squeue --start`` shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from kubehpc.api import fields as F
from kubehpc.sched.admission.model import (
    BACKFILL_POLICIES,
    CONSERVATIVE_BACKFILL,
    EASY_BACKFILL,
    NO_BACKFILL,
    Workload,
)
from kubehpc.sched.admission.quota import QuotaTree
from kubehpc.sched.admission.state import Holder
from kubehpc.sched.backfill import (
    MIN_REMAINING,
    NO_TIME,
    FloatArray,
    IntArray,
    Profile,
    may_backfill,
    shadow_time,
)

BACKFILL_ANNOTATION = "kubehpc.io/backfill"
"""On a ClusterQueue: ``none``, ``easy`` or ``conservative`` (overrides the scheduler config)."""
RUNTIME_ESTIMATE_ANNOTATION = "kubehpc.io/runtime-estimate-seconds"
"""On a Workload (copied from its job): the expected run time in seconds."""
INVALID_BACKFILL_POLICY = "InvalidBackfillPolicy"


def backfill_policy_of(annotations: dict[str, Any]) -> tuple[str, str]:
    """(policy, problem): the ClusterQueue's own policy ("" when it names none) and, for a
    value that is not a policy, the message that makes the ClusterQueue inactive."""
    value = annotations.get(BACKFILL_ANNOTATION)
    if value is None:
        return "", ""
    text = str(value).strip().lower()
    if text in BACKFILL_POLICIES:
        return text, ""
    return "", (
        f"Can't admit new workloads: annotation {BACKFILL_ANNOTATION}={value!r} is not one of "
        f"{', '.join(BACKFILL_POLICIES)}."
    )


def _seconds(value: Any) -> float | None:
    if value is None:  # the common case: no raise and catch (each admission cycle, per workload)
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if seconds > 0 and math.isfinite(seconds) else None


def runtime_estimate_of(meta: dict[str, Any], spec: dict[str, Any]) -> float | None:
    """A Workload's runtime estimate, from the most specific source it has:

    1. annotation ``kubehpc.io/runtime-estimate-seconds`` (sbatch --time, or the job's own);
    2. ``spec.maximumExecutionTimeSeconds`` (Kueue's; label ``kueue.x-k8s.io/max-exec-time-seconds``
       on the job);
    3. the longest ``activeDeadlineSeconds`` of its pod templates.

    None when it has none (or only values that are not positive numbers): such a workload is
    expected to run for ever — it never releases quota in a plan, and can only backfill into
    quota no reservation needs.
    """
    annotations = F.obj_field(meta, "annotations")
    if RUNTIME_ESTIMATE_ANNOTATION in annotations:
        found = _seconds(annotations[RUNTIME_ESTIMATE_ANNOTATION])
        if found is not None:
            return found
    found = _seconds(spec.get("maximumExecutionTimeSeconds"))
    if found is not None:
        return found
    deadlines = [
        _seconds(F.spec(F.obj_field(ps, "template")).get("activeDeadlineSeconds"))
        for ps in F.object_list(spec, "podSets")
    ]
    known = [d for d in deadlines if d is not None]
    return max(known) if known else None


def policy_of(cq_policy: str, default: str) -> str:
    return cq_policy or default or NO_BACKFILL


def duration(wl: Workload) -> float:
    est = wl.runtime_estimate
    return NO_TIME if est is None else max(est, MIN_REMAINING)


def expected_end(h: Holder, now: float, leaving: bool) -> float:
    """When a holder gives its quota back: soon when it is being evicted, else at its estimated
    end (``now + MIN_REMAINING`` once past it: its quota is not free now)."""
    if leaving or h.evicted:
        return now + MIN_REMAINING
    est = h.wl.runtime_estimate
    if est is None:
        return NO_TIME
    return max(h.reserved_at + est, now + MIN_REMAINING)


def release_series(
    tree: QuotaTree,
    node: int,
    dims: list[int],
    holders: Iterable[Holder],
    now: float,
    leaving: set[int],
) -> tuple[FloatArray, IntArray]:
    """(times, available): ``available[i]`` is what ClusterQueue ``node`` may take of each cell
    in ``dims`` from ``times[i]`` on (``times[0] = now``), as holders with a known end release
    their quota. The tree is left as it was found."""
    wanted = set(dims)
    ends: list[tuple[float, int, Holder]] = []
    for i, h in enumerate(holders):
        if h.frs.isdisjoint(wanted):
            continue
        end = expected_end(h, now, id(h) in leaving)
        if end != NO_TIME:
            ends.append((end, i, h))
    ends.sort(key=lambda e: (e[0], e[1]))
    times = [now]
    rows = [[tree.available(node, fr) for fr in dims]]
    released: list[Holder] = []
    k = 0
    while k < len(ends):
        t = ends[k][0]
        while k < len(ends) and ends[k][0] == t:
            h = ends[k][2]
            tree.add(h.cq, h.usage, -1)
            released.append(h)
            k += 1
        times.append(t)
        rows.append([tree.available(node, fr) for fr in dims])
    for h in released:
        tree.add(h.cq, h.usage)
    return np.array(times, dtype=np.float64), np.array(rows, dtype=np.int64).reshape(len(times), len(dims))


class QueueReservations:
    """One ClusterQueue's reservations during one decision (or one estimate pass)."""

    __slots__ = (
        "_series",
        "dims",
        "extra",
        "head",
        "index",
        "now",
        "policy",
        "profile",
        "reserved",
        "shadow",
    )

    def __init__(
        self, policy: str, dims: list[int], times: FloatArray, available: IntArray, now: float
    ) -> None:
        self.policy = policy
        self.dims = dims
        self.index = {fr: i for i, fr in enumerate(dims)}
        self.now = now
        self.head: Workload | None = None
        self.shadow = NO_TIME
        self.extra = np.zeros(len(dims), dtype=np.int64)
        self.reserved: dict[str, float] = {}
        """Workload key -> its reservation (EASY: the head's shadow time)."""
        if policy == EASY_BACKFILL:
            self._series = (times[1:], available[1:])
            self.profile: Profile | None = None
        else:
            self._series = (times[:0], available[:0])
            self.profile = Profile(times.copy(), available.copy())

    def size(self, usage: Iterable[tuple[int, int]]) -> IntArray:
        out = np.zeros(len(self.dims), dtype=np.int64)
        for fr, amount in usage:
            i = self.index.get(fr)
            if i is not None:
                out[i] += amount
        return out

    def block(self, wl: Workload, size: IntArray, not_before: float = -math.inf) -> float:
        """``wl`` does not fit now: give it a reservation (EASY: only the first one). Returns
        the reservation, ``inf`` for none or never."""
        if self.profile is None:
            if self.head is not None:
                return NO_TIME
            self.head = wl
            ends, available = self._series
            self.shadow, self.extra = shadow_time(ends, available, size)
            self.reserved[wl.key] = self.shadow
            return self.shadow
        d = duration(wl)
        t = self.profile.earliest(size, d, not_before)
        if t != NO_TIME:
            self.profile.add(t, d, size)
            self.reserved[wl.key] = t
        return t

    def admits(self, wl: Workload, size: IntArray) -> bool:
        """Whether ``wl``, which fits now, may be admitted without delaying a reservation."""
        if self.profile is None:
            if self.head is None:
                return True
            est = np.array([duration(wl)], dtype=np.float64)
            return bool(may_backfill(self.now, est, size.reshape(1, -1), self.shadow, self.extra)[0])
        return self.profile.earliest(size, duration(wl)) <= self.now

    def take(self, wl: Workload, size: IntArray) -> None:
        """``wl`` was admitted now: it holds its quota until its estimated end."""
        if self.profile is None:
            if self.head is not None and self.now + duration(wl) > self.shadow:
                self.extra = self.extra - size
            return
        self.profile.add(self.now, duration(wl), size)

    def blocker(self) -> tuple[str, float]:
        """The reservation a workload that may not backfill would delay (EASY: the head's;
        conservative: the earliest one)."""
        if self.head is not None:
            return self.head.key, self.shadow
        if not self.reserved:
            return "", NO_TIME
        key = min(self.reserved, key=lambda k: (self.reserved[k], k))
        return key, self.reserved[key]


__all__ = [
    "BACKFILL_ANNOTATION",
    "CONSERVATIVE_BACKFILL",
    "EASY_BACKFILL",
    "INVALID_BACKFILL_POLICY",
    "NO_BACKFILL",
    "RUNTIME_ESTIMATE_ANNOTATION",
    "QueueReservations",
    "backfill_policy_of",
    "release_series",
    "runtime_estimate_of",
]
