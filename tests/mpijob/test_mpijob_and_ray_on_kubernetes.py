"""Cluster mode: the same MPIJob and KubeRay controllers, run by ``kubehpc controller
--components mpijob,ray`` against a real Kubernetes 1.20 API server (scripts/k8s-testenv),
create exactly what the MPI Operator and KubeRay create there: no launch agent, no host ports,
sshd workers and KubeRay's fixed ports and DNS names. The test environment has no kubelet, so
the pods are only checked as objects."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "k8s"))

from k8skit import K8sEnv, Proc, get_or_none, running_testenv, wait_for

from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions

# The first use builds the test environment (15-20 minutes, then cached outside the repo).
pytestmark = [pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(1800)]
Obj = dict[str, Any]
NS = "default"
SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples" / "manifests"


@pytest.fixture(scope="module")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[K8sEnv]:
    with running_testenv(tmp_path_factory.mktemp("k8s-mpi-ray")) as env:
        yield env


@pytest.fixture(scope="module")
def api(k8s: K8sEnv) -> Iterator[RestClient]:
    with k8s.client() as client:
        yield client


@pytest.fixture(scope="module")
def controller(k8s: K8sEnv, api: RestClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    logs = tmp_path_factory.mktemp("controller-mpi-ray")
    proc = Proc(
        [
            "controller",
            "--kubeconfig",
            str(k8s.kubeconfig),
            "--components",
            "scheduler,mpijob,ray",
            "--leader-elect",
            "false",
        ],
        logs / "controller.log",
    ).start()

    def serving() -> bool:
        # Installed, Established, and served: an API server lists a new CRD's group in
        # discovery a moment before it answers for its resources, and kubectl apply fails
        # in between ("no matches for kind").
        assert proc.alive(), f"kubehpc controller exited:\n{proc.output()}"
        if "CustomResourceDefinitions installed" not in proc.output():
            return False
        kinds = "mpijobs.v2beta1.kubeflow.org,rayclusters.v1.ray.io"
        return "error" not in k8s.kubectl("get", "-n", NS, kinds, check=False).lower()

    wait_for("the MPIJob and RayCluster CRDs to be served", serving, timeout=120)
    try:
        yield proc
    finally:
        proc.stop()


def apply(k8s: K8sEnv, path: Path) -> None:
    k8s.kubectl("apply", "-n", NS, "-f", str(path))


def test_the_mpi_operators_sample_gets_the_operators_objects(
    controller: Proc, k8s: K8sEnv, api: RestClient
) -> None:
    apply(k8s, SAMPLES / "mpi-operator" / "v2beta1" / "pi.yaml")
    launcher = wait_for(
        "the launcher Job", lambda: get_or_none(api, "batch/v1", "Job", "pi-launcher", NS), timeout=60
    )
    workers = [api.get("v1", "Pod", f"pi-worker-{i}", NS) for i in range(2)]
    # A real cluster: sshd runs in the workers, the launcher's mpirun reaches them over ssh.
    assert [w["spec"]["containers"][0]["command"] for w in workers] == [["/usr/sbin/sshd"]] * 2
    assert all("kubehpc.io/embedded" not in (w["metadata"].get("annotations") or {}) for w in workers)
    env = {e["name"]: e.get("value") for e in launcher["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert "OMPI_MCA_plm_rsh_agent" not in env
    config = api.get("v1", "ConfigMap", "pi-config", NS)
    assert (
        config["data"]["hostfile"]
        == "pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n"
    )
    assert api.get("v1", "Service", "pi", NS)["spec"]["clusterIP"] == "None"
    assert api.get("v1", "Secret", "pi-ssh", NS)["type"] == "kubernetes.io/ssh-auth"
    job = json.loads(k8s.kubectl("get", "mpijob", "pi", "-n", NS, "-o", "json"))
    assert [c["type"] for c in job["status"]["conditions"]][:1] == ["Created"]


def test_kuberays_sample_cluster_gets_kuberays_objects(
    controller: Proc, k8s: K8sEnv, api: RestClient
) -> None:
    path = SAMPLES / "kuberay" / "v1" / "ray-cluster.sample.yaml"
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "RayCluster"]
    name = doc["metadata"]["name"]
    apply(k8s, path)
    selector = f"ray.io/cluster={name}"

    def pods() -> list[Obj]:
        return list(api.list("v1", "Pod", ListOptions(namespace=NS, label_selector=selector)).items)

    want = 1 + sum(int(g.get("replicas") or 0) for g in doc["spec"].get("workerGroupSpecs") or ())
    wait_for(f"the {want} pods of {name}", lambda: len(pods()) == want, timeout=60)
    head = next(p for p in pods() if p["metadata"]["labels"]["ray.io/node-type"] == "head")
    args = head["spec"]["containers"][0]["args"][0]
    # KubeRay's defaults, unchanged: no per-node ports, no temp dir of the embedded cluster.
    assert "ray start --head" in args and "--port" not in args and "--temp-dir" not in args
    svc = api.get("v1", "Service", f"{name}-head-svc", NS)
    ports = {p["name"]: p["port"] for p in svc["spec"]["ports"]}
    assert (ports["gcs-server"], ports["dashboard"], ports["client"]) == (6379, 8265, 10001)
    workers = [p for p in pods() if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    for worker in workers:
        env = {e["name"]: e.get("value") for e in worker["spec"]["containers"][0]["env"]}
        assert env["RAY_ADDRESS"] == f"{name}-head-svc.{NS}.svc.cluster.local:6379"
