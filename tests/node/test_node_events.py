"""The node agent records v1 Events as the kubelet does (source kubelet, host = node)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from test_node_agent import Cluster

from kubehpc.node.events import EventSink
from kubehpc.store.client import ListOptions


@pytest.fixture
def cluster(tmp_path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, backoff_base=60.0)
    yield c
    c.agent.stop(kill_pods=True)
    c.store.close()


def _event(cluster: Cluster, pod: str, reason: str, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        for ev in cluster.store.list("v1", "Event", ListOptions(namespace="default")).items:
            if ev["involvedObject"]["name"] == pod and ev["reason"] == reason:
                return ev
        assert time.monotonic() < deadline, f"no {reason} event for pod {pod}"
        time.sleep(0.05)


def test_a_started_container_has_created_and_started_events_from_the_kubelet_of_its_node(cluster):
    p = cluster.pod("ok", ["true"])
    created, started = _event(cluster, "ok", "Created"), _event(cluster, "ok", "Started")
    assert (created["type"], created["message"]) == ("Normal", "Created container c")
    assert (started["type"], started["message"]) == ("Normal", "Started container c")
    assert started["source"] == {"component": "kubelet", "host": "gpu-0"}
    assert started["involvedObject"]["kind"] == "Pod"
    assert started["involvedObject"]["uid"] == p["metadata"]["uid"]


def test_deleting_a_running_pod_records_killing_for_each_running_container(cluster):
    cluster.pod("long", ["sleep", "60"], terminationGracePeriodSeconds=1)
    cluster.phase("long", "Running")
    cluster.store.delete("v1", "Pod", "long", "default")
    ev = _event(cluster, "long", "Killing")
    assert (ev["type"], ev["message"]) == ("Normal", "Stopping container c")


def test_a_container_waiting_to_restart_records_back_off(cluster):
    p = cluster.pod("crash", ["sh", "-c", "exit 1"], restartPolicy="OnFailure")
    ev = _event(cluster, "crash", "BackOff")
    assert ev["type"] == "Warning"
    assert ev["message"] == (
        f"Back-off restarting failed container c in pod crash_default({p['metadata']['uid']})"
    )


def test_a_container_that_cannot_be_executed_records_a_failed_warning_with_the_error(cluster):
    cluster.pod("noapp", ["app"])
    ev = _event(cluster, "noapp", "Failed")
    assert ev["type"] == "Warning"
    assert ev["message"] == 'Error: exec: "app": executable file not found in $PATH'


def test_a_pod_that_cannot_be_admitted_records_unexpected_admission_error(cluster):
    cluster.pod("big", ["true"], limits={"nvidia.com/gpu": 8})
    ev = _event(cluster, "big", "UnexpectedAdmissionError")
    assert ev["type"] == "Warning" and ev["message"].startswith("Allocate failed due to")


def test_events_beyond_the_queue_bound_are_dropped_and_counted_not_waited_for(cluster):
    sink = EventSink(cluster.store, ["gpu-0"], max_queued=2)  # not started: nothing drains it
    pod = cluster.pod("p", ["true"])
    for _ in range(3):
        sink.killing("gpu-0", pod, "c")
    assert sink.dropped == 1
