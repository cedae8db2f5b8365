"""The node agent on the embedded store: nodes, pods as processes, devices, restarts, deletion,
and an agent restart that adopts what runs."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubehpc.api.cluster_config import parse_cluster_config, resolve_nodes
from kubehpc.api.devices import NODE_INVENTORY_ANNOTATION, POD_DEVICES_ANNOTATION
from kubehpc.api.errors import NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.node.agent import NodeAgent
from kubehpc.node.runner import container_pids
from kubehpc.store.client import DeleteOptions
from kubehpc.store.home import Home
from kubehpc.store.store import Store

CLUSTER = {
    "apiVersion": "kubehpc.io/v1alpha1",
    "kind": "ClusterConfig",
    "metadata": {"name": "t"},
    "spec": {
        "nodePools": [
            {
                "name": "gpu",
                "cpu": "2",
                "memory": "4Gi",
                "topology": {"rack": "r1"},
                "gpus": {
                    "model": "A100-80GB",
                    "count": 4,
                    "nvlinkGroups": [[0, 1], [2, 3]],
                    "mig": {"layout": {"3": ["1g.10gb"] * 7}},
                },
            },
            {
                "name": "shared",
                "gpus": {
                    "model": "T4",
                    "count": 1,
                    "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
                },
            },
        ]
    },
}


class Cluster:
    def __init__(self, tmp_path: Path, **agent_options: Any):
        self.store = Store(build_registry(("kubehpc.api.kinds.core",)), None)
        self.config = parse_cluster_config(CLUSTER)
        self.home = Home(tmp_path / "home")
        self.agent_options = {"heartbeat_s": 0.2, "backoff_base": 0.3, "subreaper": False, **agent_options}
        self.agent = self.new_agent()

    def new_agent(self) -> NodeAgent:
        agent = NodeAgent(
            self.store, self.config, resolve_nodes(self.config), self.home, **self.agent_options
        )
        agent.start()
        return agent

    def pod(
        self, name: str, command: list[str], node: str = "gpu-0", limits: dict | None = None, **spec: Any
    ) -> dict:
        container: dict[str, Any] = {"name": "c", "image": "busybox", "command": command}
        if limits:
            container["resources"] = {"limits": limits}
        body = {"nodeName": node, "restartPolicy": "Never", "containers": [container], **spec}
        return self.store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": body,
            }
        )

    def get(self, name: str) -> dict:
        return self.store.get("v1", "Pod", name, "default")

    def log(self, name: str, container: str = "c") -> str:
        path = self.home.pod_log_path("default", name, container)
        return path.read_text() if path.exists() else ""

    def wait(self, name: str, pred: Callable[[dict], bool], timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                pod = self.get(name)
                if pred(pod):
                    return pod
            except NotFound:
                pod = {}
            assert time.monotonic() < deadline, f"pod {name} never got there: {pod.get('status')}"
            time.sleep(0.05)

    def phase(self, name: str, phase: str, timeout: float = 20.0) -> dict:
        return self.wait(name, lambda p: (p.get("status") or {}).get("phase") == phase, timeout)


@pytest.fixture
def cluster(tmp_path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    yield c
    c.agent.stop(kill_pods=True)
    c.store.close()


def test_nodes_are_registered_with_capacity_labels_and_a_lease(cluster):
    node = cluster.store.get("v1", "Node", "gpu-0")
    assert node["status"]["capacity"] == {
        "cpu": "2",
        "memory": "4194304Ki",
        "pods": "110",
        "nvidia.com/gpu": "3",
        "nvidia.com/mig-1g.10gb": "7",
    }
    assert node["status"]["allocatable"] == node["status"]["capacity"]
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert labels["nvidia.com/mig.strategy"] == "mixed"
    assert labels["topology.kubehpc.io/rack"] == "r1"
    assert NODE_INVENTORY_ANNOTATION in node["metadata"]["annotations"]
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    shared = cluster.store.get("v1", "Node", "shared-0")
    assert shared["status"]["capacity"]["nvidia.com/gpu"] == "2"
    assert (
        cluster.store.get("coordination.k8s.io/v1", "Lease", "gpu-0", "kube-node-lease")["spec"][
            "holderIdentity"
        ]
        == "gpu-0"
    )


def test_the_lease_is_renewed(cluster):
    first = cluster.store.get("coordination.k8s.io/v1", "Lease", "gpu-0", "kube-node-lease")["spec"][
        "renewTime"
    ]
    deadline = time.monotonic() + 5
    while (
        cluster.store.get("coordination.k8s.io/v1", "Lease", "gpu-0", "kube-node-lease")["spec"]["renewTime"]
        == first
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_pod_runs_and_succeeds_with_status_like_the_kubelets(cluster):
    p = cluster.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "ok", "namespace": "default"},
            "spec": {
                "nodeName": "gpu-0",
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox",
                        "command": ["sh", "-c", "echo hello from $(POD)"],
                        "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    }
                ],
            },
        }
    )
    assert p["status"]["phase"] == "Pending"
    status = cluster.phase("ok", "Succeeded")["status"]
    (cs,) = status["containerStatuses"]
    assert cs["state"]["terminated"]["reason"] == "Completed" and cs["state"]["terminated"]["exitCode"] == 0
    assert (status["podIP"], status["hostIP"]) == ("127.0.0.1", "127.0.0.1") and status["startTime"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["Initialized"] == "True" and conditions["Ready"] == "False"
    assert cluster.log("ok") == "hello from ok\n"


def test_gpu_pods_get_disjoint_devices_and_see_only_those(cluster):
    for name in ("g1", "g2"):
        cluster.pod(
            name,
            ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES; echo $NVIDIA_VISIBLE_DEVICES; sleep 0.5"],
            limits={"nvidia.com/gpu": 1},
        )
    seen = []
    for name in ("g1", "g2"):
        pod = cluster.phase(name, "Succeeded")
        recorded = json.loads(pod["metadata"]["annotations"][POD_DEVICES_ANNOTATION])["c"]
        cuda, nvidia = cluster.log(name).split()
        assert cuda == nvidia == ",".join(recorded)
        seen += recorded
    assert len(seen) == len(set(seen)) == 2


def test_devices_chosen_by_the_scheduler_are_kept(cluster):
    inventory = json.loads(
        cluster.store.get("v1", "Node", "gpu-0")["metadata"]["annotations"][NODE_INVENTORY_ANNOTATION]
    )
    third = next(d["id"] for d in inventory["devices"] if d["gpuIndex"] == 2)
    cluster.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "chosen",
                "namespace": "default",
                "annotations": {POD_DEVICES_ANNOTATION: json.dumps({"c": [third]})},
            },
            "spec": {
                "nodeName": "gpu-0",
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "command": ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"],
                        "resources": {"limits": {"nvidia.com/gpu": 1}},
                    }
                ],
            },
        }
    )
    cluster.phase("chosen", "Succeeded")
    assert cluster.log("chosen") == third + "\n"


def test_an_invalid_recorded_allocation_is_replaced(cluster):
    cluster.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "stale",
                "namespace": "default",
                "annotations": {POD_DEVICES_ANNOTATION: '{"c": ["GPU-nope"]}'},
            },
            "spec": {
                "nodeName": "gpu-0",
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "command": ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"],
                        "resources": {"limits": {"nvidia.com/gpu": 1}},
                    }
                ],
            },
        }
    )
    pod = cluster.phase("stale", "Succeeded")
    given = json.loads(pod["metadata"]["annotations"][POD_DEVICES_ANNOTATION])["c"]
    assert given != ["GPU-nope"] and cluster.log("stale") == given[0] + "\n"


def test_a_mig_request_gets_mig_devices(cluster):
    cluster.pod("mig", ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"], limits={"nvidia.com/mig-1g.10gb": 2})
    cluster.phase("mig", "Succeeded")
    devices = cluster.log("mig").strip().split(",")
    assert len(devices) == 2 and all(d.startswith("MIG-") for d in devices)


def test_a_pod_without_gpus_sees_none_on_a_gpu_node(cluster):
    cluster.pod("cpu", ["sh", "-c", 'echo "[$CUDA_VISIBLE_DEVICES]"'])
    cluster.phase("cpu", "Succeeded")
    assert cluster.log("cpu") == "[]\n"


def test_time_sliced_gpu_is_shared_as_configured(cluster):
    for name in ("s1", "s2"):
        cluster.pod(
            name,
            ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES; sleep 1"],
            node="shared-0",
            limits={"nvidia.com/gpu": 1},
        )
    cluster.phase("s1", "Running")
    cluster.phase("s2", "Running")
    cluster.pod("s3", ["true"], node="shared-0", limits={"nvidia.com/gpu": 1})
    assert cluster.phase("s3", "Failed")["status"]["reason"] == "UnexpectedAdmissionError"
    cluster.phase("s1", "Succeeded")
    cluster.phase("s2", "Succeeded")
    assert cluster.log("s1") == cluster.log("s2")


def test_a_pod_asking_for_more_gpus_than_the_node_has_fails_admission(cluster):
    cluster.pod("big", ["true"], limits={"nvidia.com/gpu": 8})
    status = cluster.phase("big", "Failed")["status"]
    assert status["reason"] == "UnexpectedAdmissionError" and "nvidia.com/gpu" in status["message"]


def test_init_containers_run_in_order_before_the_containers(cluster):
    def step(name: str, word: str) -> dict:
        return {
            "name": name,
            "image": "busybox",
            "command": ["sh", "-c", f"echo {word} >> $KUBEHPC_MOUNT_WORK/order"],
            "volumeMounts": [{"name": "work", "mountPath": "/work"}],
        }

    cluster.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "init", "namespace": "default"},
            "spec": {
                "nodeName": "gpu-0",
                "restartPolicy": "Never",
                "volumes": [{"name": "work", "emptyDir": {}}],
                "initContainers": [step("one", "1"), step("two", "2")],
                "containers": [
                    {
                        **step("c", "3"),
                        "command": [
                            "sh",
                            "-c",
                            "echo 3 >> $KUBEHPC_MOUNT_WORK/order; cat $KUBEHPC_MOUNT_WORK/order",
                        ],
                    }
                ],
            },
        }
    )
    status = cluster.phase("init", "Succeeded")["status"]
    assert cluster.log("init") == "1\n2\n3\n"
    assert [s["state"]["terminated"]["reason"] for s in status["initContainerStatuses"]] == [
        "Completed",
        "Completed",
    ]


def test_a_failing_init_container_with_restart_never_fails_the_pod(cluster):
    cluster.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "badinit", "namespace": "default"},
            "spec": {
                "nodeName": "gpu-0",
                "restartPolicy": "Never",
                "initContainers": [{"name": "i", "image": "x", "command": ["false"]}],
                "containers": [{"name": "c", "image": "x", "command": ["true"]}],
            },
        }
    )
    status = cluster.phase("badinit", "Failed")["status"]
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"


def test_restart_never_failure_fails_the_pod_with_the_exit_code(cluster):
    cluster.pod("fail", ["sh", "-c", "exit 7"])
    (cs,) = cluster.phase("fail", "Failed")["status"]["containerStatuses"]
    assert (cs["state"]["terminated"]["exitCode"], cs["state"]["terminated"]["reason"]) == (7, "Error")


def test_a_missing_command_is_an_error_with_the_os_message_in_the_log(cluster):
    cluster.pod("noapp", ["app"])
    (cs,) = cluster.phase("noapp", "Failed")["status"]["containerStatuses"]
    assert cs["state"]["terminated"]["reason"] == "Error"
    assert cluster.log("noapp") == 'exec: "app": executable file not found in $PATH\n'


def test_on_failure_restarts_with_back_off_shown_as_crash_loop(cluster):
    cluster.pod("crash", ["sh", "-c", "exit 1"], restartPolicy="OnFailure")
    pod = cluster.wait(
        "crash", lambda p: p["status"].get("containerStatuses", [{}])[0].get("restartCount", 0) >= 2
    )
    (cs,) = pod["status"]["containerStatuses"]
    assert pod["status"]["phase"] == "Running"
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    cluster.wait(
        "crash",
        lambda p: (
            p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason")
            == "CrashLoopBackOff"
        ),
    )


def test_restart_always_restarts_even_after_success(cluster):
    cluster.pod("again", ["true"], restartPolicy="Always")
    cluster.wait("again", lambda p: p["status"].get("containerStatuses", [{}])[0].get("restartCount", 0) >= 1)


def test_pods_mounting_one_claim_share_files(cluster):
    vol = [{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]

    def pod(name: str, command: str) -> None:
        cluster.store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {
                    "nodeName": "gpu-0",
                    "restartPolicy": "Never",
                    "volumes": vol,
                    "containers": [
                        {
                            "name": "c",
                            "image": "x",
                            "command": ["sh", "-c", command],
                            "workingDir": "/data",
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        }
                    ],
                },
            }
        )

    pod("writer", "echo 42 > result")
    cluster.phase("writer", "Succeeded")
    pod("reader", "cat result")
    cluster.phase("reader", "Succeeded")
    assert cluster.log("reader") == "42\n"


def test_graceful_deletion_stops_the_whole_process_tree_then_removes_the_pod(cluster):
    p = cluster.pod(
        "long",
        ["sh", "-c", "setsid sleep 60 & trap 'echo term; exit 0' TERM; while true; do sleep 0.05; done"],
        terminationGracePeriodSeconds=5,
    )
    cluster.phase("long", "Running")
    cid = f"{p['metadata']['uid']}/c"
    deadline = time.monotonic() + 5
    while len(container_pids(cid)) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cluster.store.delete("v1", "Pod", "long", "default")
    deadline = time.monotonic() + 10
    while True:
        try:
            cluster.get("long")
        except NotFound:
            break
        assert time.monotonic() < deadline, "pod was not removed"
        time.sleep(0.05)
    assert container_pids(cid) == []
    assert "term" in cluster.log("long")


def test_an_agent_restart_adopts_running_pods_without_running_them_twice(cluster, tmp_path):
    marker = tmp_path / "starts"
    p = cluster.pod("keep", ["sh", "-c", f"echo start >> {marker}; sleep 1.5; exit 3"])
    cluster.phase("keep", "Running")
    cluster.agent.stop()  # the agent goes away; the pod's process does not
    assert container_pids(f"{p['metadata']['uid']}/c")
    cluster.agent = cluster.new_agent()
    (cs,) = cluster.phase("keep", "Failed")["status"]["containerStatuses"]
    assert cs["state"]["terminated"]["exitCode"] == 3
    assert marker.read_text() == "start\n"


def test_a_pod_deleted_while_the_agent_was_down_is_killed_on_restart(cluster):
    p = cluster.pod("orphan", ["sleep", "60"])
    cluster.phase("orphan", "Running")
    cluster.agent.stop()
    cluster.store.delete("v1", "Pod", "orphan", "default")
    cid = f"{p['metadata']['uid']}/c"
    assert container_pids(cid)
    cluster.agent = cluster.new_agent()
    deadline = time.monotonic() + 10
    while container_pids(cid) or _exists(cluster, "orphan"):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _exists(cluster: Cluster, name: str) -> bool:
    try:
        cluster.get(name)
        return True
    except NotFound:
        return False


def test_a_container_started_just_before_an_agent_crash_is_adopted_not_run_again(cluster, tmp_path):
    marker = tmp_path / "starts"
    p = cluster.pod("cut", ["sh", "-c", f"echo start >> {marker}; sleep 1.5"])
    cluster.phase("cut", "Running")
    cluster.agent.stop()
    # The crash came after the fork but before the record was written.
    for record in (cluster.home.root / "node" / "gpu-0" / "containers").glob("*.json"):
        record.unlink()
    assert container_pids(f"{p['metadata']['uid']}/c")
    cluster.agent = cluster.new_agent()
    cluster.phase("cut", "Succeeded")
    assert marker.read_text() == "start\n"


def test_active_deadline_seconds_fails_the_pod_and_stops_its_containers(cluster):
    p = cluster.pod("slow", ["sleep", "60"], activeDeadlineSeconds=1, restartPolicy="Always")
    status = cluster.phase("slow", "Failed")["status"]
    assert status["reason"] == "DeadlineExceeded"
    cid = f"{p['metadata']['uid']}/c"
    deadline = time.monotonic() + 10
    while container_pids(cid):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_finished_pod_leaves_no_process_records(cluster):
    cluster.pod("tidy", ["true"])
    cluster.phase("tidy", "Succeeded")
    records = cluster.home.root / "node" / "gpu-0" / "containers"
    deadline = time.monotonic() + 5
    while list(records.glob("*.json")):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _zombie_children() -> list[int]:
    me = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                raw = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rfind(")") + 2 :].split()
            if fields[0] == "Z" and int(fields[1]) == me:
                out.append(int(name))
    return out


def test_finished_and_deleted_pods_leave_no_zombies(cluster):
    cluster.pod("z1", ["sh", "-c", "exit 1"])
    cluster.pod("z2", ["sleep", "60"])
    cluster.phase("z1", "Failed")
    cluster.phase("z2", "Running")
    cluster.store.delete("v1", "Pod", "z2", "default", DeleteOptions(grace_period_seconds=1))
    deadline = time.monotonic() + 10
    while _exists(cluster, "z2") or _zombie_children():
        assert time.monotonic() < deadline, _zombie_children()
        time.sleep(0.05)
