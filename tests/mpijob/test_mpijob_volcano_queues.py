"""An MPIJob with a ``runPolicy.schedulingPolicy`` is one Volcano gang in the queue it names, as
the MPI Operator makes it with ``--gang-scheduling=volcano``: the PodGroup ``<job>`` with
``minMember`` and ``minResources`` of the launcher and its workers, admission by the queue, and
binding all-or-none.

The MPIJob controller, the Job controller (it makes the launcher's pod), Volcano's queue loop
and the scheduler with its gang step run on an in-memory store with one 8-CPU node; each is
stepped by hand, so nothing runs in the background and no process starts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mpijobkit import NS, manifest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "volcano"))
from volcanogangkit import SCHED, GangPlane
from volcanogangkit import capped_queue as queue

from kubehpc.controllers.job import JobController
from kubehpc.controllers.mpijob import Embedded, HostCheck, MPIJobController
from kubehpc.controllers.mpijob import objects as O
from kubehpc.store.client import ListOptions

Obj = dict[str, Any]


def gang_job(name: str, queue: str, workers: int = 2, **policy: Any) -> Obj:
    """Launcher and workers asking for 1 CPU each, in Volcano queue ``queue``."""
    job = manifest(name, workers=workers, runPolicy={"schedulingPolicy": {"queue": queue, **policy}})
    for replica in job["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "1", "memory": "1Gi"}
        }
    return job


class Plane(GangPlane):
    def __init__(self, tmp: Path) -> None:
        super().__init__(self._reconcile)
        self.mpi = MPIJobController(
            self.store,
            embedded=Embedded(str(tmp / "kubehpc-launch")),
            host=HostCheck(lambda prog, path: f"/usr/bin/{prog}", "/usr/bin"),
        )
        self.jobs = JobController(self.store)

    def _reconcile(self) -> None:
        for job in self.store.list(O.API_VERSION, O.KIND).items:
            self.mpi.reconcile(NS, job["metadata"]["name"])
        for launcher in self.store.list("batch/v1", "Job").items:
            self.jobs.reconcile(NS, launcher["metadata"]["name"])

    def apply(self, job: Obj) -> None:
        self.store.create(job)

    def pods(self, job: str) -> list[Obj]:
        """Workers and the launcher's pod: both carry the operator's job-name label."""
        sel = f"{O.JOB_NAME_LABEL}={job}"
        return list(self.store.list("v1", "Pod", ListOptions(namespace=NS, label_selector=sel)).items)

    def bound(self, job: str) -> list[str]:
        return sorted(
            {p["metadata"]["name"] for p in self.pods(job) if (p.get("spec") or {}).get("nodeName")}
        )

    def pod_group(self, job: str) -> Obj:
        return self.store.get(SCHED, "PodGroup", job, NS)


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[Plane]:
    p = Plane(tmp_path)
    try:
        yield p
    finally:
        p.scheduler.stop()


def test_the_pod_group_asks_for_what_the_launcher_and_every_worker_request() -> None:
    job = O.with_defaults(gang_job("pi", "research", workers=3))
    job["metadata"]["uid"] = "u-1"
    spec = O.pod_group(job)["spec"]
    assert spec == {
        "minMember": 4,
        "queue": "research",
        "minResources": {"cpu": "4000m", "memory": "4294967296"},
    }


def test_min_available_counts_the_launcher_first_then_the_workers_it_leaves_room_for() -> None:
    job = O.with_defaults(gang_job("pi", "research", workers=3, minAvailable=2))
    assert O.pod_group(job)["spec"]["minResources"] == {"cpu": "2000m", "memory": "2147483648"}


def test_the_pod_group_takes_the_templates_priority_class_when_the_policy_names_none() -> None:
    job = O.with_defaults(gang_job("pi", "research"))
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "low"
    assert O.pod_group(job)["spec"]["priorityClassName"] == "low"
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["priorityClassName"] = "high"
    assert O.pod_group(job)["spec"]["priorityClassName"] == "high"


def test_a_job_fitting_its_queue_binds_the_launcher_and_every_worker_together(plane: Plane) -> None:
    plane.add_queue(queue("research", "8"))
    plane.apply(gang_job("pi", "research"))
    plane.settle()
    bound = plane.bound("pi")
    assert len(bound) == 3 and "pi-worker-0" in bound and "pi-worker-1" in bound, bound
    assert any(name.startswith("pi-launcher-") for name in bound)
    assert plane.pod_group("pi")["status"]["phase"] in ("Inqueue", "Running")


def test_a_job_in_a_closed_queue_stays_wholly_unbound(plane: Plane) -> None:
    plane.add_queue(queue("closed", "8", state="Closed"))
    plane.apply(gang_job("pi", "closed"))
    plane.settle()
    assert len(plane.pods("pi")) == 3  # every pod exists ...
    assert plane.bound("pi") == []  # ... and none is placed
    assert plane.pod_group("pi")["status"]["phase"] == "Pending"


def test_a_job_over_its_queues_capability_stays_wholly_unbound_though_part_would_fit(plane: Plane) -> None:
    # The queue holds 2 CPUs, the gang asks for 3: Volcano keeps the whole PodGroup out.
    plane.add_queue(queue("small", "2"))
    plane.apply(gang_job("pi", "small"))
    plane.settle()
    assert plane.bound("pi") == []
    assert plane.pod_group("pi")["status"]["phase"] == "Pending"


def test_a_second_job_waits_for_the_queue_room_the_first_one_holds(plane: Plane) -> None:
    plane.add_queue(queue("research", "4"))
    plane.apply(gang_job("first", "research"))
    plane.settle()
    plane.apply(gang_job("second", "research"))
    plane.settle()
    assert len(plane.bound("first")) == 3
    assert plane.bound("second") == []
