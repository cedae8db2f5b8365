"""An admission cycle commits its results in chunks, so that no other writer waits for the store
through a whole cycle of hundreds of admissions."""

from __future__ import annotations

import pytest
from kueuekit import NS, KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.controllers.kueue import admission
from kubehpc.controllers.kueue.jobs import batchjob


def five_pending_workloads() -> KueueCluster:
    k = KueueCluster()
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 8}}), local_queue("user-queue", "cq"))
    names = [f"job-{i}" for i in range(5)]
    k.create(*(queued_job(name) for name in names))
    for name in names:  # Workloads made, none admitted yet
        k.reconciler.reconcile(batchjob.INTEGRATION, NS, name)
    k.admission.sync()
    return k


def test_a_cycle_commits_its_admissions_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admission, "WRITE_BATCH", 2)
    k = five_pending_workloads()
    report = k.admission.run_cycle()
    assert report.admitted == 5
    assert report.commits == 3  # two, two, and the last one with the queues' status
    for i in range(5):
        assert k.condition(k.workload(f"job-{i}"), "Admitted")["status"] == "True"  # type: ignore[index]


def test_a_cycle_within_one_chunk_commits_once() -> None:
    k = five_pending_workloads()
    report = k.admission.run_cycle()
    assert report.admitted == 5
    assert report.commits == 1
