"""The Job controller does not sync a Job again for versions its last idle pass already read
(the watch echoes of its own status writes and pod creates), nor for the binding of a pod that
pass saw unbound; any other newer version of the Job or of its pods, whoever wrote it, queues
the Job as before; a resync still queues every Job."""

from __future__ import annotations

from typing import Any

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


def bind(k: Cluster, pod: dict[str, Any], node: str = "node-1") -> dict[str, Any]:
    name = pod["metadata"]["name"]
    k.store.create(
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": NS},
            "target": {"name": node},
        }
    )
    return k.pod(name)


def seen_unbound(k: Cluster, name: str) -> tuple[JobController, dict[str, Any]]:
    """A controller at rest with ``name``, having seen the echo of its pod's create."""
    controller = synced(k, name)
    [pod] = k.pods(name)
    controller._on_pod("ADDED", pod)
    return controller, pod


def test_binding_a_pod_its_last_idle_pass_saw_unbound_queues_nothing() -> None:
    k = Cluster()
    controller, pod = seen_unbound(k, "bound")
    controller._on_pod("MODIFIED", bind(k, pod))
    assert len(controller.queue) == 0


def test_binding_a_pod_no_idle_pass_has_seen_yet_queues_the_job() -> None:
    k = Cluster()
    controller, pod = seen_unbound(k, "unseen")
    # A version newer than the last pass read, then its binding: neither was planned with.
    newer = k.store.patch(
        "v1", "Pod", pod["metadata"]["name"], {"metadata": {"labels": {"x": "y"}}}, PatchType.MERGE, NS
    )
    controller._on_pod("MODIFIED", newer)
    controller.queue = type(controller.queue)()
    controller._on_pod("MODIFIED", bind(k, newer))
    assert len(controller.queue) == 1


def test_a_resync_forgets_the_unbound_pods_it_kept() -> None:
    k = Cluster()
    controller, pod = seen_unbound(k, "forgotten")
    controller._enqueue_all()
    controller.queue = type(controller.queue)()
    controller._on_pod("MODIFIED", bind(k, pod))  # not skipped: safe, only slower
    assert len(controller.queue) == 1


def test_a_pod_bound_and_changed_otherwise_in_one_version_queues_the_job() -> None:
    k = Cluster()
    controller, pod = seen_unbound(k, "bound-and-running")
    bound = bind(k, pod)
    controller._on_pod("MODIFIED", {**bound, "status": {**bound["status"], "phase": "Running"}})
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
