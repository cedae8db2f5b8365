"""The discrete-event replay: a virtual clock, submit and finish events, and the queue policy.

Every decision — which jobs start — is made by ``sched.backfill`` (the same functions the live
scheduler calls); this module only keeps the books: the queue in policy order, the running
jobs, the clock. At each instant with an event, finishes are taken first, then submits, then
the policy decides once; so a job may start at the very second it is submitted or a
neighbour ends.

Hot-path notes (why the code looks the way it does): the queue lives in preallocated arrays
(one row per job of the trace) whose live window ``[lo, hi)`` is handed to the policy as views,
so no decision copies the queue; starts from the head just move ``lo``; running jobs hold fixed
slots (a finished slot keeps size zero, which every policy ignores) so their arrays are views
too; finishes come off a heap.
"""

from __future__ import annotations

import enum
import heapq
import math
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from kubehpc.sched.backfill import Policy, Pool, decide_starts, estimated_starts
from kubehpc.sim.estimates import EstimateSource, UserPredictor, run_times, static_estimates
from kubehpc.sim.traces.common import FloatArray, IntArray, Trace


class NodePolicy(enum.StrEnum):
    """Policies only the node-level replay (``sim/nodes.py``) has."""

    FIRST_FIT = "first-fit"
    """The live gang scheduler's rule: every waiting gang that fits starts, in queue order."""


class Placement(enum.StrEnum):
    POOL = "pool"
    """One bin per resource, no nodes (the golden figures' convention)."""
    NODES = "nodes"
    """Every pod on a node of the cluster config, each job as a gang (``sim/nodes.py``)."""


@dataclass(frozen=True)
class SimOptions:
    policy: Policy | NodePolicy = Policy.FCFS
    estimate: EstimateSource = EstimateSource.REQUESTED
    kill_at_limit: bool = False
    start_estimates: bool = False
    """Also record each job's estimated start at submit (the conservative profile) to measure
    estimate accuracy. Costs a profile per submit, so it is off for speed runs. Under
    conservative the estimate is the job's first reservation, recorded always (it is free)."""


@dataclass
class SimResult:
    trace: Trace
    """The trace as replayed (jobs larger than the machine already dropped)."""
    options: SimOptions
    capacity: IntArray
    start: FloatArray
    run: FloatArray
    estimate: FloatArray
    backfilled: np.ndarray
    predicted_start: FloatArray
    """nan unless ``start_estimates``."""
    event_times: FloatArray
    event_used: IntArray
    event_queue: IntArray
    decisions: int
    policy_seconds: float
    wall_seconds: float
    notes: Counter[str] = field(default_factory=Counter)
    placement: Placement = Placement.POOL
    job_nodes: IntArray | None = None
    """Node-level replay only: per job, how many distinct nodes its pods ran on."""
    job_domains: list[str] | None = None
    """Node-level replay only: per job, the topology domain of each pod set that asked for one."""


class _Queue:
    """Waiting jobs in policy order, as contiguous array windows ``[lo, hi)``."""

    __slots__ = ("est", "hi", "jobs", "key", "lo", "res", "sizes")

    def __init__(self, n: int, resources: int) -> None:
        self.jobs = np.empty(n, dtype=np.int64)
        self.sizes = np.empty((n, resources), dtype=np.int64)
        self.est = np.empty(n, dtype=np.float64)
        self.key = np.empty(n, dtype=np.int64)
        self.res = np.empty(n, dtype=np.float64)
        self.lo = 0
        self.hi = 0

    def push(self, job: int, key: int, size: IntArray, est: float) -> int:
        """Insert in key order; return the window position it went to."""
        lo, hi = self.lo, self.hi
        if hi > lo and key < self.key[hi - 1]:
            # Out of arrival order (a higher priority): shift the tail right by one.
            at = lo + int(np.searchsorted(self.key[lo:hi], key, side="right"))
            for arr in (self.jobs, self.sizes, self.est, self.key, self.res):
                arr[at + 1 : hi + 1] = arr[at:hi]
        else:
            at = hi
        self.jobs[at] = job
        self.sizes[at] = size
        self.est[at] = est
        self.key[at] = key
        self.res[at] = np.nan
        self.hi = hi + 1
        return at - lo

    def remove(self, positions: IntArray) -> None:
        """Drop the entries at these window positions (ascending).

        Entries move towards whichever end is nearer, so a backfilled job near the head of a
        long queue costs a few moves, not a copy of the queue.
        """
        k = len(positions)
        if k == 0:
            return
        first, last = int(positions[0]), int(positions[-1])
        if last == k - 1:  # all from the head
            self.lo += k
            return
        lo, hi = self.lo, self.hi
        arrays = (self.jobs, self.sizes, self.est, self.key, self.res)
        if last + 1 <= hi - lo - first:
            # Close the gaps by moving the survivors of [0, last] right, up against last.
            keep = np.ones(last + 1, dtype=np.bool_)
            keep[positions] = False
            for arr in arrays:
                arr[lo + k : lo + last + 1] = arr[lo : lo + last + 1][keep]
            self.lo = lo + k
        else:
            # Close the gaps by moving the survivors of [first, end) left, up against first.
            keep = np.ones(hi - lo - first, dtype=np.bool_)
            keep[positions - first] = False
            for arr in arrays:
                arr[lo + first : hi - k] = arr[lo + first : hi][keep]
            self.hi = hi - k


class _Slots:
    """Running jobs in fixed slots: estimated end, limit and size; a free slot has size zero."""

    __slots__ = ("ends", "free", "high", "limits", "sizes", "views")

    def __init__(self, resources: int) -> None:
        self.ends = np.zeros(64, dtype=np.float64)
        self.limits = np.zeros(64, dtype=np.float64)
        self.sizes = np.zeros((64, resources), dtype=np.int64)
        self.free: list[int] = []
        self.high = 0
        self.views = self._views()

    def _views(self) -> tuple[FloatArray, IntArray, FloatArray]:
        """The slots in use, as views (kept, not sliced per decision: they change only when
        the high-water mark moves)."""
        h = self.high
        return self.ends[:h], self.sizes[:h], self.limits[:h]

    def take(self, end: float, limit: float, size: IntArray) -> int:
        if self.free:
            slot = self.free.pop()
        else:
            slot = self.high
            if slot == len(self.ends):
                self.ends = np.concatenate([self.ends, np.zeros_like(self.ends)])
                self.limits = np.concatenate([self.limits, np.zeros_like(self.limits)])
                self.sizes = np.concatenate([self.sizes, np.zeros_like(self.sizes)])
            self.high += 1
            self.views = self._views()
        self.ends[slot] = end
        self.limits[slot] = limit
        self.sizes[slot] = size
        return slot

    def release(self, slot: int) -> float:
        self.sizes[slot] = 0
        self.free.append(slot)
        return float(self.ends[slot])


def simulate(trace: Trace, capacity: IntArray, options: SimOptions) -> SimResult:
    """Replay ``trace`` on a pool of ``capacity``; jobs larger than it are dropped (counted)."""
    wall0 = time.perf_counter()
    policy = options.policy
    if not isinstance(policy, Policy):
        raise ValueError(f"policy {policy} needs the node-level replay (--placement nodes)")
    trace = trace.fit_to(capacity)
    n = len(trace)
    nres = len(trace.resources)
    runs, notes = run_times(trace, options.kill_at_limit)
    static, est_notes = static_estimates(trace, runs, options.estimate)
    notes.update(est_notes)
    predictor = UserPredictor() if options.estimate is EstimateSource.PREDICTOR else None
    estimate = static.copy()
    submit_l: list[float] = trace.submit.tolist()
    run_l: list[float] = runs.tolist()
    users_l: list[int] = trace.users.tolist()
    requested_l: list[float] = trace.requested.tolist()
    static_l: list[float] = static.tolist()
    # Queue order: higher priority first, then (submit, id) — the trace's row order.
    keys: list[int] = (-trace.priority * (n + 1) + np.arange(n)).tolist()
    sizes = trace.sizes
    size_rows = list(sizes)

    start = np.full(n, np.nan)
    backfilled = np.zeros(n, dtype=np.bool_)
    predicted = np.full(n, np.nan)
    free = capacity.astype(np.int64).copy()
    queue = _Queue(n, nres)
    slots = _Slots(nres)
    heap: list[tuple[float, int, int]] = []
    # One event instant per submit and per finish at most, plus rare wake-ups.
    ev_t = np.empty(2 * n + 1, dtype=np.float64)
    ev_free = np.empty((2 * n + 1, nres), dtype=np.int64)
    ev_q = np.empty(2 * n + 1, dtype=np.int64)
    events = 0
    decisions = 0
    policy_seconds = 0.0
    conservative = policy is Policy.CONSERVATIVE
    i = 0
    inf = math.inf
    wake = inf  # when the last plan asked to be asked again (Plan.wake_at)
    while i < n or heap or wake < inf:
        t_sub = submit_l[i] if i < n else inf
        now = heap[0][0] if heap and heap[0][0] <= t_sub else t_sub
        if wake < now:
            now = wake
        wake = inf
        freed_early = False
        while heap and heap[0][0] == now:
            _, j, slot = heapq.heappop(heap)
            free += size_rows[j]
            if slots.release(slot) > now:
                freed_early = True
            if predictor is not None:
                predictor.finished(users_l[j], run_l[j])
        first_new = i
        while i < n and submit_l[i] == now:
            est = static_l[i]
            if predictor is not None:
                est = predictor.predict(users_l[i], est, requested_l[i])
                estimate[i] = est
            queue.push(i, keys[i], size_rows[i], est)
            i += 1
        lo, hi = queue.lo, queue.hi
        if hi > lo:
            run_ends, run_sizes, run_limits = slots.views
            pool = Pool(
                now,
                capacity,
                free,
                queue.sizes[lo:hi],
                queue.est[lo:hi],
                run_ends,
                run_sizes,
                queue.res[lo:hi] if conservative else None,
                run_limits,
            )
            t0 = time.perf_counter()
            plan = decide_starts(policy, pool, compress=freed_early)
            if (options.start_estimates or conservative) and first_new < i:
                _record_estimates(predicted, queue, pool, plan.reservations, range(first_new, i), now, policy)
            policy_seconds += time.perf_counter() - t0
            decisions += 1
            wake = plan.wake_at
            if plan.reservations is not None:
                queue.res[lo:hi] = plan.reservations
            starts = plan.starts
            if len(starts):
                blocked = plan.first_blocked
                for p in starts.tolist():
                    j = int(queue.jobs[lo + p])
                    est = float(queue.est[lo + p])
                    start[j] = now
                    if p > blocked:
                        backfilled[j] = True
                    size = size_rows[j]
                    free -= size
                    slot = slots.take(now + est, now + requested_l[j], size)
                    heapq.heappush(heap, (now + run_l[j], j, slot))
                queue.remove(starts)
        if events == len(ev_t):  # wake-ups (Plan.wake_at) can add instants beyond 2n
            ev_t = np.concatenate([ev_t, np.empty_like(ev_t)])
            ev_free = np.concatenate([ev_free, np.empty_like(ev_free)])
            ev_q = np.concatenate([ev_q, np.empty_like(ev_q)])
        ev_t[events] = now
        ev_free[events] = free
        ev_q[events] = queue.hi - queue.lo
        events += 1
    return SimResult(
        trace=trace,
        options=options,
        capacity=capacity,
        start=start,
        run=runs,
        estimate=estimate,
        backfilled=backfilled,
        predicted_start=predicted,
        event_times=ev_t[:events].copy(),
        event_used=capacity - ev_free[:events],
        event_queue=ev_q[:events].copy(),
        decisions=decisions,
        policy_seconds=policy_seconds,
        wall_seconds=time.perf_counter() - wall0,
        notes=notes,
    )


def _record_estimates(
    predicted: FloatArray,
    queue: _Queue,
    pool: Pool,
    reservations: FloatArray | None,
    new_jobs: range,
    now: float,
    policy: Policy,
) -> None:
    """The estimated start of each job submitted at ``now``, as the live system would show it.

    Under conservative it is the reservation just made; otherwise the conservative profile of
    the queue as it stood before this decision's starts (a job starting now gets ``now``),
    without backfilling under FCFS.
    """
    lo, hi = queue.lo, queue.hi
    if reservations is not None:
        plan_times = reservations
    else:
        plan_times = estimated_starts(pool, in_order=policy is Policy.FCFS)
    window = queue.jobs[lo:hi]
    # New jobs usually go to the back, but a higher priority puts one among the waiting ones.
    positions = np.flatnonzero((window >= new_jobs.start) & (window < new_jobs.stop))
    for job, pos in zip(window[positions].tolist(), positions.tolist(), strict=True):
        predicted[job] = max(float(plan_times[pos]), now)
