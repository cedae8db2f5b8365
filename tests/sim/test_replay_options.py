"""Estimate sources, killing at the limit, priorities and the per-job books of a replay."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from sim_builders import run, starts, trace

from kubehpc.sched.backfill import Policy
from kubehpc.sim.engine import SimOptions, simulate
from kubehpc.sim.estimates import KILLED_AT_LIMIT, EstimateSource, UserPredictor
from kubehpc.sim.traces.common import NO_REQUESTED_TIME, RAISED_TO_RUNTIME


def test_requested_times_below_the_run_time_are_raised_and_counted() -> None:
    result = run([(0, 1, 50, 10)], 4, Policy.FCFS)
    assert result.estimate.tolist() == [50]
    assert result.notes[RAISED_TO_RUNTIME] == 1


def test_a_missing_requested_time_falls_back_to_the_run_time_and_is_counted() -> None:
    result = run([(0, 1, 50, None)], 4, Policy.FCFS)
    assert result.estimate.tolist() == [50]
    assert result.notes[NO_REQUESTED_TIME] == 1


def test_jobs_are_not_killed_at_their_limit_by_default() -> None:
    assert run([(0, 1, 50, 10)], 4, Policy.FCFS).run.tolist() == [50]


def test_kill_at_limit_cuts_the_run_to_the_requested_time() -> None:
    result = run([(0, 1, 50, 10), (0, 1, 5, 10)], 4, Policy.FCFS, kill_at_limit=True)
    assert result.run.tolist() == [10, 5]
    assert result.notes[KILLED_AT_LIMIT] == 1


def test_actual_estimates_let_easy_backfill_on_true_run_times() -> None:
    """A (4 of 4 procs) asks 100 s, runs 10. Head B (4) waits for A; C (1, asks 100, runs 5)
    cannot start at 0 (no free procs) either way. With actual run times the estimates are exact
    but nothing is free before 10: B at 10, C at 20 (B holds all 4 until 20)."""
    result = run([(0, 4, 10, 100), (0, 4, 10, 10), (0, 1, 5, 100)], 4, Policy.EASY, EstimateSource.ACTUAL)
    assert result.estimate.tolist() == [10, 10, 5]
    assert starts(result) == {1: 0, 2: 10, 3: 20}


def test_the_predictor_averages_the_users_last_two_finished_jobs_capped_at_the_request() -> None:
    p = UserPredictor()
    assert p.predict(7, fallback=100.0, limit=100.0) == 100.0
    p.finished(7, 10.0)
    p.finished(7, 30.0)
    p.finished(7, 50.0)
    assert p.predict(7, fallback=100.0, limit=100.0) == 40.0
    assert p.predict(7, fallback=100.0, limit=35.0) == 35.0
    assert p.predict(8, fallback=100.0, limit=100.0) == 100.0


def test_the_predictor_learns_online_from_jobs_that_finished_before_the_submit() -> None:
    """User 0: job 1 (submit 0) runs 10 s; job 3, submitted at 5 before anything finished,
    keeps its request (100) and runs 1 s, ending at 6. Job 2, submitted at 20 after both ended,
    is predicted (10 + 1) / 2 = 5.5 s."""
    result = run(
        [(0, 1, 10, 100), (20, 1, 30, 100), (5, 1, 1, 100)],
        4,
        Policy.FCFS,
        EstimateSource.PREDICTOR,
        users=[0, 0, 0],
    )
    by_id = dict(zip(result.trace.ids.tolist(), result.estimate.tolist(), strict=True))
    assert by_id == {1: 100, 3: 100, 2: 5.5}


def test_higher_priority_jobs_go_ahead_of_earlier_ones() -> None:
    t = trace([(0, 4, 10, 10), (1, 4, 10, 10), (2, 4, 10, 10)])
    t = replace(t, priority=np.array([0, 0, 5]))
    result = simulate(t, np.array([4]), SimOptions(Policy.FCFS))
    assert result.start.tolist() == [0, 20, 10]


def test_backfilled_starts_are_flagged() -> None:
    result = run([(0, 6, 10, 10), (0, 8, 10, 10), (0, 9, 10, 10), (0, 2, 25, 25)], 10, Policy.EASY)
    assert result.backfilled.tolist() == [False, False, False, True]


def test_an_empty_trace_replays_to_zero_jobs() -> None:
    result = run([], 4, Policy.EASY)
    assert len(result.start) == 0 and result.decisions == 0


def test_under_conservative_a_later_high_priority_job_cannot_take_a_promised_slot() -> None:
    """4 procs. A runs [0,10). B (priority 0, submitted at 1) is promised 10. C (priority 5,
    submitted at 2) goes ahead of B in the queue but B's reservation stands: C gets 20."""
    t = trace([(0, 4, 10, 10), (1, 4, 10, 10), (2, 4, 10, 10)])
    t = replace(t, priority=np.array([0, 0, 5]))
    result = simulate(t, np.array([4]), SimOptions(Policy.CONSERVATIVE))
    assert result.start.tolist() == [0, 10, 20]
    assert result.predicted_start.tolist() == [0, 10, 20]
