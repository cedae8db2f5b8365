"""Preemption: by priority within a ClusterQueue, to reclaim lent quota, and while borrowing."""

from __future__ import annotations

from admissionkit import FLAVOR, admitted, cohort_queue, one_queue, pending, run, victims, workload

from kubehpc.sched.admission import PendingCode

WITHIN = "preemption: {withinClusterQueue: LowerPriority}"


def cpu(name: str, amount: str, queue: str = "user-queue", **kw: object) -> dict:
    return workload(name, queue, requests={"cpu": amount}, **kw)  # type: ignore[arg-type]


def running(name: str, amount: str, priority: int, at: float = 0.0, queue_cq: str = "cluster-queue") -> dict:
    queue = "user-queue" if queue_cq == "cluster-queue" else queue_cq
    return cpu(name, amount, queue, priority=priority, admitted_in=queue_cq, created=at, admitted_at=at)


def test_a_higher_priority_workload_preempts_a_lower_priority_one_in_its_cluster_queue() -> None:
    d = run(
        one_queue(cpu="4", extra=WITHIN), running("low", "4", 0), cpu("high", "4", priority=10, created=5)
    )
    assert victims(d) == {"low": "InClusterQueue"}
    [p] = d.preemptions
    assert (
        p.message
        == "Preempted to accommodate a workload (UID: uid-high, JobUID: UNKNOWN) due to prioritization "
        "in the ClusterQueue; preemptor path: /cluster-queue; preemptee path: /cluster-queue"
    )
    assert (p.preemptor, p.victim_cluster_queue) == ("default/high", "cluster-queue")


def test_the_preemptor_waits_for_its_victims_to_leave() -> None:
    d = run(
        one_queue(cpu="4", extra=WITHIN), running("low", "4", 0), cpu("high", "4", priority=10, created=5)
    )
    assert admitted(d) == []
    p = pending(d, "high")
    assert p.reason.code is PendingCode.PENDING_PREEMPTION
    assert p.message.endswith("pending the preemption of 1 workload(s)")


def test_victims_already_being_evicted_are_not_preempted_again() -> None:
    leaving = cpu("low", "4", priority=0, admitted_in="cluster-queue", evicted=True)
    d = run(one_queue(cpu="4", extra=WITHIN), leaving, cpu("high", "4", priority=10, created=5))
    assert d.preemptions == ()
    assert pending(d, "high").reason.code is PendingCode.PENDING_PREEMPTION


def test_within_cluster_queue_never_preempts_nobody() -> None:
    d = run(one_queue(cpu="4"), running("low", "4", 0), cpu("high", "4", priority=10, created=5))
    assert d.preemptions == ()
    assert pending(d, "high").reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_lower_priority_policy_spares_workloads_of_equal_priority() -> None:
    d = run(
        one_queue(cpu="4", extra=WITHIN), running("peer", "4", 5), cpu("newcomer", "4", priority=5, created=9)
    )
    assert d.preemptions == ()


def test_lower_or_newer_equal_priority_preempts_equal_priority_workloads_queued_later() -> None:
    policy = "preemption: {withinClusterQueue: LowerOrNewerEqualPriority}"
    d = run(
        one_queue(cpu="4", extra=policy),
        running("newer", "4", 5, at=20),
        cpu("older", "4", priority=5, created=1),
    )
    assert victims(d) == {"newer": "InClusterQueue"}


def test_lower_or_newer_equal_priority_spares_equal_priority_workloads_queued_earlier() -> None:
    policy = "preemption: {withinClusterQueue: LowerOrNewerEqualPriority}"
    d = run(
        one_queue(cpu="4", extra=policy),
        running("older", "4", 5, at=1),
        cpu("newer", "4", priority=5, created=20),
    )
    assert d.preemptions == ()


def test_victims_are_a_minimal_set_lowest_priority_first() -> None:
    d = run(
        one_queue(cpu="6", extra=WITHIN),
        running("p1", "2", 1),
        running("p2", "2", 2),
        running("p3", "2", 3),
        cpu("high", "2", priority=10, created=5),
    )
    assert victims(d) == {"p1": "InClusterQueue"}


def test_among_equal_priorities_the_most_recently_admitted_goes_first() -> None:
    d = run(
        one_queue(cpu="6", extra=WITHIN),
        running("first", "2", 1, at=1),
        running("second", "2", 1, at=2),
        running("third", "2", 1, at=3),
        cpu("high", "4", priority=10, created=5),
    )
    assert victims(d) == {"third": "InClusterQueue", "second": "InClusterQueue"}


def test_a_victim_the_workload_can_do_without_is_put_back() -> None:
    # Removing in order p1 (1 cpu) then p2 (4 cpu) makes room; p1 alone was not needed.
    d = run(
        one_queue(cpu="5", extra=WITHIN),
        running("p1", "1", 1),
        running("p2", "4", 2),
        cpu("high", "4", priority=10, created=5),
    )
    assert victims(d) == {"p2": "InClusterQueue"}


def test_nobody_is_preempted_when_that_would_not_make_the_workload_fit() -> None:
    d = run(
        one_queue(cpu="6", extra=WITHIN),
        running("low", "2", 1),
        running("peer", "4", 10),
        cpu("high", "4", priority=10, created=5),
    )
    assert d.preemptions == ()
    assert pending(d, "high").reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_one_call_never_hands_the_same_victim_to_two_preemptors() -> None:
    d = run(
        one_queue(cpu="4", extra=WITHIN),
        running("low", "4", 0),
        cpu("high-1", "4", priority=10, created=5),
        cpu("high-2", "4", priority=10, created=6),
    )
    assert list(victims(d)) == ["low"]
    assert pending(d, "high-2").reason.code is PendingCode.BEHIND_QUEUE_HEAD


# --- reclaiming lent quota ------------------------------------------------------------------------


def cohort(a_policy: str, b_quota: str = "4", a_quota: str = "4") -> str:
    return (
        FLAVOR
        + cohort_queue("team-a", "co", a_quota, preemption=a_policy)
        + cohort_queue("team-b", "co", b_quota)
    )


def b_running(name: str, amount: str, priority: int, at: float = 0.0) -> dict:
    return cpu(name, amount, "team-b", priority=priority, admitted_in="team-b", created=at, admitted_at=at)


def test_reclaim_within_cohort_any_takes_back_lent_quota_whatever_the_priority() -> None:
    setup = cohort("preemption: {reclaimWithinCohort: Any}")
    d = run(
        setup, b_running("b1", "4", 100), b_running("b2", "4", 100, at=1), cpu("a", "4", "team-a", created=5)
    )
    assert victims(d) == {"b2": "InCohortReclamation"}
    assert d.preemptions[0].message.endswith(
        "due to reclamation within the cohort; preemptor path: /co/team-a; preemptee path: /co/team-b"
    )


def test_reclaim_within_cohort_lower_priority_spares_higher_priority_borrowers() -> None:
    setup = cohort("preemption: {reclaimWithinCohort: LowerPriority}")
    d = run(
        setup, b_running("b1", "4", 100), b_running("b2", "4", 100, at=1), cpu("a", "4", "team-a", priority=5)
    )
    assert d.preemptions == ()
    assert pending(d, "a").reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_reclaim_within_cohort_never_leaves_borrowers_alone() -> None:
    d = run(
        cohort(""),
        b_running("b1", "4", 0),
        b_running("b2", "4", 0, at=1),
        cpu("a", "4", "team-a", priority=5),
    )
    assert d.preemptions == ()


def test_only_cluster_queues_that_borrow_are_reclaimed_from() -> None:
    # team-b stays within its nominal 4; team-c borrows: only team-c's workload may go.
    setup = cohort("preemption: {reclaimWithinCohort: Any}") + cohort_queue("team-c", "co", "0")
    c_running = cpu("c1", "4", "team-c", admitted_in="team-c", created=2, admitted_at=2)
    d = run(setup, b_running("b1", "4", 0, at=3), c_running, cpu("a", "4", "team-a", priority=5, created=5))
    assert victims(d) == {"c1": "InCohortReclamation"}


def test_reclaim_prefers_other_queues_over_the_preemptors_own() -> None:
    setup = cohort("preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}")
    a_low = cpu("a-low", "2", "team-a", priority=0, admitted_in="team-a")
    d = run(setup, a_low, b_running("b1", "6", 100), cpu("a-high", "2", "team-a", priority=10, created=5))
    assert victims(d) == {"b1": "InCohortReclamation"}


def test_a_workload_over_its_nominal_quota_cannot_reclaim_without_borrow_within_cohort() -> None:
    setup = cohort("preemption: {reclaimWithinCohort: Any}", b_quota="2", a_quota="6")
    d = run(
        setup,
        b_running("b1", "3", 50),
        b_running("b2", "3", 60, at=1),
        cpu("a", "7", "team-a", priority=1000),
    )
    assert d.preemptions == ()
    assert pending(d, "a").reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_borrow_within_cohort_preempts_lower_priority_workloads_while_borrowing() -> None:
    policy = "preemption: {reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority}}"
    setup = cohort(policy, b_quota="2", a_quota="6")
    d = run(
        setup,
        b_running("b1", "3", 50),
        b_running("b2", "3", 60, at=1),
        cpu("a", "7", "team-a", priority=1000),
    )
    assert victims(d) == {"b1": "InCohortReclaimWhileBorrowing", "b2": "InCohortReclaimWhileBorrowing"}
    assert "due to reclamation within the cohort while borrowing;" in d.preemptions[0].message


def test_borrow_within_cohort_spares_workloads_above_max_priority_threshold() -> None:
    policy = (
        "preemption: {reclaimWithinCohort: Any, "
        "borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 55}}"
    )
    setup = cohort(policy, b_quota="2", a_quota="6")
    d = run(
        setup,
        b_running("b1", "3", 50),
        b_running("b2", "3", 60, at=1),
        cpu("a", "7", "team-a", priority=1000),
    )
    assert d.preemptions == ()


def test_borrow_within_cohort_never_preempts_equal_or_higher_priority_to_borrow() -> None:
    policy = "preemption: {reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority}}"
    setup = cohort(policy, b_quota="2", a_quota="6")
    d = run(
        setup, b_running("b1", "3", 50), b_running("b2", "3", 60, at=1), cpu("a", "7", "team-a", priority=60)
    )
    assert d.preemptions == ()
