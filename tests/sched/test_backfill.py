"""Queue policies, rule by rule, on pools built by hand."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from backfill_builders import pool

from kubehpc.sched.backfill import (
    MIN_REMAINING,
    Policy,
    Pool,
    conservative,
    decide_starts,
    easy,
    estimated_starts,
    expected_ends,
    fcfs,
    head_reservation,
)


def test_fcfs_stops_at_the_first_job_that_does_not_fit() -> None:
    plan = fcfs(pool(10, [(4, 5), (4, 5), (4, 5), (1, 5)]))
    assert plan.starts.tolist() == [0, 1]
    assert plan.first_blocked == 2


def test_the_shadow_time_is_the_first_estimated_end_at_which_the_head_fits() -> None:
    shadow, extra = head_reservation(
        0.0, np.array([2]), np.array([6]), np.array([30.0, 10.0, 20.0]), np.array([[3], [2], [3]])
    )
    # Released in end order: 10 -> 4 free, 20 -> 7 free >= 6.
    assert (shadow, extra.tolist()) == (20.0, [1])


def test_extra_capacity_counts_every_job_ending_at_the_shadow_time() -> None:
    shadow, extra = head_reservation(
        0.0, np.array([0]), np.array([4]), np.array([10.0, 10.0, 10.0]), np.array([[4], [3], [3]])
    )
    assert (shadow, extra.tolist()) == (10.0, [6])


def test_a_head_larger_than_anything_that_frees_up_blocks_no_one() -> None:
    shadow, extra = head_reservation(0.0, np.array([2]), np.array([50]), np.array([10.0]), np.array([[8]]))
    assert math.isinf(shadow) and extra.tolist() == [0]


def test_a_job_past_its_estimate_is_expected_to_end_one_second_from_now() -> None:
    shadow, _ = head_reservation(100.0, np.array([0]), np.array([4]), np.array([50.0]), np.array([[4]]))
    assert shadow == 100.0 + MIN_REMAINING


def test_easy_counts_the_heads_started_in_the_same_decision_as_running() -> None:
    """10 free: A (6, 100 s) starts now; head B (8) can start only when A ends at 100, extra 2
    (10 - 8). C (4, 50 s) fits the 4 left free and ends by 100: backfilled."""
    plan = easy(pool(10, [(6, 100), (8, 10), (4, 50)]))
    assert plan.starts.tolist() == [0, 2]
    assert plan.head_reservation == 100.0


def test_easy_with_two_resources_needs_each_within_free_and_extra() -> None:
    """cpu and gpu side by side. Running: (end 10, 4 cpu, 2 gpu). Head wants (6 cpu, 4 gpu):
    shadow 10, extra (8-6, 4-4) = (2, 0). A long job asking for 1 gpu exceeds the gpu extra;
    a long cpu-only job of 2 fits it."""
    p = Pool(
        now=0.0,
        capacity=np.array([8, 4]),
        free=np.array([4, 2]),
        queue_sizes=np.array([[6, 4], [1, 1], [2, 0]]),
        queue_estimates=np.array([10.0, 50.0, 50.0]),
        running_ends=np.array([10.0]),
        running_sizes=np.array([[4, 2]]),
    )
    assert easy(p).starts.tolist() == [2]


def test_estimated_starts_follow_the_conservative_profile() -> None:
    """10 procs, A (6) runs until 10. B (8, 10 s) -> 10. C (3, 5 s): 4 free now -> 0. D (5, 5 s):
    [0,10) has 1 left, [10,20) 2 -> 20."""
    times = estimated_starts(pool(10, [(8, 10), (3, 5), (5, 5)], running=[(10, 6)]))
    assert times.tolist() == [10.0, 0.0, 20.0]


def test_estimated_starts_in_order_never_put_a_job_before_the_one_ahead() -> None:
    """As above, but C may not start before B (10): [10,20) has 2 left, so C -> 20; D (5) fits
    beside C at 20 (7 left)."""
    times = estimated_starts(pool(10, [(8, 10), (3, 5), (5, 5)], running=[(10, 6)]), in_order=True)
    assert times.tolist() == [10.0, 20.0, 20.0]


def test_conservative_keeps_reservations_when_nothing_ended_early() -> None:
    """Without compression a reservation stays even if an earlier slot exists now."""
    p = pool(10, [(10, 10)], running=[(50, 10)], now=20.0, reservations=[60.0])
    assert conservative(p, compress=False).reservations.tolist() == [60.0]  # type: ignore[union-attr]
    assert conservative(p, compress=True).reservations.tolist() == [50.0]  # type: ignore[union-attr]


def test_conservative_repairs_reservations_a_job_past_its_estimate_made_infeasible() -> None:
    """A running job (10 procs) was estimated to end at 50 but still runs at 60: B's kept
    reservation at 50 is in the past and cannot start; it moves to 61 (the overrunner is
    expected to end one second from now)."""
    p = pool(10, [(10, 10)], running=[(50, 10)], now=60.0, reservations=[50.0])
    plan = conservative(p, compress=False)
    assert plan.starts.tolist() == []
    assert plan.reservations.tolist() == [61.0]  # type: ignore[union-attr]


def test_decide_starts_dispatches_on_the_policy() -> None:
    p = pool(10, [(6, 100), (8, 10), (4, 50)])
    assert decide_starts(Policy.FCFS, p).starts.tolist() == [0]
    assert decide_starts(Policy.EASY, p).starts.tolist() == [0, 2]
    assert decide_starts(Policy.CONSERVATIVE, p).starts.tolist() == [0, 2]


def test_conservative_with_two_resources_needs_room_in_each_for_the_whole_estimate() -> None:
    """8 cpu + 4 gpu; a running job holds (4 cpu, 4 gpu) until 10. A (2 cpu, 2 gpu, 5 s): no
    gpu before 10 -> 10. B (4 cpu, no gpu, 20 s) fits now and leaves A its 2 cpu at 10 -> 0.
    C (4 cpu, 1 gpu, 5 s): at 10 only 2 cpu are left (B and A) -> 15, when A ends."""
    p = Pool(
        now=0.0,
        capacity=np.array([8, 4]),
        free=np.array([4, 0]),
        queue_sizes=np.array([[2, 2], [4, 0], [4, 1]]),
        queue_estimates=np.array([5.0, 20.0, 5.0]),
        running_ends=np.array([10.0]),
        running_sizes=np.array([[4, 4]]),
    )
    plan = conservative(p)
    assert plan.reservations.tolist() == [10.0, 0.0, 15.0]  # type: ignore[union-attr]
    assert plan.starts.tolist() == [1]
    assert estimated_starts(p).tolist() == [10.0, 0.0, 15.0]


def test_a_job_past_its_estimate_is_expected_to_run_until_its_limit_when_it_has_one() -> None:
    """At 60 a job estimated to end at 50 still holds all 10 procs; its limit is 100. The queue
    (10 procs for 5 s, then 1 for 30 s) is estimated to start at 100 and 105; without a limit
    the overrunning job is expected to end 1 s from now: 61 and 66."""
    p = replace(pool(10, [(10, 5), (1, 30)], running=[(50, 10)], now=60.0), running_limits=np.array([100.0]))
    assert expected_ends(p).tolist() == [100.0]
    assert estimated_starts(p).tolist() == [100.0, 105.0]
    assert estimated_starts(replace(p, running_limits=np.array([np.nan]))).tolist() == [61.0, 66.0]
