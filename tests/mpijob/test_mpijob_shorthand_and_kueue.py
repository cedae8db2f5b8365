"""The seed's MPIJob shorthand, and the MPIJob as a Kueue job (its pod sets and suspension)."""

from __future__ import annotations

import yaml

from kubehpc.api.loader import Document
from kubehpc.api.shorthands import expand_shorthands
from kubehpc.controllers.kueue.jobframework import PodSetInfo
from kubehpc.controllers.kueue.jobs.mpijob import new_job

SEED_MPIJOB = """
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata:
  name: mpi-test
spec:
  slotsPerWorker: 1
  runPolicy:
    cleanPodPolicy: All
  worker:
    replicas: 4
    template:
      spec:
        containers:
          - name: mpi-worker
            image: mpi-image:latest
            resources: { limits: { nvidia.com/gpu: 1 } }
  launcher:
    template:
      spec:
        containers:
          - name: mpi-launcher
            image: mpi-image:latest
            command: ["mpirun", "-np", "4", "app"]
"""


def test_seed_worker_and_launcher_become_mpi_replica_specs_with_a_warning() -> None:
    doc = Document("seed.yaml", 0, yaml.safe_load(SEED_MPIJOB))
    warnings = expand_shorthands([doc])
    spec = doc.obj["spec"]
    assert "worker" not in spec and "launcher" not in spec
    assert spec["mpiReplicaSpecs"]["Worker"]["replicas"] == 4
    assert spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"][0] == "mpirun"
    assert len(warnings) == 1 and "spec.worker -> spec.mpiReplicaSpecs.Worker" in warnings[0]


def test_a_schema_conformant_mpijob_is_left_alone() -> None:
    doc = Document(
        "x", 0, {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "spec": {"mpiReplicaSpecs": {}}}
    )
    assert expand_shorthands([doc]) == []


def _mpijob() -> dict:
    doc = Document("seed.yaml", 0, yaml.safe_load(SEED_MPIJOB))
    expand_shorthands([doc])
    return doc.obj


def test_pod_sets_are_the_launcher_then_the_workers() -> None:
    sets = new_job(_mpijob()).pod_sets()
    assert [(s["name"], s["count"]) for s in sets] == [("launcher", 1), ("worker", 4)]


def test_suspend_and_run_with_admitted_flavors() -> None:
    job = new_job(_mpijob())
    job.suspend()
    assert job.is_suspended()
    job.run_with_pod_set_info(
        [PodSetInfo("launcher", 1), PodSetInfo("worker", 4, node_selector={"gpu": "a100"})]
    )
    assert not job.is_suspended()
    worker = job.object["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["nodeSelector"] == {"gpu": "a100"}
    assert job.restore_pod_set_info([PodSetInfo("launcher", 1), PodSetInfo("worker", 4)])
    assert "nodeSelector" not in worker


def test_finished_follows_the_succeeded_and_failed_conditions() -> None:
    obj = _mpijob()
    obj["status"] = {"conditions": [{"type": "Failed", "status": "True", "message": "boom"}]}
    assert new_job(obj).finished() == ("boom", False, True)


def test_priority_class_from_the_scheduling_policy_first() -> None:
    obj = _mpijob()
    obj["spec"]["runPolicy"]["schedulingPolicy"] = {"priorityClass": "high"}
    assert new_job(obj).priority_class() == "high"
