"""The scheduler's cache hands the core what inter-pod (anti-)affinity needs — and nothing while
no pod has such terms, so identical pods keep being placed together."""

from __future__ import annotations

from typing import Any

from kubehpc.controllers.scheduling.cache import ClusterCache

EXCLUSIVE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {}, "namespaceSelector": {}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def pod(name: str, node_name: str = "", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels or {}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            **({"nodeName": node_name} if node_name else {}),
            **spec,
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def test_without_inter_pod_terms_the_core_gets_no_pods_and_shapes_stay_shared() -> None:
    cache = ClusterCache(["default-scheduler"])
    cache.put_pod(pod("running", "n1", {"app": "a"}))
    cache.put_pod(pod("w1", labels={"idx": "1"}))
    cache.put_pod(pod("w2", labels={"idx": "2"}))
    ready = cache.active(0.0)
    assert cache.interpod_pods(ready) is None
    shapes = {ps.shape for ps in cache.pod_sets(ready)}
    assert len(shapes) == 1 and next(iter(shapes)).interpod is None


def test_a_running_pods_anti_affinity_turns_the_filter_on_for_every_waiting_pod() -> None:
    cache = ClusterCache(["default-scheduler"])
    cache.put_pod(pod("exclusive", "n1", {"job": "x"}, affinity=EXCLUSIVE))
    cache.put_pod(pod("plain", labels={"app": "b"}))
    ready = cache.active(0.0)
    pods = cache.interpod_pods(ready)
    assert pods is not None
    assert [p.labels for p in pods["n1"]] == [(("job", "x"),)]
    (waiting,) = cache.pod_sets(ready, with_identity=True)
    assert waiting.shape.interpod is not None and waiting.shape.interpod.labels == (("app", "b"),)


def test_the_filter_turns_off_again_when_the_anti_affinity_pod_is_gone() -> None:
    cache = ClusterCache(["default-scheduler"])
    cache.put_pod(pod("exclusive", "n1", affinity=EXCLUSIVE))
    cache.put_pod(pod("plain"))
    cache.delete_pod("default/exclusive")
    assert cache.interpod_pods(cache.active(0.0)) is None


def test_a_waiting_pod_with_terms_carries_them_in_its_shape() -> None:
    cache = ClusterCache(["default-scheduler"])
    cache.put_pod(pod("exclusive", labels={"job": "x"}, affinity=EXCLUSIVE))
    ready = cache.active(0.0)
    assert cache.interpod_pods(ready) == {}
    (waiting,) = cache.pod_sets(ready)
    assert waiting.shape.interpod is not None and len(waiting.shape.interpod.anti_affinity) == 1
