"""Live backfill and estimated starts on the embedded store: Jobs -> Workloads (runtime estimate
carried over) -> the admission loop backfills under a ClusterQueue's policy -> the estimate loop
writes each pending Workload's estimated start, which ``kubehpc get workloads -o wide`` shows."""

from __future__ import annotations

from typing import Any

from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, priority_class, queued_job

from kubehpc.api.kinds.kueue.workload import (
    ESTIMATED_START_ANNOTATION,
    workload_estimated_start,
    workload_reason,
)
from kubehpc.controllers.kueue.estimates import (
    ESTIMATED_START_CONDITION,
    EstimateLoop,
    EstimateOptions,
    stamp,
)
from kubehpc.sched.admission.reservations import RUNTIME_ESTIMATE_ANNOTATION
from kubehpc.store.client import PatchType

Obj = dict[str, object]


def cluster(backfill: str | None = None) -> KueueCluster:
    k = KueueCluster()
    cq = cluster_queue("cq", {"f": {"cpu": 4}})
    if backfill:
        cq["metadata"]["annotations"] = {"kubehpc.io/backfill": backfill}
    # Jobs created within one second tie on creation time (then uids order them, at random):
    # priorities give the queue order each test is about.
    k.create(flavor("f"), cq, local_queue("user-queue", "cq"))
    k.create(*(priority_class(f"p{n}", n) for n in (1, 2, 3)))
    return k


def job(
    name: str, cpu: int, seconds: int | None = None, *, deadline: int | None = None, rank: int = 0
) -> Obj:
    """``rank`` 1-3: a priority class; a higher rank goes first in the queue."""
    j = queued_job(
        name,
        cpu=str(cpu),
        annotations={RUNTIME_ESTIMATE_ANNOTATION: str(seconds)} if seconds is not None else None,
        labels={"kueue.x-k8s.io/priority-class": f"p{rank}"} if rank else None,
    )
    if deadline is not None:
        j["spec"]["activeDeadlineSeconds"] = deadline
    return j


def admitted(k: KueueCluster, name: str) -> bool:
    return k.condition(k.workload(name), "Admitted") is not None


def test_the_jobs_runtime_estimate_is_carried_onto_its_workload() -> None:
    k = cluster()
    labelled = queued_job("kueue-limit", labels={"kueue.x-k8s.io/max-exec-time-seconds": "900"})
    k.submit(job("annotated", 1, 300), job("deadline", 1, deadline=600), labelled)
    assert k.workload("annotated")["metadata"]["annotations"][RUNTIME_ESTIMATE_ANNOTATION] == "300"
    assert k.workload("deadline")["metadata"]["annotations"][RUNTIME_ESTIMATE_ANNOTATION] == "600"
    assert k.workload("kueue-limit")["spec"]["maximumExecutionTimeSeconds"] == 900


def test_easy_backfill_holds_back_a_job_that_would_delay_the_blocked_head() -> None:
    k = cluster("easy")
    k.submit(job("running", 3, 100), job("big", 4, 50, rank=3))
    k.clock.advance(10)
    k.submit(job("long", 1, 1000, rank=2), job("short", 1, 60, rank=1))
    assert admitted(k, "running") and admitted(k, "short")
    assert not admitted(k, "big") and not admitted(k, "long")
    assert workload_reason(k.workload("long")) == "WaitsForReservation"


def test_without_a_backfill_policy_the_long_job_passes_the_head_as_in_kueue() -> None:
    k = cluster()
    k.submit(job("running", 3, 100), job("big", 4, 50, rank=3))
    k.clock.advance(10)
    k.submit(job("long", 1, 1000))
    assert admitted(k, "long")


def test_every_pending_workload_gets_an_estimated_start_shown_in_wide_output() -> None:
    k = cluster()
    k.submit(job("running", 3, 100), job("big", 4, 50, rank=2), job("after", 2, 30, rank=1))
    t0 = k.clock.now().timestamp()  # running was admitted now
    estimator = EstimateLoop(k.store, clock=k.clock)
    assert estimator.refresh() == 2
    big, after = k.workload("big"), k.workload("after")
    assert workload_estimated_start(big) == stamp(t0 + 100)
    assert workload_estimated_start(after) == stamp(t0 + 150)
    assert workload_estimated_start(k.workload("running")) is None
    assert estimator.refresh() == 0  # nothing moved: nothing written


def test_the_estimate_moves_when_a_job_ends_early_and_goes_away_once_admitted() -> None:
    k = cluster()
    k.submit(job("running", 3, 100), job("big", 4, 50, rank=2), job("after", 2, 30, rank=1))
    t0 = k.clock.now().timestamp()
    estimator = EstimateLoop(k.store, clock=k.clock)
    estimator.refresh()
    k.clock.advance(20)
    k.finish_pods("running")
    k.settle()
    assert admitted(k, "big")
    estimator.refresh()
    assert ESTIMATED_START_ANNOTATION not in (k.workload("big")["metadata"].get("annotations") or {})
    assert workload_estimated_start(k.workload("after")) == stamp(t0 + 20 + 50)


def estimate_condition(wl: dict[str, Any]) -> dict[str, Any] | None:
    found = [c for c in wl["status"].get("conditions") or () if c["type"] == ESTIMATED_START_CONDITION]
    return found[0] if found else None


def test_the_estimated_start_is_also_a_condition_in_the_workload_status() -> None:
    k = cluster()
    k.submit(job("running", 3, 100), job("big", 4, 50, rank=2))
    t0 = k.clock.now().timestamp()
    EstimateLoop(k.store, clock=k.clock).refresh()
    cond = estimate_condition(k.workload("big"))
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("True", "Estimated")
    assert f"expected to be admitted at {stamp(t0 + 100)}" in cond["message"]
    assert "ClusterQueue cq" in cond["message"]
    assert k.condition(k.workload("big"), "QuotaReserved")["status"] == "False"  # Kueue's, kept
    assert estimate_condition(k.workload("running")) is None


def test_the_estimate_condition_follows_the_estimate_and_goes_once_admitted() -> None:
    k = cluster()
    k.submit(job("running", 3, 100), job("big", 4, 50, rank=2), job("after", 2, 30, rank=1))
    t0 = k.clock.now().timestamp()
    estimator = EstimateLoop(k.store, clock=k.clock)
    estimator.refresh()
    assert stamp(t0 + 150) in estimate_condition(k.workload("after"))["message"]  # type: ignore[index]
    k.clock.advance(20)
    k.finish_pods("running")
    k.settle()
    estimator.refresh()
    assert admitted(k, "big") and estimate_condition(k.workload("big")) is None
    assert stamp(t0 + 20 + 50) in estimate_condition(k.workload("after"))["message"]  # type: ignore[index]


def test_behind_a_job_without_estimate_the_start_is_unknown() -> None:
    k = cluster()
    k.submit(job("running", 3), job("big", 4, 50))
    EstimateLoop(k.store, clock=k.clock).refresh()
    assert workload_estimated_start(k.workload("big")) is None
    assert estimate_condition(k.workload("big")) is None


def test_a_pass_with_nothing_changed_and_no_job_overrunning_recomputes_nothing() -> None:
    k = cluster()
    k.submit(job("running", 3, 100), job("big", 4, 50))
    estimator = EstimateLoop(k.store, clock=k.clock)
    assert estimator.refresh() == 1
    computed = estimator.computed
    estimator.refresh()  # the estimator's own write changed big: one more look
    estimator.refresh()
    assert estimator.computed == computed + 1
    k.clock.advance(150)  # running is now past its estimated end: big's estimate moves
    estimator.refresh()
    assert estimator.computed == computed + 2
    assert workload_estimated_start(k.workload("big")) == stamp(k.clock.now().timestamp() + 1)


def test_a_pass_converts_only_the_workloads_changed_since_the_last() -> None:
    k = cluster()
    k.submit(job("running", 3, 100), job("big", 4, 50, rank=2), job("after", 2, 30, rank=1))
    estimator = EstimateLoop(k.store, clock=k.clock)
    estimator.refresh()
    estimator.refresh()  # its own writes changed the pending two: they are converted again
    converted = estimator.memo.converted
    name = k.workload("running")["metadata"]["name"]
    k.store.patch(
        "kueue.x-k8s.io/v1beta2",
        "Workload",
        name,
        {"metadata": {"labels": {"seen": "yes"}}},
        PatchType.MERGE,
        "default",
    )
    estimator.refresh()
    assert estimator.memo.converted == converted + 1


def test_a_long_pass_spaces_the_next_so_passes_keep_to_their_share_of_the_time() -> None:
    loop = EstimateLoop(KueueCluster().store, EstimateOptions(period_s=5.0, max_share=0.05))
    assert loop.next_wait(0.1) == 5.0  # short passes: every period
    assert loop.next_wait(0.5) == 10.0  # a half-second pass: a twentieth of the time
