"""Borrowing through cohorts: unused nominal quota, borrowingLimit, lendingLimit, hierarchy."""

from __future__ import annotations

from admissionkit import FLAVOR, admitted, cohort_queue, pending, queue_state, run, workload

from kubehpc.sched.admission import PendingCode


def cpu(name: str, queue: str, amount: str, created: float = 0.0, **kw: object) -> dict:
    return workload(name, queue, requests={"cpu": amount}, created=created, **kw)  # type: ignore[arg-type]


def test_a_cluster_queue_borrows_the_unused_nominal_quota_of_its_cohort() -> None:
    setup = FLAVOR + cohort_queue("team-a", "co", "10") + cohort_queue("team-b", "co", "10")
    d = run(setup, cpu("big", "team-a", "15"))
    assert admitted(d) == ["big"]
    assert d.admissions[0].borrowing
    assert queue_state(d, "team-a").borrowed == (("default-flavor", "cpu", 5000),)


def test_without_a_cohort_there_is_nothing_to_borrow() -> None:
    setup = FLAVOR + cohort_queue("team-a", "co", "10").replace("  cohortName: co\n", "")
    d = run(setup, cpu("big", "team-a", "15"))
    assert admitted(d) == []
    assert pending(d, "big").never_fits


def test_borrowing_is_limited_by_the_borrowing_limit() -> None:
    setup = (
        FLAVOR + cohort_queue("team-a", "co", "10", borrowing_limit="3") + cohort_queue("team-b", "co", "10")
    )
    d = run(setup, cpu("thirteen", "team-a", "13"), cpu("fourteen", "team-a", "14", created=1))
    assert admitted(d) == ["thirteen"]
    d = run(setup, cpu("fourteen", "team-a", "14"))
    p = pending(d, "fourteen")
    assert p.never_fits  # 10 nominal + 3 borrowable at most, whatever the cohort does


def test_borrowing_is_limited_by_the_lenders_lending_limit() -> None:
    setup = (
        FLAVOR + cohort_queue("team-a", "co", "10") + cohort_queue("team-b", "co", "10", lending_limit="2")
    )
    assert admitted(run(setup, cpu("twelve", "team-a", "12"))) == ["twelve"]
    d = run(setup, cpu("thirteen", "team-a", "13"))
    assert admitted(d) == []
    assert pending(d, "thirteen").never_fits


def test_a_lender_keeps_the_part_beyond_its_lending_limit_for_itself() -> None:
    # team-b lends at most 2 of its 10: team-a cannot take more, even while team-b is idle.
    setup = FLAVOR + cohort_queue("team-a", "co", "0") + cohort_queue("team-b", "co", "10", lending_limit="2")
    d = run(
        setup,
        cpu("a1", "team-a", "2"),
        cpu("a2", "team-a", "1", created=1),
        cpu("b", "team-b", "8", created=2),
    )
    assert sorted(admitted(d)) == ["a1", "b"]
    assert pending(d, "a2").reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_borrowed_quota_is_only_what_the_other_queues_do_not_use() -> None:
    setup = FLAVOR + cohort_queue("team-a", "co", "10") + cohort_queue("team-b", "co", "10")
    b_running = cpu("b-running", "team-b", "8", admitted_in="team-b")
    d = run(setup, b_running, cpu("a-big", "team-a", "13", created=1))
    assert admitted(d) == []
    p = pending(d, "a-big")
    assert (p.reason.borrowable, p.never_fits) == (2000, False)


def test_hierarchical_cohorts_lend_through_their_parent() -> None:
    setup = (
        FLAVOR
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: root}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: left}
spec: {parentName: root}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: right}
spec: {parentName: root}
"""
        + cohort_queue("team-a", "left", "4")
        + cohort_queue("team-b", "right", "10")
    )
    d = run(setup, cpu("wide", "team-a", "12"))
    assert admitted(d) == ["wide"]
    assert d.admissions[0].borrowing


def test_a_cohort_with_its_own_quota_lends_it_to_its_queues() -> None:
    setup = (
        FLAVOR
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 6}]
"""
        + cohort_queue("team-a", "org", "2")
    )
    d = run(setup, cpu("eight", "team-a", "8"), cpu("one-more", "team-a", "1", created=1))
    assert admitted(d) == ["eight"]
    assert pending(d, "one-more").reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_a_cohorts_lending_limit_caps_what_leaves_its_subtree() -> None:
    setup = (
        FLAVOR
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: root}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: rich}
spec:
  parentName: root
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 10, lendingLimit: 3}]
"""
        + cohort_queue("poor", "root", "0")
        + cohort_queue("member", "rich", "0")
    )
    assert admitted(run(setup, cpu("three", "poor", "3"))) == ["three"]
    assert pending(run(setup, cpu("four", "poor", "4")), "four").never_fits
    # Inside its own subtree the cohort's whole quota is available.
    assert admitted(run(setup, cpu("ten", "member", "10"))) == ["ten"]


def test_a_cohorts_borrowing_limit_caps_what_its_subtree_takes_from_the_parent() -> None:
    setup = (
        FLAVOR
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: root}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 100}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: child}
spec:
  parentName: root
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 0, borrowingLimit: 5}]
"""
        + cohort_queue("team", "child", "1")
    )
    assert admitted(run(setup, cpu("six", "team", "6"))) == ["six"]
    assert pending(run(setup, cpu("seven", "team", "7")), "seven").never_fits


def test_admissions_in_one_call_share_the_cohort_without_overcommitting_it() -> None:
    setup = FLAVOR + cohort_queue("team-a", "co", "5") + cohort_queue("team-b", "co", "5")
    wls = [cpu(f"a{i}", "team-a", "3", created=i) for i in range(3)] + [
        cpu(f"b{i}", "team-b", "3", created=i) for i in range(3)
    ]
    d = run(setup, *wls)
    used = sum(u for cq in d.cluster_queues for _, r, u in cq.usage if r == "cpu")
    assert len(d.admissions) == 3
    assert used == 9000 <= 10000


def test_workloads_that_need_no_borrowing_go_before_those_that_borrow() -> None:
    # Both heads arrive in the same cycle; team-b's fits its nominal quota, team-a's borrows.
    setup = FLAVOR + cohort_queue("team-a", "co", "2") + cohort_queue("team-b", "co", "6")
    d = run(
        setup,
        cpu("a-borrower", "team-a", "6", created=0, priority=10),
        cpu("b-owner", "team-b", "6", created=5),
    )
    assert admitted(d) == ["b-owner"]
    assert pending(d, "a-borrower").reason.code is PendingCode.INSUFFICIENT_QUOTA
