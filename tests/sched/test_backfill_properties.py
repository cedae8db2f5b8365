"""The queue policies against brute-force references on random small pools.

The references step through whole seconds (every time here is an integer), so they share no
code and no cleverness with ``sched.backfill``: capacity at an instant is counted job by job.
"""

from __future__ import annotations

import math

import numpy as np
from backfill_builders import pool
from hypothesis import given, settings
from hypothesis import strategies as st

from kubehpc.sched.backfill import Pool, conservative, easy, estimated_starts, fcfs

CAP = 8

Job = tuple[int, int]  # (size, estimate)
Running = tuple[int, int]  # (estimated end, size)


@st.composite
def pools(draw: st.DrawFn) -> tuple[int, list[Job], list[Running]]:
    now = draw(st.integers(0, 5))
    running: list[Running] = []
    used = 0
    for _ in range(draw(st.integers(0, 4))):
        size = draw(st.integers(1, CAP))
        if used + size > CAP:
            break
        used += size
        running.append((now + draw(st.integers(1, 15)), size))
    queue = draw(st.lists(st.tuples(st.integers(1, CAP), st.integers(1, 15)), min_size=1, max_size=7))
    return now, queue, running


def free_at(t: int, cap: int, intervals: list[tuple[int, int, int]]) -> int:
    """Capacity free during second ``t`` given (start, end, size) intervals."""
    return cap - sum(size for start, end, size in intervals if start <= t < end)


def earliest_fit(now: int, size: int, duration: int, cap: int, intervals: list[tuple[int, int, int]]) -> int:
    horizon = now + 200
    for t in range(now, horizon):
        if all(free_at(x, cap, intervals) >= size for x in range(t, t + duration)):
            return t
    return horizon


def running_intervals(now: int, running: list[Running]) -> list[tuple[int, int, int]]:
    return [(now, end, size) for end, size in running]


def _starts(p: Pool, fn: object) -> list[int]:
    return [int(x) for x in fn(p).starts]  # type: ignore[operator]


@settings(max_examples=300, deadline=None)
@given(pools())
def test_fcfs_starts_exactly_the_prefix_of_the_queue_that_fits(
    case: tuple[int, list[Job], list[Running]],
) -> None:
    now, queue, running = case
    free = CAP - sum(s for _, s in running)
    expected = []
    for i, (size, _) in enumerate(queue):
        if size > free:
            break
        free -= size
        expected.append(i)
    assert _starts(pool(CAP, queue, running, now), fcfs) == expected


@settings(max_examples=400, deadline=None)
@given(pools())
def test_easy_never_delays_the_heads_reservation(case: tuple[int, list[Job], list[Running]]) -> None:
    """Brute force: the blocked head's earliest start, with the jobs EASY started now added,
    is no later than without them; and every job EASY left waiting behind the head would,
    started now as well, either not fit or delay the head (EASY is not lazier than its rule)."""
    now, queue, running = case
    plan = easy(pool(CAP, queue, running, now))
    started = [int(x) for x in plan.starts]
    head = plan.first_blocked
    base = running_intervals(now, running)
    with_started = base + [(now, now + queue[j][1], queue[j][0]) for j in started]
    assert free_at(now, CAP, with_started) >= 0, "capacity exceeded"
    assert started[:head] == list(range(head)), "heads start in queue order"
    if head >= len(queue):
        return
    head_size, head_est = queue[head]
    heads_only = base + [(now, now + queue[j][1], queue[j][0]) for j in started if j < head]
    promised = earliest_fit(now, head_size, head_est, CAP, heads_only)
    assert earliest_fit(now, head_size, head_est, CAP, with_started) <= promised
    for j in range(head + 1, len(queue)):
        if j in started:
            continue
        size, est = queue[j]
        trial = [*with_started, (now, now + est, size)]
        fits_now = free_at(now, CAP, trial) >= 0
        assert not fits_now or earliest_fit(now, head_size, head_est, CAP, trial) > promised


@st.composite
def conservative_rounds(draw: st.DrawFn) -> tuple[int, list[Job], list[Running], int]:
    now, queue, running = draw(pools())
    later = draw(st.integers(0, 10))
    return now, queue, running, later


@settings(max_examples=300, deadline=None)
@given(conservative_rounds())
def test_conservative_reservations_are_feasible_earliest_and_never_move_later(
    case: tuple[int, list[Job], list[Running], int],
) -> None:
    """Round 1 plans a fresh queue: each job's slot is the earliest that fits beside the jobs
    ahead of it (brute force), all slots together never exceed capacity. Round 2, ``later``
    seconds on, with every running job ended early at that instant and the jobs started in
    round 1 still running: no reservation moves later."""
    now, queue, running, later = case
    first = conservative(pool(CAP, queue, running, now))
    res = first.reservations
    assert res is not None
    placed = running_intervals(now, running)
    for j, (size, est) in enumerate(queue):
        t = int(res[j])
        assert t == earliest_fit(now, size, est, CAP, placed)
        placed.append((t, t + est, size))
    assert all(free_at(x, CAP, placed) >= 0 for x in range(now, now + 200))
    # Round 2: everything running has ended at t2; jobs that started in round 1 still run.
    t2 = now + later
    started = [j for j in range(len(queue)) if res[j] <= now]
    still_running = [(now + queue[j][1], queue[j][0]) for j in started if now + queue[j][1] > t2]
    waiting = [j for j in range(len(queue)) if j not in started]
    if not waiting:
        return
    previous = [float(res[j]) for j in waiting]
    if any(p < t2 for p in previous):
        return  # a reservation already due before t2 would have started at its instant
    second = conservative(
        pool(CAP, [queue[j] for j in waiting], still_running, t2, reservations=previous), compress=True
    )
    assert second.reservations is not None
    assert all(new <= old for new, old in zip(second.reservations.tolist(), previous, strict=True))


@settings(max_examples=200, deadline=None)
@given(pools())
def test_every_policy_starts_only_what_fits_now(case: tuple[int, list[Job], list[Running]]) -> None:
    now, queue, running = case
    free = CAP - sum(s for _, s in running)
    for fn in (fcfs, easy, conservative):
        plan = fn(pool(CAP, queue, running, now))  # type: ignore[operator]
        assert sum(queue[int(j)][0] for j in plan.starts) <= free
        assert len(set(plan.starts.tolist())) == len(plan.starts)
        assert not math.isnan(float(np.sum(plan.starts)))


@settings(max_examples=300, deadline=None)
@given(pools(), st.booleans())
def test_estimated_starts_are_the_earliest_slots_in_queue_order(
    case: tuple[int, list[Job], list[Running]], in_order: bool
) -> None:
    """Brute force: each job's estimate is the earliest second (not before the previous job's,
    when ``in_order``) at which it fits for its whole estimate beside the running jobs and the
    jobs ahead of it at their estimates."""
    now, queue, running = case
    times = estimated_starts(pool(CAP, queue, running, now), in_order=in_order).tolist()
    placed = running_intervals(now, running)
    previous = now
    for j, (size, est) in enumerate(queue):
        t = earliest_fit(previous if in_order else now, size, est, CAP, placed)
        assert times[j] == t
        placed.append((t, t + est, size))
        previous = t
