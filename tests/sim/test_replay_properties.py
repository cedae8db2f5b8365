"""Whole replays of random small workloads, checked second by second (brute force)."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sim_builders import run

from kubehpc.sched.backfill import Policy
from kubehpc.sim.estimates import EstimateSource

CAP = 6
Job = tuple[float, int, float, float | None]


@st.composite
def workloads(draw: st.DrawFn) -> list[Job]:
    jobs: list[Job] = []
    for _ in range(draw(st.integers(1, 9))):
        submit = draw(st.integers(0, 20))
        size = draw(st.integers(1, CAP))
        run_s = draw(st.integers(1, 12))
        slack = draw(st.integers(0, 10))
        jobs.append((submit, size, run_s, run_s + slack))
    return jobs


def _busy(result: object, t: int) -> int:
    r = result
    starts, runs, sizes = r.start, r.run, r.trace.sizes[:, 0]  # type: ignore[attr-defined]
    return int(sizes[(starts <= t) & (t < starts + runs)].sum())


@settings(max_examples=150, deadline=None)
@given(workloads(), st.sampled_from(list(Policy)))
def test_no_policy_exceeds_capacity_or_starts_a_job_before_its_submit(
    jobs: list[Job], policy: Policy
) -> None:
    result = run(jobs, CAP, policy)
    assert not np.isnan(result.start).any(), "every job eventually starts"
    assert (result.start >= result.trace.submit).all()
    horizon = int((result.start + result.run).max()) + 1
    assert all(_busy(result, t) <= CAP for t in range(horizon))


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_under_conservative_no_job_starts_later_than_its_first_reservation(jobs: list[Job]) -> None:
    result = run(jobs, CAP, Policy.CONSERVATIVE)
    assert (result.start <= result.predicted_start).all()


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_fcfs_starts_jobs_in_queue_order(jobs: list[Job]) -> None:
    result = run(jobs, CAP, Policy.FCFS)
    assert (np.diff(result.start) >= 0).all()


@settings(max_examples=100, deadline=None)
@given(workloads(), st.sampled_from([Policy.FCFS, Policy.CONSERVATIVE]))
def test_with_exact_estimates_the_start_estimate_at_submit_is_the_actual_start(
    jobs: list[Job], policy: Policy
) -> None:
    """FCFS (estimates without backfill) and conservative (its reservations) predict the
    future exactly when every estimate is the true run time: nothing ends early or late."""
    result = run(jobs, CAP, policy, EstimateSource.ACTUAL, start_estimates=True)
    assert result.predicted_start.tolist() == result.start.tolist()


def _easy_by_brute_force(jobs: list[Job]) -> tuple[list[int], list[float]]:
    """EASY replayed second by second, straight from its definition (docs/simulator.md), with
    nothing shared with the engine: (start of each job, the first reservation each job got as
    the blocked head; inf if it never was one). Every time is whole and every estimate is an
    upper bound, so deciding every second gives what deciding at events gives."""
    order = sorted(range(len(jobs)), key=lambda j: (jobs[j][0], j))
    start = [-1] * len(jobs)
    promised = [float("inf")] * len(jobs)
    running: list[tuple[int, int, int]] = []  # (actual end, estimated end, size)
    queue: list[int] = []

    def free(after: int = -1) -> int:
        """Free now, or once every job estimated to end by ``after`` has ended."""
        return CAP - sum(size for _, est_end, size in running if est_end > after)

    def launch(j: int, t: int) -> None:
        start[j] = t
        running.append((t + int(jobs[j][2]), t + int(jobs[j][3] or jobs[j][2]), jobs[j][1]))
        queue.remove(j)

    t = 0
    while order or queue or running:
        running[:] = [r for r in running if r[0] > t]
        while order and jobs[order[0]][0] == t:
            queue.append(order.pop(0))
        while queue and jobs[queue[0]][1] <= free():
            launch(queue[0], t)
        if queue:
            head = queue[0]
            shadow = t
            while free(shadow) < jobs[head][1]:
                shadow += 1
            promised[head] = min(promised[head], shadow)
            extra = free(shadow) - jobs[head][1]
            for j in list(queue[1:]):
                size, estimate = jobs[j][1], int(jobs[j][3] or jobs[j][2])
                if size > free():
                    continue
                if t + estimate <= shadow:
                    launch(j, t)
                elif size <= extra:
                    extra -= size
                    launch(j, t)
        t += 1
    return start, promised


@st.composite
def bursts(draw: st.DrawFn) -> list[Job]:
    """Many jobs in a few seconds, mostly small: queues long enough for several backfills
    behind one head, into its extra capacity among them."""
    jobs: list[Job] = []
    for _ in range(draw(st.integers(2, 12))):
        submit = draw(st.integers(0, 6))
        size = draw(st.integers(1, 2) | st.integers(1, CAP))
        run_s = draw(st.integers(1, 12))
        jobs.append((submit, size, run_s, run_s + draw(st.integers(0, 10))))
    return jobs


# A (3 of 6) runs to 10; head B (4) is promised 10, with 6 - 4 = 2 extra. C and D (1 each, long)
# take the extra; E (1, long) fits in what is free but not in what is left of the extra: waits.
EXTRA_USED_UP = [(0, 3, 10, 10), (0, 4, 5, 5), (0, 1, 20, 20), (0, 1, 20, 20), (0, 1, 20, 20)]


@settings(max_examples=200, deadline=None)
@given(workloads() | bursts())
@example(EXTRA_USED_UP)
def test_easy_replays_as_its_definition_and_never_starts_a_head_after_its_reservation(
    jobs: list[Job],
) -> None:
    """The engine's whole EASY replay equals the second-by-second reference; and no job, once
    it was the blocked head, starts later than the first reservation it got then: nothing
    started afterwards delayed it."""
    result = run(jobs, CAP, Policy.EASY)
    expected, promised = _easy_by_brute_force(jobs)
    by_id = dict(zip(result.trace.ids.tolist(), result.start.tolist(), strict=True))
    assert [by_id[j + 1] for j in range(len(jobs))] == expected
    assert all(s <= p for s, p in zip(expected, promised, strict=True))
