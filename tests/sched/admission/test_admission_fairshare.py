"""Fair sharing: admission order and preemption by dominant resource share, with weights."""

from __future__ import annotations

from admissionkit import FLAVOR, admitted, cohort_queue, queue_state, run, victims, workload

from kubehpc.sched.admission import AdmissionConfig, FairSharingStrategy, PendingCode

FAIR = AdmissionConfig(fair_sharing=True)
RECLAIM = "preemption: {reclaimWithinCohort: Any}"


def setup(a_weight: str = "1", b_weight: str = "1") -> str:
    """A lender with all 10 cpu of the cohort; team-a and team-b own nothing and borrow."""
    return (
        FLAVOR
        + cohort_queue("lender", "co", "10")
        + cohort_queue("team-a", "co", "0", preemption=RECLAIM, extra=f"fairSharing: {{weight: {a_weight}}}")
        + cohort_queue("team-b", "co", "0", preemption=RECLAIM, extra=f"fairSharing: {{weight: {b_weight}}}")
    )


def using(queue: str, n: int, amount: str = "1", priority: int = 0) -> list[dict]:
    return [
        workload(
            f"{queue}-run{i}",
            queue,
            requests={"cpu": amount},
            priority=priority,
            admitted_in=queue,
            created=i,
            admitted_at=i,
        )
        for i in range(n)
    ]


def wants(name: str, queue: str, amount: str, **kw: object) -> dict:
    return workload(name, queue, requests={"cpu": amount}, created=50, **kw)  # type: ignore[arg-type]


def test_the_queue_with_the_lower_share_is_admitted_first() -> None:
    wls = [*using("team-a", 4), wants("a-next", "team-a", "1", priority=100), wants("b-next", "team-b", "1")]
    free_one = using("lender", 5)  # 1 cpu left in the cohort
    assert admitted(run(setup(), *wls, *free_one)) == ["a-next"]  # by priority, without fair sharing
    assert admitted(run(setup(), *wls, *free_one, config=FAIR)) == ["b-next"]


def test_a_higher_weight_entitles_a_queue_to_a_larger_share() -> None:
    wls = [
        *using("team-a", 2),
        *using("team-b", 2),
        *using("lender", 5),
        wants("a", "team-a", "1"),
        wants("b", "team-b", "1"),
    ]
    assert admitted(run(setup(a_weight="2"), *wls, config=FAIR)) == ["a"]
    assert admitted(run(setup(b_weight="2"), *wls, config=FAIR)) == ["b"]


def test_fair_sharing_preempts_from_the_queue_with_the_highest_share() -> None:
    d = run(setup(), *using("team-a", 10), wants("b", "team-b", "2"), config=FAIR)
    assert victims(d) == {"team-a-run9": "InCohortFairSharing", "team-a-run8": "InCohortFairSharing"}
    assert "due to Fair Sharing within the cohort;" in d.preemptions[0].message


def test_without_fair_sharing_a_borrower_cannot_preempt_another_borrower() -> None:
    d = run(setup(), *using("team-a", 10), wants("b", "team-b", "2"))
    assert d.preemptions == ()


def test_no_preemption_when_the_preemptor_would_end_up_with_the_larger_share() -> None:
    # team-a holds 6, team-b 4 and wants 2 more: 6 against 4 after one victim is no fairer.
    d = run(setup(), *using("team-a", 6), *using("team-b", 4), wants("b", "team-b", "2"), config=FAIR)
    assert d.preemptions == ()
    assert d.pending_by_key()["default/b"].reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_less_than_or_equal_to_final_share_alone_refuses_a_victim_that_overshoots() -> None:
    # team-a holds 3 x 2 cpu, team-b 4 and wants 1: taking 2 from team-a leaves it at 4 < 5.
    wls = [*using("team-a", 3, amount="2"), *using("team-b", 4), wants("b", "team-b", "1")]
    only_final = AdmissionConfig(
        fair_sharing=True, fair_sharing_strategies=(FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,)
    )
    assert run(setup(), *wls, config=only_final).preemptions == ()


def test_less_than_initial_share_allows_a_victim_while_the_preemptor_stays_below_the_victims_share() -> None:
    wls = [*using("team-a", 3, amount="2"), *using("team-b", 4), wants("b", "team-b", "1")]
    assert victims(run(setup(), *wls, config=FAIR)) == {"team-a-run2": "InCohortFairSharing"}


def test_cluster_queue_status_reports_the_weighted_share() -> None:
    d = run(setup(a_weight="2"), *using("team-a", 4), *using("team-b", 4), config=FAIR)
    # 4 of the 10 lendable cpu borrowed: 400 per mille, halved by weight 2.
    assert (queue_state(d, "team-a").weighted_share, queue_state(d, "team-b").weighted_share) == (200, 400)
