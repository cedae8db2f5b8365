"""Properties over random cohorts and workloads: quotas are never exceeded, every workload is
accounted for exactly once, and the decision does not depend on input order."""

from __future__ import annotations

from admissionkit import FLAVOR, cohort_queue, snapshot, workload
from hypothesis import given, settings
from hypothesis import strategies as st

from kubehpc.sched.admission import decide

queue_specs = st.lists(
    st.tuples(
        st.integers(0, 12),  # nominal cpu
        st.one_of(st.none(), st.integers(0, 12)),  # borrowingLimit
        st.one_of(st.none(), st.integers(0, 12)),  # lendingLimit
    ),
    min_size=1,
    max_size=4,
)
workload_specs = st.lists(
    st.tuples(st.integers(0, 3), st.integers(1, 8), st.integers(0, 3), st.integers(0, 5)),
    max_size=25,
)


def build(
    queues: list[tuple[int, int | None, int | None]], wls: list[tuple[int, int, int, int]]
) -> tuple[str, list]:
    setup = FLAVOR
    for i, (nominal, borrow, lend) in enumerate(queues):
        setup += cohort_queue(
            f"q{i}",
            "co",
            str(nominal),
            borrowing_limit=None if borrow is None else str(borrow),
            lending_limit=None if lend is None else str(min(lend, nominal)),
            preemption="preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}",
        )
    objs = [
        workload(f"w{j}", f"q{q % len(queues)}", requests={"cpu": str(cpu)}, priority=prio, created=t)
        for j, (q, cpu, prio, t) in enumerate(wls)
    ]
    return setup, objs


@settings(max_examples=60, deadline=None)
@given(queue_specs, workload_specs)
def test_admissions_never_exceed_nominal_plus_borrowing_limits(queues: list, wls: list) -> None:
    setup, objs = build(queues, wls)
    d = decide(snapshot(setup, *objs), 0.0)
    used = {cq.name: sum(u for _, r, u in cq.usage if r == "cpu") for cq in d.cluster_queues}
    for i, (nominal, borrow, _) in enumerate(queues):
        if borrow is not None:
            assert used[f"q{i}"] <= (nominal + borrow) * 1000
    assert sum(used.values()) <= sum(n for n, _, _ in queues) * 1000
    # Lending limits: what each queue keeps for itself (nominal - lendingLimit) is never pooled,
    # so the usage beyond those kept parts fits in the pooled parts.
    kept = [0 if lend is None else (nominal - min(lend, nominal)) * 1000 for nominal, _, lend in queues]
    pooled_use = sum(max(0, used[f"q{i}"] - kept[i]) for i in range(len(queues)))
    assert pooled_use <= sum(n * 1000 - kept[i] for i, (n, _, _) in enumerate(queues))


@settings(max_examples=60, deadline=None)
@given(queue_specs, workload_specs)
def test_every_workload_is_admitted_or_explained_exactly_once(queues: list, wls: list) -> None:
    setup, objs = build(queues, wls)
    d = decide(snapshot(setup, *objs), 0.0)
    keys = [a.workload for a in d.admissions] + [p.workload for p in d.pending]
    assert sorted(keys) == sorted(f"default/w{j}" for j in range(len(wls)))
    # Victims can only be workloads this very call admitted (nothing held quota before it).
    assert {p.victim for p in d.preemptions} <= {a.workload for a in d.admissions}
    assert all(p.message for p in d.pending)


@settings(max_examples=30, deadline=None)
@given(queue_specs, workload_specs)
def test_the_decision_does_not_depend_on_input_order(queues: list, wls: list) -> None:
    setup, objs = build(queues, wls)
    assert decide(snapshot(setup, *objs), 0.0) == decide(snapshot(setup, *reversed(objs)), 0.0)
