"""Cluster mode's admission gate (Kubernetes 1.20 has no Job suspend): pods of a queue-labelled
Job wait unbound until the Job carries the admitted annotation; other pods pass straight through."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kubehpc.api.kinds import build_registry
from kubehpc.controllers.kueue.jobframework import PodSetInfo
from kubehpc.controllers.scheduler import SchedulerOptions
from kubehpc.kube.gate import GatedScheduler
from kubehpc.kube.gatedjob import ADMITTED_ANNOTATION, GatedJob
from kubehpc.store.client import PatchType
from kubehpc.store.store import Store

Obj = dict[str, Any]


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        node = s.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        node["status"] = {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
        s.update_status(node)
        yield s


@pytest.fixture
def scheduler(store: Store) -> Iterator[GatedScheduler]:
    sched = GatedScheduler(store, SchedulerOptions(scheduler_names=("kubehpc",)))
    sched.start(run_loop=False)
    yield sched
    sched.stop()


def make_job(store: Store, name: str, queue: str) -> Obj:
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return store.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "x", "command": ["true"]}],
                    }
                }
            },
        }
    )


def make_pod(store: Store, name: str, job: Obj | None) -> Obj:
    meta: Obj = {"name": name, "namespace": "default"}
    if job is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": job["metadata"]["name"],
                "uid": job["metadata"]["uid"],
                "controller": True,
            }
        ]
    return store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {
                "schedulerName": "kubehpc",
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
    )


def node_of(store: Store, name: str) -> str:
    return str(store.get("v1", "Pod", name, "default")["spec"].get("nodeName") or "")


def settle(scheduler: GatedScheduler) -> None:
    for _ in range(5):
        scheduler.step(0.2)


def test_pods_of_an_unadmitted_queued_job_are_held(store: Store, scheduler: GatedScheduler) -> None:
    job = make_job(store, "queued", "team")
    make_pod(store, "queued-0", job)
    settle(scheduler)
    assert node_of(store, "queued-0") == ""
    assert scheduler.held_count() == 1


def test_admission_opens_the_gate(store: Store, scheduler: GatedScheduler) -> None:
    job = make_job(store, "queued", "team")
    make_pod(store, "queued-0", job)
    settle(scheduler)
    store.patch(
        "batch/v1",
        "Job",
        "queued",
        {"metadata": {"annotations": {ADMITTED_ANNOTATION: "true"}}},
        PatchType.MERGE,
        "default",
    )
    settle(scheduler)
    assert node_of(store, "queued-0") == "n1"
    assert scheduler.held_count() == 0


def test_pods_of_unqueued_jobs_and_bare_pods_pass(store: Store, scheduler: GatedScheduler) -> None:
    job = make_job(store, "plain", "")
    make_pod(store, "plain-0", job)
    make_pod(store, "bare", None)
    settle(scheduler)
    assert node_of(store, "plain-0") == "n1"
    assert node_of(store, "bare") == "n1"


def test_a_pod_seen_before_its_job_waits_for_the_job(store: Store) -> None:
    job = {"metadata": {"name": "later", "uid": "uid-later"}}
    make_pod(store, "early", job)
    sched = GatedScheduler(store, SchedulerOptions(scheduler_names=("kubehpc",)))
    sched.start(run_loop=False)
    try:
        settle(sched)
        assert node_of(store, "early") == ""
    finally:
        sched.stop()


def test_eviction_closes_the_gate_again_for_waiting_pods(store: Store, scheduler: GatedScheduler) -> None:
    job = make_job(store, "evicted", "team")
    admitted = {"metadata": {"annotations": {ADMITTED_ANNOTATION: "true"}}}
    store.patch("batch/v1", "Job", "evicted", admitted, PatchType.MERGE, "default")
    scheduler.drain(0.5)
    make_pod(store, "evicted-0", job)
    scheduler.drain(0.5)  # events only, no cycle: the pod waits for one
    assert "default/evicted-0" in scheduler.cache.waiting
    evicted = {"metadata": {"annotations": {ADMITTED_ANNOTATION: None}}}
    store.patch("batch/v1", "Job", "evicted", evicted, PatchType.MERGE, "default")
    scheduler.drain(0.5)
    assert "default/evicted-0" not in scheduler.cache.waiting
    assert scheduler.held_count() == 1


def test_the_1_20_job_adapter_admits_through_the_annotation(store: Store) -> None:
    job = GatedJob(make_job(store, "adapter", "team"), store)
    assert job.is_suspended()  # a new Job has not been admitted
    job.run_with_pod_set_info([PodSetInfo(name="main", count=1)])
    assert not job.is_suspended()
    assert job.object["metadata"]["annotations"][ADMITTED_ANNOTATION] == "true"
    job.suspend()
    assert job.is_suspended()
