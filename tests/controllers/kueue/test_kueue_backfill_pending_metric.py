"""A workload held back for a backfill reservation waits for its turn: Kueue's pending_workloads
metric counts it as active, not inadmissible."""

from __future__ import annotations

from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, priority_class, queued_job

from kubehpc.api.kinds.kueue.workload import workload_reason
from kubehpc.sched.admission.reservations import RUNTIME_ESTIMATE_ANNOTATION


def job(name: str, cpu: int, seconds: int, rank: int) -> dict[str, object]:
    return queued_job(
        name,
        cpu=str(cpu),
        annotations={RUNTIME_ESTIMATE_ANNOTATION: str(seconds)},
        labels={"kueue.x-k8s.io/priority-class": f"p{rank}"},
    )


def test_a_workload_waiting_for_a_reservation_is_active_pending() -> None:
    k = KueueCluster()
    cq = cluster_queue("cq", {"f": {"cpu": 4}})
    cq["metadata"]["annotations"] = {"kubehpc.io/backfill": "easy"}
    k.create(flavor("f"), cq, local_queue("user-queue", "cq"))
    k.create(*(priority_class(f"p{n}", n) for n in (1, 2, 3)))
    k.submit(job("running", 3, 100, rank=1), job("big", 4, 50, rank=3))
    k.clock.advance(10)
    k.submit(job("long", 1, 1000, rank=2))
    assert workload_reason(k.workload("long")) == "WaitsForReservation"
    # "big" waits for quota (inadmissible); "long" fits but waits for big's reservation (active).
    assert k.metric("kubehpc_pending_workloads", cluster_queue="cq", status="active") == 1
    assert k.metric("kubehpc_pending_workloads", cluster_queue="cq", status="inadmissible") == 1
