"""The scheduler's cache: what wakes parked pods, what holds them back."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubehpc.controllers.scheduling.cache import ClusterCache


def node(name: str, labels: dict[str, str] | None = None, heartbeat: str = "t0") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat}],
        },
    }


def pod(name: str, node_name: str = "", cpu: str = "1", phase: str = "Pending") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": phase},
    }


def parked_cache() -> ClusterCache:
    cache = ClusterCache(["default-scheduler"])
    cache.put_node(node("n"))
    cache.put_pod(pod("waiting", cpu="8"))
    cache.park(["default/waiting"])
    return cache


def test_a_node_heartbeat_leaves_parked_pods_parked() -> None:
    cache = parked_cache()
    cache.put_node(node("n", heartbeat="t1"))
    assert cache.active(now=0) == []


def test_a_node_change_the_scheduler_can_use_wakes_parked_pods() -> None:
    cache = parked_cache()
    cache.put_node(node("n", labels={"zone": "a"}))
    assert [w.key for w in cache.active(now=0)] == ["default/waiting"]


def test_a_finished_pod_frees_its_room_and_wakes_parked_pods() -> None:
    cache = parked_cache()
    cache.put_pod(pod("running", node_name="n", cpu="2", phase="Running"))
    cache.park(["default/waiting"])
    assert cache.used["n"]["cpu"] == 2000
    cache.put_pod(pod("running", node_name="n", cpu="2", phase="Succeeded"))
    assert cache.used["n"]["cpu"] == 0
    assert [w.key for w in cache.active(now=0)] == ["default/waiting"]


def test_a_failed_binding_backs_off_doubling_up_to_the_limit() -> None:
    cache = ClusterCache(["default-scheduler"])
    cache.put_pod(pod("p"))
    cache.back_off("default/p", now=100.0, initial=1.0, limit=10.0)
    assert cache.active(now=100.5) == []
    assert [w.key for w in cache.active(now=101.0)] == ["default/p"]
    for _ in range(5):
        cache.back_off("default/p", now=200.0, initial=1.0, limit=10.0)
    assert cache.backoff["default/p"][0] == 210.0


def test_an_assumed_pod_is_charged_to_its_node_and_never_waits_again() -> None:
    cache = ClusterCache(["default-scheduler"])
    cache.put_node(node("n"))
    cache.put_pod(pod("p", cpu="3"))
    cache.assume("default/p", "n", holders=Counter())
    cache.put_pod(pod("p", cpu="3"))  # a late event from before the binding
    assert cache.waiting == {}
    assert cache.used["n"]["cpu"] == 3000


def test_the_binding_of_an_assumed_pod_confirms_its_charge_once() -> None:
    cache = ClusterCache(["default-scheduler"])
    cache.put_node(node("n"))
    cache.put_pod(pod("p", cpu="1"))
    cache.assume("default/p", "n", Counter())
    assert cache.charges["default/p"].assumed
    cache.put_pod(pod("p", node_name="n", cpu="1", phase="Pending"))
    assert not cache.charges["default/p"].assumed
    assert cache.used["n"]["cpu"] == 1000


def test_pods_whose_specs_differ_only_in_what_placement_ignores_share_a_shape() -> None:
    cache = ClusterCache(["default-scheduler"])
    a, b = pod("a", cpu="1"), pod("b", cpu="1")
    a["spec"]["containers"][0]["image"] = "busybox"
    b["spec"]["containers"][0]["image"] = "alpine"
    cache.put_pod(a)
    cache.put_pod(b)
    assert cache.waiting["default/a"].shape is cache.waiting["default/b"].shape


def test_pods_of_one_spec_share_a_shape_and_another_spec_is_read_anew() -> None:
    cache = ClusterCache(["default-scheduler"])
    cache.put_pod(pod("a", cpu="1"))
    cache.put_pod(pod("b", cpu="1"))
    cache.put_pod(pod("c", cpu="2"))
    shapes = {key: w.shape for key, w in cache.waiting.items()}
    assert shapes["default/a"] is shapes["default/b"]
    assert dict(shapes["default/c"].requests)["cpu"] == 2000
