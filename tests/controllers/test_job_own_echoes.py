"""The Job controller does not sync a Job again for versions its last idle pass already read
(the watch echoes of its own status writes and pod creates); any newer version of the Job or
of its pods, whoever wrote it, queues the Job as before; a resync still queues every Job."""

from __future__ import annotations

from jobkit import NS, Cluster, job_manifest

from kubehpc.controllers.job import JobController
from kubehpc.store.client import PatchType


def synced(k: Cluster, name: str) -> JobController:
    """A controller that has just brought ``name`` to rest (its pod created, status written),
    with an empty queue."""
    k.create(job_manifest(name))
    k.sync(name)
    assert len(k.controller.queue) == 0
    return k.controller


def test_the_echo_of_its_own_status_write_queues_nothing() -> None:
    k = Cluster()
    controller = synced(k, "echo")
    controller._on_job("MODIFIED", k.job("echo"))  # the version the last pass wrote and read
    assert len(controller.queue) == 0


def test_the_echo_of_its_own_pod_create_queues_nothing() -> None:
    k = Cluster()
    controller = synced(k, "echo")
    [pod] = k.pods("echo")
    controller._on_pod("ADDED", pod)
    assert len(controller.queue) == 0


def test_a_newer_job_version_from_anyone_queues_the_job() -> None:
    k = Cluster()
    controller = synced(k, "newer")
    k.store.patch("batch/v1", "Job", "newer", {"metadata": {"labels": {"x": "y"}}}, PatchType.MERGE, NS)
    controller._on_job("MODIFIED", k.job("newer"))
    assert len(controller.queue) == 1


def test_a_newer_pod_version_queues_the_job() -> None:
    k = Cluster()
    controller = synced(k, "pod-moved")
    [pod] = k.pods("pod-moved")
    controller._on_pod("MODIFIED", k.run(pod))
    assert len(controller.queue) == 1


def test_a_new_job_is_queued_even_at_an_old_version() -> None:
    k = Cluster()
    controller = synced(k, "added")
    controller._on_job("ADDED", k.job("added"))  # a re-listed watch replays ADDED
    assert len(controller.queue) == 1


def test_a_failed_commit_forgets_what_its_passes_read() -> None:
    k = Cluster()
    controller = synced(k, "rolled-back")
    controller._forget_planned([(NS, "rolled-back")])
    controller._on_job("MODIFIED", k.job("rolled-back"))
    assert len(controller.queue) == 1


def test_a_resync_queues_every_job_even_one_at_rest() -> None:
    k = Cluster()
    controller = synced(k, "at-rest")
    k.create(job_manifest("new"))
    controller._enqueue_all()
    assert len(controller.queue) == 2
