"""What makes the admission loop run a cycle. A change of what admission reads in a workload or
queue always does; a change of room on the nodes (a pod bound or ended, a node changed) does only
while the last cycle left workloads waiting, since nothing else could use the room. Under a
batch window, a long cycle is followed by a pause as long as itself."""

from __future__ import annotations

from typing import Any

import pytest
from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, node, queued_job

from kubehpc.controllers.kueue.admission import AdmissionLoop, AdmissionOptions
from kubehpc.controllers.kueue.cache import NODE, POD, WORKLOAD, AdmissionCache
from kubehpc.store.client import DeleteOptions

Obj = dict[str, Any]


def bound_pod(name: str, node_name: str, rv: int = 1) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name, "resourceVersion": str(rv)},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }


def test_a_pod_or_node_change_is_a_change_of_room_not_of_workloads() -> None:
    cache = AdmissionCache()
    cache.dirty = cache.room_dirty = False
    cache.put(POD, bound_pod("p", "n1"))
    cache.put(NODE, {"metadata": {"name": "n2", "resourceVersion": "2"}, "status": {}})
    assert cache.room_dirty and not cache.dirty
    cache.put(WORKLOAD, {"metadata": {"name": "w", "namespace": "default", "uid": "w"}, "spec": {}})
    assert cache.dirty


def cluster() -> KueueCluster:
    k = KueueCluster(check_nodes=True)
    k.create(
        node("n1"), flavor("f"), cluster_queue("cq", {"f": {"cpu": 100}}), local_queue("user-queue", "cq")
    )
    return k


def bind_all(k: KueueCluster, job: str, node_name: str = "n1") -> None:
    for pod in k.kubelet.active(job):
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod["metadata"]["name"], "namespace": "default"},
            "target": {"kind": "Node", "name": node_name},
        }
        k.store.create(binding)


def test_room_changing_with_nothing_waiting_starts_no_cycle() -> None:
    k = cluster()
    k.submit(queued_job("a", parallelism=2))
    assert k.condition(k.workload("a"), "QuotaReserved")["status"] == "True"  # type: ignore[index]
    bind_all(k, "a")
    k.admission.sync()
    assert k.admission.cache.room_dirty
    assert k.admission.step() is None  # nothing waits for the room: no cycle


def test_room_freed_while_a_workload_waits_for_it_starts_a_cycle_that_admits_it() -> None:
    k = cluster()
    squatter = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "squatter", "namespace": "default"},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "4"}}}],
        },
    }
    k.create(squatter)  # fills n1, outside any queue
    k.submit(queued_job("b", parallelism=1))
    assert k.condition(k.workload("b"), "QuotaReserved")["status"] == "False"  # type: ignore[index]
    gone_now = DeleteOptions(grace_period_seconds=0)
    k.store.delete("v1", "Pod", "squatter", "default", gone_now)  # room again; nothing else changed
    k.admission.sync()
    assert k.admission.cache.room_dirty and not k.admission.cache.dirty
    report = k.admission.step()
    assert report is not None and report.admitted == 1
    assert k.condition(k.workload("b"), "QuotaReserved")["status"] == "True"  # type: ignore[index]


def test_under_a_batch_window_a_long_cycle_is_followed_by_a_pause_as_long() -> None:
    loop = AdmissionLoop(KueueCluster().store, AdmissionOptions(batch_s=0.2, pause_per_cycle_s=1.0))
    loop._last_cycle_s = 0.05
    assert loop._cycle_gap() == 0.2  # short cycles: the window
    loop._last_cycle_s = 0.7
    assert loop._cycle_gap() == 0.7  # a long one: as long again


def test_without_a_batch_window_every_step_may_cycle() -> None:
    loop = AdmissionLoop(KueueCluster().store, AdmissionOptions(batch_s=0.0))
    loop._last_cycle_s = 5.0
    assert loop._cycle_gap() == 0.0


def test_a_cycle_is_as_long_as_the_cpu_it_took_not_the_wall_time_of_other_threads() -> None:
    # The loop's thread clock advances 0.15 s across the cycle, as if the cycle itself ran that
    # long; its wall time (a few milliseconds here) does not count.
    cpu = [10.0]

    def cpu_clock() -> float:
        cpu[0] += 0.15
        return cpu[0]

    k = KueueCluster()
    loop = AdmissionLoop(k.store, AdmissionOptions(batch_s=0.2, pause_per_cycle_s=1.0), cpu_clock=cpu_clock)
    loop.sync()
    loop.cache.dirty = True
    assert loop.step() is not None
    assert loop._last_cycle_s == pytest.approx(0.15)
    assert loop._cycle_gap() == 0.2
