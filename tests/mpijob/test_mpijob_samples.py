"""The MPI Operator's own sample MPIJobs (../shared/samples/manifests/mpi-operator, v2beta1 and
v1) apply unchanged, and the controller makes for each what the operator makes: the worker pods,
the launcher Job, the headless Service, the hostfile in the implementation's format and the SSH
Secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijobkit import NS, Harness

from kubehpc.controllers.mpijob import objects as O

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples" / "manifests" / "mpi-operator"
Obj = dict[str, Any]


def samples() -> list[Path]:
    found = sorted(SAMPLES.rglob("*.yaml"))
    assert found, f"no MPI Operator samples under {SAMPLES}"
    return found


def load(path: Path) -> Obj:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    doc["metadata"]["namespace"] = NS
    return doc


@pytest.mark.parametrize("path", samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_sample_applies_and_gets_the_operators_objects(path: Path, tmp_path: Path) -> None:
    h = Harness(tmp_path)
    doc = load(path)
    name = doc["metadata"]["name"]
    workers = doc["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    slots = doc["spec"].get("slotsPerWorker", 1)
    h.apply(doc)
    job = h.sync(name)
    assert [c["type"] for c in job["status"]["conditions"]] == ["Created"]
    assert [p["metadata"]["name"] for p in h.pods()] == [f"{name}-worker-{i}" for i in range(workers)]
    assert h.get("batch/v1", "Job", f"{name}-launcher")
    assert h.get("v1", "Service", name)["spec"]["clusterIP"] == "None"
    assert h.get("v1", "Secret", f"{name}-ssh")["type"] == "kubernetes.io/ssh-auth"
    host = f"{name}-worker-0.{name}.{NS}.svc"
    first = h.get("v1", "ConfigMap", f"{name}-config")["data"]["hostfile"].splitlines()[0]
    if doc["spec"].get("mpiImplementation", "OpenMPI") == "OpenMPI":
        assert first == f"{host} slots={slots}"
    else:
        assert first == f"{host}:{slots}"


def test_the_v1_sample_is_stored_as_v2beta1_with_its_clean_pod_policy(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    doc = load(SAMPLES / "v1" / "mpi-operator-v0.2.3-tensorflow-benchmarks-gpu.yaml")
    h.apply(doc)
    stored = h.get(O.API_VERSION, O.KIND, "tensorflow-benchmarks")
    assert stored["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert "cleanPodPolicy" not in stored["spec"]


def test_the_mpich_samples_sshd_workers_wait_for_the_launch_agent_on_the_embedded_cluster(
    tmp_path: Path,
) -> None:
    # The sample's worker runs sshd through `args` (its `command` is empty): on the embedded
    # cluster it waits instead, and the launcher reaches it through Hydra's rsh bootstrap.
    h = Harness(tmp_path)
    h.apply(load(SAMPLES / "v2beta1" / "pi-mpich.yaml"))
    h.sync("pi")
    worker = h.pods()[0]
    assert worker["spec"]["containers"][0]["command"] == O.WAIT_FOREVER
    assert O.EMBEDDED_ANNOTATION in worker["metadata"]["annotations"]
    launcher = h.get("batch/v1", "Job", "pi-launcher")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in launcher["env"]}
    assert (env["HYDRA_LAUNCHER"], env["HYDRA_LAUNCHER_EXEC"]) == ("rsh", "/home/x/bin/kubehpc-launch")
    assert env["HYDRA_HOST_FILE"].endswith("/hostfile")
