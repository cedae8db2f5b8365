"""Queue policies over one pool of resources: FCFS, EASY backfilling, conservative backfilling.

These decide *which queued jobs start now*, given what is free and when the running jobs are
expected to end. They are pure functions of arrays — no I/O, clock or randomness — so the
simulator (virtual time) and the live scheduler (wall time) call the very same rules.
``docs/simulator.md`` defines each policy; the short version:

- **FCFS**: start jobs from the head of the queue while the head fits; the first job that does
  not fit blocks everything behind it.
- **EASY** (Lifka; Mu'alem & Feitelson 2001): FCFS, then one reservation for the blocked head —
  the *shadow time*, the earliest estimated end of running jobs at which the head fits, and the
  *extra* capacity, what is free at the shadow time beyond the head's request. A later job
  starts now if it fits in what is free now and either its estimate ends by the shadow time
  or it fits in the extra capacity (which it then consumes). Stateless: the shadow time and
  extra capacity are recomputed at every decision from the running jobs' estimated ends, so a
  job that ends early moves the reservation earlier at once.
- **Conservative**: every queued job holds a reservation in a capacity profile; a new job gets
  the earliest slot that delays no existing reservation; when capacity frees up early, each
  job in queue order is lifted out and put back at its earliest slot given all the others, so
  a reservation never moves later (while estimates are upper bounds on run times).

Shapes: ``R`` resources (one for a processor pool; cpu and gpus side by side for more);
``sizes`` are ``int64 [n, R]``, ``free`` and ``capacity`` are ``int64 [R]``, times are float64
seconds on the caller's clock. The queue is given in queue order (the caller's priority order,
ties already broken deterministically); results name queue positions.

A running job still running past its estimated end is expected to run until its time limit
when it has one (``Pool.running_limits``), else — or once past that too — to end
``MIN_REMAINING`` seconds from now (estimates and trace times are whole seconds); never
"already", because the capacity it holds is not free now.
"""

from __future__ import annotations

import enum
import heapq
import math
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MIN_REMAINING = 1.0
NO_TIME = math.inf
_EMPTY_INDEX: IntArray = np.zeros(0, dtype=np.int64)


class Policy(enum.StrEnum):
    FCFS = "fcfs"
    EASY = "easy"
    CONSERVATIVE = "conservative"


@dataclass(frozen=True, slots=True)
class Pool:
    """What a queue policy sees at one decision.

    ``running_ends`` are the *estimated* ends of the running jobs (start + estimate); an entry
    with a zero size is ignored, so callers may keep fixed slots. ``reservations`` (conservative
    only) are the planned starts the previous decision returned, per queue entry, ``nan`` for
    a job that has none yet (just submitted).
    """

    now: float
    capacity: IntArray
    free: IntArray
    queue_sizes: IntArray
    queue_estimates: FloatArray
    running_ends: FloatArray
    running_sizes: IntArray
    reservations: FloatArray | None = None
    running_limits: FloatArray | None = None
    """Per running job, the end its time limit allows (start + requested time; ``nan`` for
    none). A job past its estimated end is expected to run until then (Tsafrir et al.'s
    correction for a prediction that proved too short)."""


def expected_ends(pool: Pool) -> FloatArray:
    """When each running job is expected to end: its estimated end, or its limit once past
    the estimate (the policies then clamp to ``now + MIN_REMAINING``)."""
    ends = pool.running_ends
    limits = pool.running_limits
    if limits is None:
        return ends
    now = pool.now
    return np.where((ends <= now) & (limits > now), limits, ends)


@dataclass(frozen=True, slots=True)
class Plan:
    """The jobs to start now and what the policy promises the rest.

    ``starts``: queue positions, ascending. ``first_blocked``: the position of the first job
    left waiting (queue length when none) — a start after it jumped the queue (backfilled).
    ``head_reservation``: EASY's shadow time for that job when it was computed, else ``inf``.
    ``reservations``: conservative only, every queue entry's planned start (``now`` for those
    starting).
    """

    starts: IntArray
    first_blocked: int
    head_reservation: float = NO_TIME
    reservations: FloatArray | None = None
    wake_at: float = NO_TIME
    """The next instant this plan starts a job by itself (the earliest future reservation):
    the caller must decide again then, even if no job ends or arrives — a job that ended
    early may have left a reservation at an instant when nothing else happens."""


def decide_starts(policy: Policy, pool: Pool, compress: bool = True) -> Plan:
    """Dispatch on ``policy``; ``compress`` matters to conservative only (see there)."""
    if policy is Policy.FCFS:
        return fcfs(pool)
    if policy is Policy.EASY:
        return easy(pool)
    return conservative(pool, compress)


def _fit_rows(sizes: IntArray, free: IntArray) -> BoolArray:
    """Which rows of ``sizes`` fit in ``free``, every resource. One resource — the common pool
    of processors — takes a 1-D comparison, several times cheaper than a 2-D reduction."""
    if sizes.shape[1] == 1:
        one: BoolArray = sizes[:, 0] <= free[0]
        return one
    return cast(BoolArray, (sizes <= free).all(axis=1))


def _start_heads(pool: Pool) -> tuple[int, IntArray]:
    """Start jobs from the head while they fit: how many, and what is left free."""
    sizes = pool.queue_sizes
    free = pool.free
    n = len(sizes)
    k = 0
    if sizes.shape[1] == 1:
        room = int(free[0])
        while k < n and (need := int(sizes[k, 0])) <= room:
            room -= need
            k += 1
        return k, np.array([room], dtype=np.int64) if k else free
    while k < n and bool((sizes[k] <= free).all()):
        free = free - sizes[k]
        k += 1
    return k, free


def fcfs(pool: Pool) -> Plan:
    k, _ = _start_heads(pool)
    return Plan(np.arange(k, dtype=np.int64) if k else _EMPTY_INDEX, k)


def head_reservation(
    now: float,
    free: IntArray,
    head_size: IntArray,
    running_ends: FloatArray,
    running_sizes: IntArray,
) -> tuple[float, IntArray]:
    """EASY's reservation for a head that does not fit now: (shadow time, extra capacity).

    Running jobs are released in order of estimated end (ties: all jobs ending at the same
    instant are released together). The shadow time is the first end at which what is free
    reaches the head's request; the extra capacity is everything free at that instant — counting
    every job ending at or before it — minus the head's request. A head that cannot fit even
    on an empty pool gets (inf, zero extra): it blocks no one.
    """
    if len(running_ends) == 0:
        return NO_TIME, np.zeros_like(free)
    ends = np.maximum(running_ends, now + MIN_REMAINING)
    order = np.argsort(ends, kind="stable")
    sorted_ends = ends[order]
    available = free + np.cumsum(running_sizes[order], axis=0)
    return shadow_time(sorted_ends, available, head_size)


def shadow_time(sorted_ends: FloatArray, available: IntArray, head_size: IntArray) -> tuple[float, IntArray]:
    """EASY's reservation from a release series: ``available[i]`` is what is free once every
    job ending at or before ``sorted_ends[i]`` (ascending) has ended. The admission core builds
    the series from its quota tree (where a release does not simply add up) and calls this."""
    enough = _fit_rows(-available, -head_size)  # available >= head, every resource
    if not enough.any():
        return NO_TIME, np.zeros_like(head_size)
    first = int(enough.argmax())
    shadow = float(sorted_ends[first])
    last = int(np.searchsorted(sorted_ends, shadow, side="right")) - 1
    return shadow, available[last] - head_size


def may_backfill(
    now: float, estimates: FloatArray, sizes: IntArray, shadow: float, extra: IntArray
) -> BoolArray:
    """EASY's rule for jobs behind the blocked head that fit now: each may start if it ends by
    the shadow time or fits in the extra capacity (whoever starts on the extra consumes it).
    Rows of ``estimates``/``sizes`` are candidates; the result says which pass, each judged
    alone against ``extra`` as given."""
    ok: BoolArray = (now + estimates <= shadow) | _fit_rows(sizes, extra)
    return ok


def easy(pool: Pool) -> Plan:
    """FCFS, then backfill behind the blocked head without delaying its reservation."""
    k, free = _start_heads(pool)
    sizes = pool.queue_sizes
    n = len(sizes)
    heads = np.arange(k, dtype=np.int64) if k else _EMPTY_INDEX
    if k >= n - 1:
        return Plan(heads, k)
    now = pool.now
    scan = k + 1
    rest = sizes[scan:]
    fit_free = _fit_rows(rest, free)
    if not fit_free.any():
        # Nothing behind the head fits in what is free now: no need for the reservation.
        return Plan(heads, k)
    ends = expected_ends(pool)
    run_sizes = pool.running_sizes
    if k:
        # The heads started by this decision hold capacity until their estimated ends too.
        ends = np.concatenate([ends, now + pool.queue_estimates[:k]])
        run_sizes = np.concatenate([run_sizes, sizes[:k]])
    shadow, extra = head_reservation(now, free, sizes[k], ends, run_sizes)
    short = now + pool.queue_estimates[scan:] <= shadow
    candidates = fit_free & may_backfill(now, pool.queue_estimates[scan:], rest, shadow, extra)
    starts = list(range(k))
    offset = 0
    while True:
        hits = np.flatnonzero(candidates[offset:])
        if len(hits) == 0:
            break
        j = offset + int(hits[0])
        size = rest[j]
        starts.append(scan + j)
        free = free - size
        if not short[j]:
            extra = extra - size
        offset = j + 1
        if offset >= len(rest):
            break
        tail = rest[offset:]
        candidates[offset:] = _fit_rows(tail, free) & (short[offset:] | _fit_rows(tail, extra))
    return Plan(np.array(starts, dtype=np.int64), k, shadow)


# ---------------------------------------------------------------------------------------------
# The capacity profile: free capacity as a step function of time.


class Profile:
    """Free capacity over time from ``times[0] = now`` on: ``free[i]`` holds on
    ``[times[i], times[i+1])``, the last row for ever after. Mutable scratch space owned by one
    decision; never shared."""

    __slots__ = ("free", "times")

    def __init__(self, times: FloatArray, free: IntArray) -> None:
        self.times = times
        self.free = free

    @classmethod
    def build(
        cls,
        now: float,
        free_now: IntArray,
        running_ends: FloatArray,
        running_sizes: IntArray,
        held_starts: FloatArray | None = None,
        held_durations: FloatArray | None = None,
        held_sizes: IntArray | None = None,
    ) -> Profile:
        """What is free now, growing as running jobs reach their estimated ends, less what the
        held intervals (reservations: start, duration, size) take. One sort, no per-job work."""
        used = (running_sizes != 0).any(axis=1)
        times = [np.array([now]), np.maximum(running_ends[used], now + MIN_REMAINING)]
        deltas = [np.zeros((1, len(free_now)), dtype=np.int64), running_sizes[used]]
        if held_starts is not None and held_durations is not None and held_sizes is not None:
            starts = np.maximum(held_starts, now)
            times += [starts, starts + held_durations]
            deltas += [-held_sizes, held_sizes]
        t = np.concatenate(times)
        d = np.concatenate(deltas)
        order = np.argsort(t, kind="stable")
        t = t[order]
        cum = free_now + np.cumsum(d[order], axis=0)
        # One row per distinct time, holding every change at or before it.
        last = np.flatnonzero(np.append(t[1:] != t[:-1], True))
        return cls(t[last].astype(np.float64), cum[last].astype(np.int64))

    def _split(self, t: float) -> int:
        """Make ``t`` a breakpoint; return its row."""
        times = self.times
        i = int(times.searchsorted(t, side="right")) - 1
        if times[i] == t:
            return i
        # concatenate, not np.insert: the same copy without np.insert's generic overhead.
        j = i + 1
        self.times = np.concatenate((times[:j], (t,), times[j:]))
        free = self.free
        self.free = np.concatenate((free[:j], free[i:j], free[j:]))
        return j

    def earliest(self, size: IntArray, duration: float, not_before: float = -math.inf) -> float:
        """The earliest start at a breakpoint where ``size`` fits for ``duration`` seconds.

        Only breakpoints can be the earliest start: capacity changes only there. ``inf`` when
        ``size`` exceeds what the profile ever frees. ``not_before`` (a breakpoint) keeps the
        start at or after it: a queue where no job may pass the one ahead.
        """
        ok = _fit_rows(-self.free, -size)  # free >= size, every resource
        if not_before > self.times[0]:
            ok = ok & (self.times >= not_before)
        n = len(ok)
        bad = np.where(ok, n, np.arange(n))
        next_bad = np.minimum.accumulate(bad[::-1])[::-1]
        # A start at row i holds until the next row that lacks room (for ever if none).
        limit = np.where(next_bad < n, self.times[np.minimum(next_bad, n - 1)], np.inf)
        good = ok & (limit >= self.times + duration)
        if not good.any():
            return NO_TIME
        return float(self.times[int(good.argmax())])

    def room_before(self, size: IntArray, t: float) -> bool:
        """Whether ``size`` fits in some row that begins before ``t`` — a necessary condition
        for a job reserved at ``t`` to move earlier (its own interval starts at ``t``, so lifting
        it out changes no row before ``t``). Cheap: one comparison over a prefix."""
        rows = int(self.times.searchsorted(t, side="left"))
        return bool(rows) and bool(_fit_rows(-self.free[:rows], -size).any())

    def add(self, start: float, duration: float, size: IntArray) -> None:
        """Take ``size`` from ``[start, start + duration)`` (a negative size gives it back)."""
        lo = self._split(start)
        hi = self._split(start + duration)
        self.free[lo:hi] -= size


def _durations(estimates: FloatArray) -> FloatArray:
    # A zero-second estimate still needs a slot of positive length to be ordered in time.
    return np.maximum(estimates, MIN_REMAINING)


def estimated_starts(pool: Pool, in_order: bool = False) -> FloatArray:
    """Each queued job's estimated start if jobs took, in queue order, their earliest slot in
    the capacity profile (the conservative profile built from scratch): what ``squeue --start``
    shows. ``in_order``: no job starts before the one ahead of it (FCFS has no backfill).
    ``inf`` for a job that can never fit."""
    if in_order:
        return _in_order_starts(pool)
    profile = Profile.build(pool.now, pool.free, expected_ends(pool), pool.running_sizes)
    durations = _durations(pool.queue_estimates)
    out = np.empty(len(pool.queue_sizes), dtype=np.float64)
    for j, size in enumerate(pool.queue_sizes):
        t = profile.earliest(size, float(durations[j]))
        out[j] = t
        if t != NO_TIME:
            profile.add(t, float(durations[j]), size)
    return out


def _in_order_starts(pool: Pool) -> FloatArray:
    """Estimated starts when no job may pass the one ahead of it.

    Once a job starts, nothing queued behind it has started yet, so from then on capacity is
    only ever released: a job fits for its whole estimate as soon as it fits at all. Each job
    therefore starts at the first release (of a running or an earlier queued job) at or after
    the previous start at which enough is free — a merge over a heap of releases, O(n log n)
    instead of a profile search per job.
    """
    now = pool.now
    free = pool.free.copy()
    active = (pool.running_sizes != 0).any(axis=1)
    ends = np.maximum(expected_ends(pool)[active], now + MIN_REMAINING).tolist()
    releases: list[tuple[float, int, IntArray]] = list(
        zip(ends, range(len(ends)), pool.running_sizes[active], strict=True)
    )
    heapq.heapify(releases)
    durations = _durations(pool.queue_estimates).tolist()
    out = np.full(len(pool.queue_sizes), NO_TIME)
    t = now
    for j, size in enumerate(pool.queue_sizes):
        while not bool((size <= free).all()):
            if not releases:
                return out  # this job and all behind it never fit
            at, _, released = heapq.heappop(releases)
            free = free + released
            t = max(t, at)
        out[j] = t
        free = free - size
        heapq.heappush(releases, (t + durations[j], len(ends) + j, size))
    return out


def conservative(pool: Pool, compress: bool = True) -> Plan:
    """Conservative backfilling: keep every reservation, never move one later.

    Jobs with a reservation from the previous decision are re-placed first, in queue order;
    with ``compress`` each is lifted out and put back at its earliest slot given all the other
    reservations (its old slot is still free, so it can only move earlier); without it (the
    caller knows no capacity was freed early since the last decision) reservations are kept
    as they are. Jobs without one then get their earliest slot, in queue order. Every job whose
    slot is ``now`` starts.
    """
    now = pool.now
    n = len(pool.queue_sizes)
    sizes = pool.queue_sizes
    durations = _durations(pool.queue_estimates)
    previous = pool.reservations if pool.reservations is not None else np.full(n, np.nan)
    # A job that could not be placed at all last time (inf) is placed afresh, like a new one:
    # capacity may have grown since.
    previous = np.where(np.isinf(previous), np.nan, previous)
    reserved = np.flatnonzero(~np.isnan(previous))
    planned = np.full(n, NO_TIME)
    # A reservation in the past (the caller did not decide at that instant) counts as now.
    planned[reserved] = np.maximum(previous[reserved], now)
    profile = Profile.build(
        now,
        pool.free,
        expected_ends(pool),
        pool.running_sizes,
        planned[reserved],
        durations[reserved],
        sizes[reserved],
    )
    # A job running past its estimate can leave the kept reservations infeasible (the profile
    # dips below zero); re-placing every one of them in queue order repairs that.
    infeasible = bool(len(reserved)) and int(profile.free.min()) < 0
    if compress or infeasible:
        for j in reserved:
            old = float(planned[j])
            if not infeasible and not profile.room_before(sizes[j], old):
                continue  # nowhere earlier has room even for a moment: the slot stays
            d = float(durations[j])
            profile.add(old, d, -sizes[j])
            t = profile.earliest(sizes[j], d)
            # An overrunning job can make the old slot infeasible; then the job moves later.
            planned[j] = t
            if t != NO_TIME:
                profile.add(t, d, sizes[j])
    for j in np.flatnonzero(np.isnan(previous)):
        d = float(durations[j])
        t = profile.earliest(sizes[j], d)
        planned[j] = t
        if t != NO_TIME:
            profile.add(t, d, sizes[j])
    starting = planned <= now
    starts = np.flatnonzero(starting)
    waiting = np.flatnonzero(~starting)
    first_blocked = int(waiting[0]) if len(waiting) else n
    future = planned[waiting]
    wake_at = float(future.min()) if len(future) else NO_TIME
    return Plan(starts.astype(np.int64), first_blocked, NO_TIME, planned, wake_at)
