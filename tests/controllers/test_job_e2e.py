"""Jobs run for real: the Job controller beside the node agent, which starts the pods as
processes (pods are placed by ``nodeName`` in the template, so no scheduler is involved).
The controller's clock runs 100 times faster, so back-off and deadlines take a moment."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from jobkit import Cluster, core_registry, job_manifest, names

from kubehpc.api.cluster_config import parse_cluster_config, resolve_nodes
from kubehpc.controllers.job import JobController, ScaledClock
from kubehpc.node.agent import NodeAgent
from kubehpc.store.home import Home
from kubehpc.store.store import Store

CLUSTER = {
    "apiVersion": "kubehpc.io/v1alpha1",
    "kind": "ClusterConfig",
    "metadata": {"name": "e2e"},
    "spec": {"nodePools": [{"name": "cpu", "cpu": "4", "memory": "4Gi"}]},
}


class Machine(Cluster):
    def __init__(self, tmp_path: Path) -> None:
        super().__init__(store=Store(core_registry(), None))
        config = parse_cluster_config(CLUSTER)
        self.home = Home(tmp_path / "home")
        self.agent = NodeAgent(
            self.store, config, resolve_nodes(config), self.home, heartbeat_s=0.5, subreaper=False
        )
        self.agent.start()
        self.controller = JobController(self.store, clock=ScaledClock(100))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.controller.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def shell_job(self, name: str, script: str, **spec: object) -> None:
        container = {"name": "main", "image": "busybox", "command": ["sh", "-c", script]}
        self.create(job_manifest(name, nodeName="cpu-0", containers=[container], **spec))

    def log(self, pod_name: str) -> str:
        return self.home.pod_log_path("default", pod_name, "main").read_text()

    def wait_for(self, name: str, ctype: str, timeout: float = 60.0) -> None:
        wait(
            lambda: self.condition(name, ctype) is not None,
            timeout,
            f"{name} never {ctype}: {self.status(name)}",
        )


def wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    m = Machine(tmp_path)
    yield m
    m.stop.set()
    m.thread.join(timeout=10)
    m.agent.stop(kill_pods=True)
    m.store.close()


def test_indexed_job_pods_see_their_completion_index(machine: Machine) -> None:
    machine.shell_job(
        "idx", 'echo "index=$JOB_COMPLETION_INDEX"', completionMode="Indexed", completions=3, parallelism=3
    )
    machine.wait_for("idx", "Complete")
    assert machine.status("idx")["completedIndexes"] == "0-2"
    logs = sorted(machine.log(n).strip() for n in names(machine.pods("idx")))
    assert logs == ["index=0", "index=1", "index=2"]


def test_a_missing_command_fails_the_job_with_backoff_limit_exceeded(machine: Machine) -> None:
    container = {"name": "main", "image": "busybox", "command": ["app"]}
    machine.create(job_manifest("noapp", backoffLimit=1, nodeName="cpu-0", containers=[container]))
    machine.wait_for("noapp", "Failed")
    failed = machine.condition("noapp", "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert machine.status("noapp")["failed"] == 2
    pod = machine.pods("noapp")[0]
    assert "app" in machine.log(pod["metadata"]["name"])


def test_active_deadline_stops_running_processes(machine: Machine) -> None:
    machine.shell_job("slow", "sleep 60", activeDeadlineSeconds=100, parallelism=2, completions=2)
    machine.wait_for("slow", "Failed")
    failed = machine.condition("slow", "Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"
    assert machine.status("slow")["failed"] == 2
    assert machine.status("slow")["terminating"] == 0


def test_suspend_stops_the_processes_without_counting_failures_and_resume_restarts(machine: Machine) -> None:
    machine.shell_job("pause", "sleep 60", parallelism=2, completions=2)
    wait(lambda: machine.status("pause").get("active") == 2, 30, "pods never started")
    first = set(names(machine.pods("pause")))
    machine.patch_spec("pause", suspend=True)
    wait(lambda: machine.pods("pause") == [], 30, f"pods never went: {machine.status('pause')}")
    status = machine.status("pause")
    assert machine.condition_types("pause") == ["Suspended"]
    assert status.get("failed", 0) == 0 and status.get("active", 0) == 0
    machine.patch_spec("pause", suspend=False)
    wait(lambda: machine.status("pause").get("active") == 2, 30, "pods never restarted")
    assert not first & set(names(machine.pods("pause")))
