"""A controller stopped at any point and restarted counts every finished pod exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from jobkit import NS, Cluster, job_manifest

from kubehpc.controllers.job import JobController, plan_job
from kubehpc.controllers.job.spec import JobSpec
from kubehpc.store.client import DeleteOptions, Propagation


class Crash(Exception):
    pass


class CrashingController(JobController):
    """Dies when it is about to strip the tracking finalizers (status already stored)."""

    def _strip_finalizer(self, namespace: str, pod_name: str) -> None:
        raise Crash(pod_name)


class CrashAfterStripping(JobController):
    """Strips finalizers, then dies before it stores the counters."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stripped = 0

    def _strip_finalizer(self, namespace: str, pod_name: str) -> None:
        super()._strip_finalizer(namespace, pod_name)
        self.stripped += 1

    def reconcile(self, namespace: str, name: str) -> float | None:
        for _ in range(2):  # one pass stores the uncounted UIDs and strips; then "crash"
            job = self.client.get("batch/v1", "Job", name, namespace)
            spec = JobSpec.of(job)
            plan = plan_job(job, self._owned_pods(spec)[0], self.clock.now())
            self._apply(job, spec, plan)
            if self.stripped:
                raise Crash(name)
        return None


def crashing(k: Cluster, cls: type[JobController]) -> JobController:
    return cls(k.store, clock=k.clock, events=lambda *a: None)


@pytest.mark.parametrize("mode", ["NonIndexed", "Indexed"])
def test_restart_after_status_write_before_finalizer_removal_counts_once(mode: str) -> None:
    k = Cluster()
    k.create(job_manifest("r", completions=3, parallelism=3, completionMode=mode))
    k.sync("r")
    a, b, _ = k.pods("r")
    k.succeed(a)
    k.fail(b)
    with pytest.raises(Crash):
        crashing(k, CrashingController).reconcile(NS, "r")
    stored = k.status("r")
    if mode == "NonIndexed":
        assert stored["uncountedTerminatedPods"] == {
            "succeeded": [a["metadata"]["uid"]],
            "failed": [b["metadata"]["uid"]],
        }
    else:
        assert stored["completedIndexes"] == "0"
    # Restart: a new controller with nothing in memory.
    k.controller = k.new_controller()
    k.sync("r")
    k.sync("r")
    status = k.status("r")
    assert (status["succeeded"], status["failed"]) == (1, 1)
    assert status["uncountedTerminatedPods"] == {}


def test_restart_after_finalizer_removal_before_counters_counts_once() -> None:
    k = Cluster()
    k.create(job_manifest("r", completions=2, parallelism=2))
    k.sync("r")
    a, b = k.pods("r")
    k.succeed(a)
    k.fail(b)
    with pytest.raises(Crash):
        crashing(k, CrashAfterStripping).reconcile(NS, "r")
    stored = k.status("r")
    assert (stored.get("succeeded", 0), stored.get("failed", 0)) == (0, 0)
    assert stored["uncountedTerminatedPods"] == {
        "succeeded": [a["metadata"]["uid"]],
        "failed": [b["metadata"]["uid"]],
    }
    assert not k.pod(a["metadata"]["name"])["metadata"].get("finalizers")
    k.controller = k.new_controller()
    for _ in range(3):
        k.sync("r")
    status = k.status("r")
    assert (status["succeeded"], status["failed"]) == (1, 1)


def test_restarted_controller_neither_recreates_pods_nor_recounts_finished_ones() -> None:
    k = Cluster()
    k.create(job_manifest("r", completions=4, parallelism=2))
    k.sync("r")
    k.succeed(k.active("r")[0])
    k.sync("r")
    before = {p["metadata"]["name"] for p in k.pods("r")}
    for _ in range(3):
        k.controller = k.new_controller()
        k.sync("r")
    assert {p["metadata"]["name"] for p in k.pods("r")} == before
    assert k.status("r")["succeeded"] == 1


def test_restarted_controller_keeps_the_back_off_of_pods_that_keep_failing() -> None:
    k = Cluster()
    k.create(job_manifest("r", backoffLimit=6))
    k.sync("r")
    for _ in range(2):
        k.fail(k.active("r")[0])
        k.sync("r")
        k.clock.advance(60)
        k.sync("r")
    k.fail(k.active("r")[0])
    k.controller = k.new_controller()
    assert k.sync("r") == 40.0  # third failure in a row: 40s, even though memory was lost


@pytest.mark.parametrize("propagation", [Propagation.ORPHAN, Propagation.BACKGROUND])
def test_pods_of_a_deleted_job_lose_the_tracking_finalizer(propagation: Propagation) -> None:
    k = Cluster()
    k.create(job_manifest("gone", parallelism=2, completions=2, nodeName="node-1"))
    k.sync("gone")
    k.store.delete("batch/v1", "Job", "gone", NS, DeleteOptions(propagation_policy=propagation))
    k.sync("gone")
    leftovers = k.store.list("v1", "Pod").items
    assert len(leftovers) == 2
    assert all(not p["metadata"].get("finalizers") for p in leftovers)


def test_a_finished_job_releases_pods_still_holding_the_finalizer() -> None:
    k = Cluster()
    k.create(job_manifest("done"))
    k.sync("done")
    pod = k.active("done")[0]
    k.succeed(pod)
    k.sync("done")
    assert k.condition("done", "Complete") is not None
    # Someone re-adds the finalizer behind the controller's back (or a crash left it there).
    fresh = k.pod(pod["metadata"]["name"])
    fresh["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    k.store.update(fresh)
    k.sync("done")
    assert not k.pod(pod["metadata"]["name"])["metadata"].get("finalizers")
    assert k.status("done")["succeeded"] == 1
