"""FCFS, EASY and conservative on small traces whose schedules are worked out by hand.

Jobs are (submit, size, run, requested time); the pool has 10 processors unless a test says
otherwise; estimates are the requested times.
"""

from __future__ import annotations

from sim_builders import run, starts

from kubehpc.sched.backfill import Policy

# A (6 procs, 10 s) runs first; B (8) must wait for A; C (9) needs nearly the whole machine;
# D (2 procs, 25 s) is the backfill candidate that EASY's extra processors admit.
EXTRA_CASE = [(0, 6, 10, 10), (0, 8, 10, 10), (0, 9, 10, 10), (0, 2, 25, 25)]


def test_fcfs_never_lets_a_later_job_pass_a_blocked_head() -> None:
    """t=0: A starts (4 free). B (8) blocks; C and D wait behind it although D would fit.
    t=10: A ends, B starts (2 free); C (9) blocks. t=20: B ends, C starts (1 free); D (2) blocks.
    t=30: C ends, D starts."""
    assert starts(run(EXTRA_CASE, 10, Policy.FCFS)) == {1: 0, 2: 10, 3: 20, 4: 30}


def test_easy_backfills_a_long_job_into_the_heads_extra_processors() -> None:
    """t=0: A starts, 4 free. Head B (8) blocked: shadow time 10 (A's estimated end), when
    4 + 6 = 10 are free, so extra = 10 - 8 = 2. C (9) does not fit the 4 free. D (2) fits, ends
    at 25 > 10, but 2 <= extra: D starts at 0, extra drops to 0.
    t=10: A ends, 8 free, B starts. t=20: B ends, 8 free, C (9) blocked until D ends at 25.
    EASY protects only the head: D delays C (20 -> 25), which conservative would not allow."""
    assert starts(run(EXTRA_CASE, 10, Policy.EASY)) == {1: 0, 2: 10, 3: 25, 4: 0}


def test_conservative_refuses_a_backfill_that_would_delay_any_reservation() -> None:
    """t=0: A starts. Profile: 4 free on [0,10), 10 after. B (8, 10 s) -> [10,20), leaving 2 on
    [10,20). C (9, 10 s): 2 < 9 before 20 -> [20,30), leaving 1. D (2, 25 s) at 0 would need 2
    until 25 but [20,25) has 1; at 10 and 20 likewise; at 30 it fits: D reserved at 30.
    Nothing ends early, so every job starts at its reservation."""
    result = run(EXTRA_CASE, 10, Policy.CONSERVATIVE)
    assert starts(result) == {1: 0, 2: 10, 3: 20, 4: 30}


def test_easy_backfills_a_job_that_ends_by_the_shadow_time_without_using_extra() -> None:
    """t=0: A (6, 10 s) starts, 4 free. Head B (8) blocked: shadow 10, extra 2. C (2, 20 s) fits
    the extra -> starts, extra 0, 2 free. D (2, 20 s) ends after 10 and extra is 0 -> waits.
    E (2, 10 s) ends at 10 <= shadow -> starts (ending exactly at the shadow time is allowed).
    t=10: A and E end, 8 free, B starts; D (2) does not fit the 0 left. t=15: B ends, D starts."""
    jobs = [(0, 6, 10, 10), (0, 8, 5, 5), (0, 2, 20, 20), (0, 2, 20, 20), (0, 2, 10, 10)]
    assert starts(run(jobs, 10, Policy.EASY)) == {1: 0, 2: 10, 3: 0, 4: 15, 5: 0}


def test_easy_recomputes_the_reservation_when_a_job_ends_early() -> None:
    """A (6 procs) asks for 100 s but ends at 10. t=0: A starts, 4 free; head B (8) blocked:
    shadow 100 (A's estimate), extra 2. C (4, 50 s) ends at 50 <= 100 -> backfills, 0 free.
    t=10: A ends early, 6 free. The reservation is recomputed: C's end at 50 gives 10 >= 8, so
    shadow 50, extra 2. t=11: E (6, 79 s) fits the 6 free but would run to 90 > 50 and 6 > 2:
    it waits (with the stale shadow of 100 it would have started and pushed B to 90).
    t=50: C ends, B starts (2 free). t=60: B ends, E starts."""
    jobs = [(0, 6, 10, 100), (0, 8, 10, 10), (0, 4, 50, 50), (11, 6, 79, 79)]
    assert starts(run(jobs, 10, Policy.EASY)) == {1: 0, 2: 50, 3: 0, 4: 60}


def test_conservative_moves_reservations_earlier_when_a_job_ends_early() -> None:
    """A (10 procs) asks for 100 s, runs 10. t=0: A starts; B (10, 10 s) reserved at 100;
    C (5, 10 s) reserved at 110 (B holds everything on [100,110)).
    t=10: A ends early; compression lifts B out and puts it back at its earliest slot, 10; then
    C: [10,20) has 0 free -> 20. Both start earlier than first promised, never later."""
    result = run([(0, 10, 10, 100), (0, 10, 10, 10), (0, 5, 10, 10)], 10, Policy.CONSERVATIVE)
    assert starts(result) == {1: 0, 2: 10, 3: 20}
    assert result.predicted_start.tolist() == [0, 100, 110]


def test_a_job_submitted_when_another_ends_may_start_at_that_instant() -> None:
    """Finishes are taken before submits at the same instant: A (10) ends at 5, B (10)
    submitted at 5 starts at 5 under every policy."""
    for policy in Policy:
        assert starts(run([(0, 10, 5, 5), (5, 10, 5, 5)], 10, policy)) == {1: 0, 2: 5}


def test_conservative_starts_a_job_at_its_reservation_even_when_nothing_happens_then() -> None:
    """6 procs; estimates are the requested times. t=0: A (1 proc, asks 2) and B (2, asks 3)
    start, 3 free. C (5, asks 2) is reserved at 3 (B's estimated end). D (4, asks 1) fits at 2
    (A's estimated end: 4 free) -> [2,3).
    t=1: A and B end early. Compression in queue order: C cannot start before 3 because D
    holds 4 on [2,3), so C keeps 3; D moves to 1 and starts; it ends at 2, on its estimate,
    which is no reason to compress. Nothing ends or arrives at 3, but the plan asked to be woken
    then (Plan.wake_at): C starts at 3, exactly its reservation."""
    result = run([(0, 1, 1, 2), (0, 2, 1, 3), (0, 5, 1, 2), (0, 4, 1, 1)], 6, Policy.CONSERVATIVE)
    assert starts(result) == {1: 0, 2: 0, 3: 3, 4: 1}
    assert result.predicted_start.tolist() == [0, 0, 3, 2]
