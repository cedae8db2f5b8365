"""The scheduler-plugins PodGroup's status follows its labelled pods."""

from __future__ import annotations

from typing import Any

from volcanokit import Volcano, container

from kubehpc.controllers.volcano import CoschedulingStatus

PG = "scheduling.x-k8s.io/v1alpha1"


def member(v: Volcano, name: str, group: str = "nginx") -> None:
    v.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": {"scheduling.x-k8s.io/pod-group": group},
            },
            "spec": {"containers": [container()]},
        }
    )


def status(v: Volcano) -> dict[str, Any]:
    return dict(v.store.get(PG, "PodGroup", "nginx", "default").get("status") or {})


def test_phases_follow_the_pods_from_pending_to_finished() -> None:
    v = Volcano()
    loop = CoschedulingStatus(v.store, now=lambda: "2026-01-01T00:00:00Z")
    v.create(
        {
            "apiVersion": PG,
            "kind": "PodGroup",
            "metadata": {"name": "nginx", "namespace": "default"},
            "spec": {"minMember": 2, "scheduleTimeoutSeconds": 10},
        }
    )
    member(v, "p0")
    loop.sync()
    assert status(v)["phase"] == "Pending"
    assert status(v)["scheduleStartTime"] == "2026-01-01T00:00:00Z"
    member(v, "p1")
    loop.sync()
    assert status(v)["phase"] == "PreScheduling"
    v.bind("p0")
    v.set_phase("p0", "Running")
    loop.sync()
    assert status(v)["phase"] == "Scheduling"
    v.bind("p1")
    v.set_phase("p1", "Running")
    loop.sync()
    assert (status(v)["phase"], status(v)["running"]) == ("Running", 2)
    v.finish("p0")
    v.finish("p1")
    loop.sync()
    assert (status(v)["phase"], status(v)["succeeded"]) == ("Finished", 2)


def test_a_failed_member_fails_the_group() -> None:
    v = Volcano()
    loop = CoschedulingStatus(v.store)
    v.create(
        {
            "apiVersion": PG,
            "kind": "PodGroup",
            "metadata": {"name": "nginx", "namespace": "default"},
            "spec": {"minMember": 2},
        }
    )
    for name in ("p0", "p1"):
        member(v, name)
        v.bind(name)
        v.set_phase(name, "Running")
    v.finish("p1", exit_code=1)
    loop.sync()
    assert (status(v)["phase"], status(v)["failed"]) == ("Failed", 1)
