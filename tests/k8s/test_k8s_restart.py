"""Restarting kubehpc mid-run loses nothing and binds nothing twice; of two replicas only the
Lease holder schedules, and the other takes over when the holder dies."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter, defaultdict
from typing import Any

from k8skit import K8sEnv, Proc, fake_node, job, queues, wait_for
from test_k8s_admission import ensure, pods_of

from kubehpc.kube.rest import RestClient
from kubehpc.store.client import DeleteOptions, ListOptions

POOL = {"kubehpc-test/pool": "restart"}
MARK = {"kubehpc-test": "restart"}


class Bindings:
    """Every nodeName each watched pod was seen with, from a watch of its own."""

    def __init__(self, api: RestClient) -> None:
        self.seen: defaultdict[str, list[str]] = defaultdict(list)
        self._watch = api.watch(
            "v1", "Pod", ListOptions(namespace="default", label_selector="kubehpc-test=restart")
        )
        self.first = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self._watch:
                node = (event.object.get("spec") or {}).get("nodeName")
                name = event.object["metadata"]["name"]
                if node and (not self.seen[name] or self.seen[name][-1] != node):
                    self.seen[name].append(node)
                    self.first.set()
        except Exception:
            return

    def stop(self) -> None:
        self._watch.stop()


def lease_holder(api: RestClient) -> str:
    lease = api.get("coordination.k8s.io/v1", "Lease", "kubehpc-controller", "kube-system")
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def scheduled_events(api: RestClient) -> Counter[str]:
    events = api.list("v1", "Event", ListOptions(namespace="default")).items
    return Counter(
        e["involvedObject"]["name"]
        for e in events
        if e.get("reason") == "Scheduled"
        and str(e["involvedObject"].get("name", "")).startswith(("restart-a", "restart-b"))
    )


def test_failover_mid_run_loses_nothing_and_binds_nothing_twice(
    controller: Proc, api: RestClient, k8s: K8sEnv, tmp_path: Any
) -> None:
    ensure(api, queues("1000", name="restart"))
    for i in range(3):
        api.create(fake_node(f"restart-{i}", "16", POOL))
    second = Proc(
        ["controller", "--kubeconfig", str(k8s.kubeconfig), "--identity", "second"], tmp_path / "second.log"
    )
    bindings = Bindings(api)
    try:
        second.start()
        wait_for(
            "the second replica to start campaigning",
            lambda: "CustomResourceDefinitions installed" in second.output(),
            timeout=60,
        )
        assert lease_holder(api) == "first"

        api.create(job("restart-a", "restart", 30, "100m", ["true"], node_selector=POOL, pod_labels=MARK))
        assert bindings.first.wait(60), "no pod of restart-a was bound"
        controller.stop(signal.SIGKILL)  # in the middle of binding, no goodbye
        api.create(job("restart-b", "restart", 10, "100m", ["true"], node_selector=POOL, pod_labels=MARK))

        wait_for(
            "the second replica to take the lease over", lambda: lease_holder(api) == "second", timeout=60
        )

        def all_bound() -> bool:
            pods = pods_of(api, "restart-a") + pods_of(api, "restart-b")
            return len(pods) == 40 and all(p["spec"].get("nodeName") for p in pods)

        wait_for("all 40 pods to be bound", all_bound, timeout=90)
        wait_for("the watch to see all 40 bindings", lambda: len(bindings.seen) == 40, timeout=30)
        assert {name: nodes for name, nodes in bindings.seen.items() if len(nodes) != 1} == {}
        assert [name for name, n in scheduled_events(api).items() if n > 1] == []
        pods_per_node = Counter(
            p["spec"]["nodeName"] for p in pods_of(api, "restart-a") + pods_of(api, "restart-b")
        )
        assert sum(pods_per_node.values()) == 40 and set(pods_per_node) <= {f"restart-{i}" for i in range(3)}
    finally:
        bindings.stop()
        second.stop()  # SIGTERM: releases the lease
        controller.start()  # the session's replica again, for the tests after this one
        wait_for("the first replica to lead again", lambda: lease_holder(api) == "first", timeout=60)
        for name in ("restart-a", "restart-b"):
            api.delete("batch/v1", "Job", name, "default")
            for pod in pods_of(api, name):
                api.delete(
                    "v1", "Pod", pod["metadata"]["name"], "default", DeleteOptions(grace_period_seconds=0)
                )


def test_a_second_replica_never_schedules_while_the_first_holds_the_lease(
    controller: Proc, api: RestClient, k8s: K8sEnv, tmp_path: Any
) -> None:
    other = Proc(
        ["controller", "--kubeconfig", str(k8s.kubeconfig), "--identity", "standby"], tmp_path / "standby.log"
    ).start()
    try:
        wait_for(
            "the standby to install its CRDs",
            lambda: "CustomResourceDefinitions installed" in other.output(),
            timeout=60,
        )
        time.sleep(6)  # three election rounds
        assert lease_holder(api) == "first"
        assert "now holds lease" not in other.output()
    finally:
        other.stop()
