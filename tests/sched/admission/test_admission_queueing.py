"""Queue order, head-of-line behaviour (StrictFIFO vs BestEffortFIFO), positions, partial admission."""

from __future__ import annotations

from admissionkit import FLAVOR, admitted, cohort_queue, one_queue, pending, run, workload

from kubehpc.sched.admission import AdmissionConfig, PendingCode

STRICT = "queueingStrategy: StrictFIFO"


def cpu(name: str, amount: str, queue: str = "user-queue", **kw: object) -> dict:
    return workload(name, queue, requests={"cpu": amount}, **kw)  # type: ignore[arg-type]


def test_higher_priority_workloads_are_admitted_first() -> None:
    d = run(
        one_queue(cpu="4"),
        cpu("old-low", "4", priority=1, created=0),
        cpu("new-high", "4", priority=9, created=9),
    )
    assert admitted(d) == ["new-high"]


def test_equal_priorities_are_admitted_in_creation_order() -> None:
    d = run(one_queue(cpu="4"), cpu("second", "4", created=2), cpu("first", "4", created=1))
    assert admitted(d) == ["first"]


def test_equal_priority_and_creation_time_are_ordered_by_uid() -> None:
    d = run(one_queue(cpu="4"), cpu("b", "4", created=1), cpu("a", "4", created=1))
    assert admitted(d) == ["a"]


def test_best_effort_fifo_lets_a_smaller_workload_pass_a_head_that_does_not_fit() -> None:
    d = run(one_queue(cpu="4"), cpu("big", "6", created=0), cpu("small", "2", created=1))
    assert admitted(d) == ["small"]
    assert pending(d, "big").reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_strict_fifo_head_that_does_not_fit_blocks_its_queue() -> None:
    d = run(one_queue(cpu="4", extra=STRICT), cpu("big", "6", created=0), cpu("small", "2", created=1))
    assert admitted(d) == []
    p = pending(d, "small")
    assert p.reason.code is PendingCode.BEHIND_QUEUE_HEAD
    assert "behind default/big" in p.message


def test_strict_fifo_blocks_only_its_own_queue() -> None:
    setup = FLAVOR + cohort_queue("strict", "co", "4", extra=STRICT) + cohort_queue("other", "co", "4")
    d = run(
        setup, cpu("big", "9", "strict"), cpu("behind", "1", "strict", created=1), cpu("free", "1", "other")
    )
    assert admitted(d) == ["free"]


def test_strict_fifo_admits_in_order_while_the_head_fits() -> None:
    d = run(one_queue(cpu="4", extra=STRICT), *(cpu(f"w{i}", "1", created=i) for i in range(6)))
    assert admitted(d) == ["w0", "w1", "w2", "w3"]


def test_positions_count_the_pending_workloads_ahead_in_queue_order() -> None:
    d = run(
        one_queue(cpu="1"),
        cpu("running", "1", admitted_in="cluster-queue"),
        cpu("c", "1", created=3),
        cpu("a", "1", created=1, priority=5),
        cpu("b", "1", created=2),
    )
    assert [(pending(d, n).position, pending(d, n).local_queue_position) for n in "abc"] == [
        (0, 0),
        (1, 1),
        (2, 2),
    ]


def test_local_queue_positions_count_only_that_local_queues_workloads() -> None:
    setup = (
        one_queue(cpu="1")
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: other}
spec: {clusterQueue: cluster-queue}
"""
    )
    d = run(setup, cpu("x", "5", created=1), cpu("y", "5", "other", created=2), cpu("z", "5", created=3))
    z = pending(d, "z")
    assert (z.position, z.local_queue_position) == (2, 1)


def test_partial_admission_admits_fewer_pods_down_to_min_count() -> None:
    d = run(one_queue(cpu="9"), workload("elastic", count=20, min_count=5, requests={"cpu": "1"}))
    [a] = d.admissions
    assert (a.pod_sets[0].admission.count, a.partial) == (9, True)
    assert a.pod_sets[0].admission.usage == (("cpu", 9000),)


def test_partial_admission_never_goes_below_min_count() -> None:
    d = run(one_queue(cpu="4"), workload("elastic", count=20, min_count=5, requests={"cpu": "1"}))
    assert admitted(d) == []
    assert pending(d, "elastic").never_fits


def test_partial_admission_is_not_used_when_the_full_count_fits() -> None:
    d = run(one_queue(cpu="30"), workload("elastic", count=20, min_count=5, requests={"cpu": "1"}))
    assert (d.admissions[0].pod_sets[0].admission.count, d.admissions[0].partial) == (20, False)


def test_partial_admission_can_be_switched_off() -> None:
    d = run(
        one_queue(cpu="9"),
        workload("elastic", count=20, min_count=5, requests={"cpu": "1"}),
        config=AdmissionConfig(partial_admission=False),
    )
    assert admitted(d) == []
    assert pending(d, "elastic").never_fits  # 20 pods of 1 cpu, 9 cpu of quota


def test_preemption_is_preferred_to_partial_admission() -> None:
    setup = one_queue(cpu="10", extra="preemption: {withinClusterQueue: LowerPriority}")
    low = cpu("low", "4", admitted_in="cluster-queue")
    d = run(
        setup, low, workload("elastic", count=10, min_count=2, requests={"cpu": "1"}, priority=5, created=1)
    )
    assert [p.victim for p in d.preemptions] == ["default/low"]


def test_many_cycles_admit_one_head_per_queue_each_until_nothing_fits() -> None:
    setup = FLAVOR + cohort_queue("q1", "co", "3") + cohort_queue("q2", "co", "3")
    wls = [cpu(f"{q}-{i}", "1", q, created=i) for q in ("q1", "q2") for i in range(5)]
    d = run(setup, *wls)
    # Cycle by cycle the heads of q1 and q2 alternate; the 6 cpu of the cohort go 3 and 3.
    assert sorted(admitted(d)) == ["q1-0", "q1-1", "q1-2", "q2-0", "q2-1", "q2-2"]
