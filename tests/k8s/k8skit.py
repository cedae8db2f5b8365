"""Helpers for the tests on a real Kubernetes 1.20 API server (scripts/k8s-testenv)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kubehpc.api.errors import NotFound
from kubehpc.kube.kubeconfig import load_client_config
from kubehpc.kube.rest import RestClient

REPO = Path(__file__).resolve().parents[2]
TESTENV = REPO / "scripts" / "k8s-testenv"
KUBECTL = "/usr/bin/kubectl"
KUBEHPC = [sys.executable, "-m", "kubehpc.cli.main"]
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0, every: float = 0.3) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


@dataclass
class K8sEnv:
    """etcd + kube-apiserver (+ kube-controller-manager) started by scripts/k8s-testenv."""

    dir: Path

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def limited_kubeconfig(self) -> Path:
        return self.dir / "kubeconfig-limited"

    def client(self) -> RestClient:
        return RestClient(load_client_config(str(self.kubeconfig)), user_agent="kubehpc-tests")

    def script(self, *args: str, timeout: float = 180.0) -> None:
        done = subprocess.run([str(TESTENV), *args], capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"k8s-testenv {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")

    def restart_apiserver(self, pause_s: float) -> None:
        self.script("restart-apiserver", str(self.dir), str(pause_s))

    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None) -> str:
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True,
            text=True,
            input=stdin,
            timeout=60,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done.stdout + (done.stderr if not check else "")


BUILD_TIMEOUT_S = 60 * 60


@contextmanager
def running_testenv(directory: Path, *components: str) -> Iterator[K8sEnv]:
    """A real API server and etcd (plus ``components``, e.g. ``controller-manager``) in
    ``directory``, built first when missing (15-20 minutes once, then cached outside the repo).
    Anything missing fails the test and says why: these tests never skip."""
    if not Path(KUBECTL).exists():
        pytest.fail(f"{KUBECTL} is missing: `make test` installs it (scripts/system-deps.sh)")
    build = subprocess.run([str(TESTENV), "build"], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if build.returncode != 0:
        pytest.fail(
            f"cannot build the Kubernetes test environment:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
        )
    env = K8sEnv(directory)
    try:
        env.script("start", str(env.dir), *components)
    except AssertionError as err:
        env.script("stop", str(env.dir))
        pytest.fail(f"cannot start the Kubernetes test environment: {err}")
    try:
        yield env
    finally:
        env.script("stop", str(env.dir))


@dataclass
class Proc:
    """A ``kubehpc`` subprocess (controller or node) with its output in a log file."""

    args: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        env = {**os.environ, **self.env}
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(
                [*KUBEHPC, *self.args], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        return self

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int | None:
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                # Still running: have it write every thread's stack into its log (SIGUSR1,
                # cli.cluster_common.stop_on_signals) so the failure says where it hung.
                self.popen.send_signal(signal.SIGUSR1)
                time.sleep(1.0)
                self.popen.kill()
                self.popen.wait(10)
        return self.popen.returncode


def get_or_none(
    client: RestClient, api_version: str, kind: str, name: str, namespace: str | None = None
) -> Any:
    try:
        return client.get(api_version, kind, name, namespace)
    except NotFound:
        return None


def condition(obj: Any, type_: str) -> str:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return str(cond.get("status"))
    return ""


def job(
    name: str,
    queue: str,
    parallelism: int,
    cpu: str,
    command: list[str],
    namespace: str = "default",
    node_selector: dict[str, str] | None = None,
    pod_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A batch/v1 Job for kubehpc's scheduler, labelled with a LocalQueue."""
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": dict(pod_labels or {})},
                "spec": {
                    "nodeSelector": dict(node_selector or {}),
                    "schedulerName": "kubehpc",
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "main",
                            "image": "local",
                            "command": command,
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                        }
                    ],
                },
            },
        },
    }


def queues(cpu: str, name: str = "team", namespace: str = "default") -> list[dict[str, Any]]:
    """A ResourceFlavor, a ClusterQueue with ``cpu`` of quota and a LocalQueue pointing at it."""
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": "default-flavor"},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": f"{name}-cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default-flavor",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpu},
                                    {"name": "memory", "nominalQuota": "64Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": f"{name}-cq"},
        },
    ]


def fake_node(name: str, cpu: str, labels: dict[str, str]) -> dict[str, Any]:
    """A plain Node object with no kubelet behind it (as kwok makes them): schedulable room only."""
    resources = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake"}],
        },
    }


def cluster_config(path: Path, name: str, nodes: int, cpu: str) -> Path:
    """A ClusterConfig of ``nodes`` virtual nodes of ``cpu`` each, for ``kubehpc node``."""
    path.write_text(
        f"""apiVersion: kubehpc.io/v1alpha1
kind: ClusterConfig
metadata:
  name: {name}
spec:
  nodePools:
    - name: {name}
      count: {nodes}
      cpu: "{cpu}"
      memory: 8Gi
"""
    )
    return path
