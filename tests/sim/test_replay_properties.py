"""Whole replays of random small workloads, checked second by second (brute force)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
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
