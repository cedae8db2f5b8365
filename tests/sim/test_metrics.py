"""The figures of merit, on replays small enough to compute by hand."""

from __future__ import annotations

import numpy as np
from sim_builders import run

from kubehpc.sched.backfill import Policy
from kubehpc.sim.metrics import bounded_slowdowns, jain, summary, utilization
from kubehpc.sim.report import binned


def test_bounded_slowdown_uses_a_ten_second_floor_on_the_run_time() -> None:
    """4 procs. A (4, 100 s) at 0; B (4, 2 s) at 0 waits 100: (100 + 2) / max(2, 10) = 10.2.
    A: no wait -> 1."""
    result = run([(0, 4, 100, 100), (0, 4, 2, 2)], 4, Policy.FCFS)
    assert bounded_slowdowns(result).tolist() == [1.0, 10.2]


def test_utilisation_is_used_processor_seconds_over_capacity_times_makespan() -> None:
    """2 of 4 procs for 10 s, then 4 of 4 for 10 s: 60 / (4 x 20) = 0.75."""
    result = run([(0, 2, 10, 10), (10, 4, 10, 10)], 4, Policy.FCFS)
    assert utilization(result).tolist() == [0.75]


def test_jains_index_is_one_for_equals_and_one_over_n_for_a_single_sufferer() -> None:
    assert jain(np.array([3.0, 3.0, 3.0])) == 1.0
    assert jain(np.array([9.0, 0.0, 0.0])) == 1 / 3


def test_summary_reports_per_user_figures_and_fairness() -> None:
    result = run([(0, 4, 100, 100), (0, 4, 2, 2)], 4, Policy.FCFS, users=[0, 1])
    users = summary(result)["users"]
    assert users["groups"]["u1"] == {"jobs": 1, "avg_wait_s": 100.0, "avg_bsld": 10.2}
    assert users["jain_bsld"] == (1 + 10.2) ** 2 / (2 * (1 + 10.2**2))


def test_start_estimate_accuracy_compares_predicted_and_actual_starts_of_jobs_that_waited() -> None:
    """A asks 100 s but runs 10: B is promised 100 at submit and starts at 10 (90 s early)."""
    result = run([(0, 4, 10, 100), (0, 4, 10, 10)], 4, Policy.FCFS, start_estimates=True)
    acc = summary(result)["start_estimates"]
    assert acc == {"jobs": 1, "mean_abs_error_s": 90.0, "median_abs_error_s": 90.0, "late_fraction": 0.0}


def test_a_step_function_is_averaged_over_time_within_each_bin() -> None:
    """Value 1 on [0, 5), 3 on [5, 10): two bins over [0, 10) give 1 and 3; one bin gives 2."""
    times, values = np.array([0.0, 5.0, 10.0]), np.array([1.0, 3.0, 0.0])
    assert binned(times, values, 0.0, 10.0, bins=2)[1].tolist() == [1.0, 3.0]
    assert binned(times, values, 0.0, 10.0, bins=1)[1].tolist() == [2.0]
