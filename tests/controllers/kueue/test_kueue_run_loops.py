"""The loops as the control plane runs them: threads, watches, no hand-driving."""

from __future__ import annotations

import threading
import time

from kueuekit import NS, KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.controllers.job import JobController
from kubehpc.controllers.kueue.admission import AdmissionLoop, AdmissionOptions
from kubehpc.controllers.kueue.reconciler import JobReconciler


def eventually(check, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def test_a_queued_job_is_admitted_and_started_by_the_running_loops() -> None:
    k = KueueCluster()
    stop = threading.Event()
    admission = AdmissionLoop(k.store, AdmissionOptions(check_nodes=True, idle_wait_s=0.05))
    loops = [admission.run, JobReconciler(k.store).run, JobController(k.store).run]
    threads = [threading.Thread(target=loop, args=(stop,), daemon=True) for loop in loops]
    for t in threads:
        t.start()
    try:
        k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 2}}), local_queue("user-queue", "cq"))
        k.create(queued_job("a", parallelism=2))
        eventually(lambda: len(k.kubelet.active("a")) == 2)
        assert k.job("a")["spec"]["suspend"] is False
        assert k.condition(k.workload("a"), "Admitted")["status"] == "True"  # type: ignore[index]
        eventually(lambda: (k.cluster_queue("cq").get("status") or {}).get("admittedWorkloads") == 1)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
    assert NS == "default"
