"""`kubehpc get workloads` explains: State, Position, Reason, and Message with -o wide."""

from __future__ import annotations

from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.api.kinds.kueue.workload import (
    EXPLAIN_COLUMNS,
    workload_message,
    workload_position,
    workload_reason,
    workload_state,
)


def cluster() -> KueueCluster:
    k = KueueCluster()
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 1}}), local_queue("user-queue", "cq"))
    return k


def test_a_running_workload_reads_admitted_with_no_position() -> None:
    k = cluster()
    k.submit(queued_job("a"))
    wl = k.workload("a")
    assert (workload_state(wl), workload_position(wl), workload_reason(wl)) == ("Admitted", None, None)


def test_a_waiting_workload_reads_pending_with_its_position_and_reason() -> None:
    k = cluster()
    k.submit(queued_job("a"), queued_job("b"), queued_job("c"))
    waiting = [k.workload("b"), k.workload("c")]
    # b and c may share a creation second, and then their uids order them: either may be next.
    assert sorted(workload_position(wl) for wl in waiting) == [0, 1]  # type: ignore[type-var]
    for wl in waiting:
        assert (workload_state(wl), workload_reason(wl)) == ("Pending", "InsufficientQuota")
        assert workload_message(wl) == k.condition(wl, "QuotaReserved")["message"]  # type: ignore[index]


def test_a_finished_workload_reads_finished_with_its_reason() -> None:
    k = cluster()
    k.submit(queued_job("a"))
    k.finish_pods("a")
    k.settle()
    wl = k.workload("a")
    assert (workload_state(wl), workload_reason(wl)) == ("Finished", "Succeeded")


def test_a_preempted_workload_reads_evicted_until_it_is_admitted_again() -> None:
    wl = {
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "waiting"},
                {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "Preempted to ..."},
            ]
        }
    }
    assert (workload_state(wl), workload_reason(wl), workload_message(wl)) == (
        "Evicted",
        "Preempted",
        "Preempted to ...",
    )


def test_the_columns_are_computed_and_the_message_is_for_wide_output_only() -> None:
    assert [(c.name, c.priority, c.json_path) for c in EXPLAIN_COLUMNS] == [
        ("State", 0, ""),
        ("Position", 0, ""),
        ("Reason", 0, ""),
        ("Estimated Start", 1, ""),
        ("Message", 1, ""),
    ]
