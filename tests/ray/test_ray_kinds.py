"""KubeRay's kinds: the upstream samples apply, v1alpha1 is accepted, what the CRDs refuse is
refused at admission with the field named, and what only KubeRay's controllers refuse ends as
ValidationFailed there."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubehpc.api.errors import BadRequest, Invalid
from kubehpc.api.kinds import default_registry
from kubehpc.controllers.ray import RayClusterController, RayJobController, RayServiceController
from kubehpc.store.store import Store

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples" / "manifests" / "kuberay" / "v1"
Obj = dict[str, Any]


def ray_docs() -> list[Obj]:
    docs = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        docs += [
            d for d in yaml.safe_load_all(path.read_text()) if d and d["apiVersion"].startswith("ray.io")
        ]
    return docs


@pytest.fixture
def store() -> Store:
    return Store(default_registry(), None)


def test_every_upstream_sample_applies(store: Store) -> None:
    docs = ray_docs()
    assert {d["kind"] for d in docs} == {"RayCluster", "RayJob", "RayService"}
    for doc in docs:
        doc["metadata"].setdefault("namespace", "default")
        created = store.create(copy.deepcopy(doc))
        assert created["apiVersion"] == "ray.io/v1"


def test_v1alpha1_is_served_with_the_same_schema(store: Store) -> None:
    doc = next(d for d in ray_docs() if d["kind"] == "RayCluster")
    doc["apiVersion"] = "ray.io/v1alpha1"
    doc["metadata"]["namespace"] = "default"
    store.create(doc)
    assert store.get("ray.io/v1", "RayCluster", doc["metadata"]["name"], "default")["spec"]["headGroupSpec"]


def _refusal(store: Store, doc: Obj) -> str:
    with pytest.raises(Invalid) as err:
        store.create(doc)
    return str(err.value)


def _rayjob(**spec: Any) -> Obj:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": spec,
    }


def _job_status(store: Store) -> Obj:
    RayJobController(store).reconcile("default", "j")
    status: Obj = store.get("ray.io/v1", "RayJob", "j", "default")["status"]
    return status


def _warnings(store: Store, reason: str) -> list[str]:
    return [e["message"] for e in store.list("v1", "Event").items if e.get("reason") == reason]


def test_min_above_max_replicas_is_admitted_and_fails_the_cluster_naming_the_group(store: Store) -> None:
    doc = next(d for d in ray_docs() if d["kind"] == "RayCluster")
    doc["metadata"]["namespace"] = "default"
    doc["spec"]["workerGroupSpecs"][0].update(minReplicas=3, maxReplicas=1)
    store.create(doc)  # the CRD has no such rule: KubeRay's controller refuses it
    RayClusterController(store).reconcile("default", doc["metadata"]["name"])
    status = store.get("ray.io/v1", "RayCluster", doc["metadata"]["name"], "default")["status"]
    assert status["state"] == "failed"
    assert "spec.workerGroupSpecs[0]" in status["reason"]
    assert "minReplicas (3) must not exceed maxReplicas (1)" in status["reason"]
    assert _warnings(store, "InvalidRayClusterSpec") == [status["reason"]]
    assert not store.list("v1", "Pod").items


def test_repeated_group_names_fail_the_cluster(store: Store) -> None:
    doc = next(d for d in ray_docs() if d["kind"] == "RayCluster")
    doc["metadata"]["namespace"] = "default"
    groups = doc["spec"]["workerGroupSpecs"]
    groups.append({**groups[0]})
    store.create(doc)
    RayClusterController(store).reconcile("default", doc["metadata"]["name"])
    reason = store.get("ray.io/v1", "RayCluster", doc["metadata"]["name"], "default")["status"]["reason"]
    assert "spec.workerGroupSpecs[1].groupName: groupName must be unique" in reason


def test_a_rayjob_without_a_cluster_or_entrypoint_ends_validation_failed(store: Store) -> None:
    store.create(_rayjob())
    status = _job_status(store)
    assert (status["jobDeploymentStatus"], status["reason"]) == ("ValidationFailed", "ValidationFailed")
    assert "one of rayClusterSpec or clusterSelector is required" in status["message"]
    assert "entrypoint is required" in status["message"]
    assert _warnings(store, "InvalidRayJobSpec") == [status["message"]]
    assert not store.list("ray.io/v1", "RayCluster").items


def test_unknown_submission_mode_is_admitted_and_ends_validation_failed(store: Store) -> None:
    store.create(
        _rayjob(entrypoint="python x.py", clusterSelector={"ray.io/cluster": "c"}, submissionMode="Batch")
    )
    status = _job_status(store)
    assert status["jobDeploymentStatus"] == "ValidationFailed"
    assert "spec.submissionMode: unsupported value 'Batch'" in status["message"]


def test_a_v1alpha1_rayservice_without_a_cluster_config_is_admitted_and_refused_by_the_controller(
    store: Store,
) -> None:
    doc = {
        "apiVersion": "ray.io/v1alpha1",
        "kind": "RayService",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"serveConfigV2": "applications: []"},
    }
    store.create(copy.deepcopy(doc))  # v1alpha1's CRD does not require it; v1's does
    doc.update(apiVersion="ray.io/v1", metadata={"name": "t", "namespace": "default"})
    assert "spec.rayClusterConfig: Required value" in _refusal(store, doc)
    RayServiceController(store).reconcile("default", "s")
    assert _warnings(store, "InvalidRayServiceSpec") == [
        "spec.rayClusterConfig: a RayService needs a rayClusterConfig"
    ]
    assert not store.list("ray.io/v1", "RayCluster").items


def test_a_rayservice_with_bad_worker_bounds_is_made_not_ready_without_a_cluster(store: Store) -> None:
    spec = next(d for d in ray_docs() if d["kind"] == "RayCluster")["spec"]
    spec["workerGroupSpecs"][0].update(minReplicas=2, maxReplicas=1)
    store.create(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "metadata": {"name": "s", "namespace": "default"},
            "spec": {"rayClusterConfig": spec},
        }
    )
    RayServiceController(store).reconcile("default", "s")
    status = store.get("ray.io/v1", "RayService", "s", "default")["status"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ValidationFailed")
    (message,) = _warnings(store, "InvalidRayServiceSpec")
    assert "spec.rayClusterConfig.workerGroupSpecs[0]" in message
    assert not store.list("ray.io/v1", "RayCluster").items


def test_the_crds_cel_rules_are_checked_at_admission(store: Store) -> None:
    doc = _rayjob(entrypoint="python x.py", clusterSelector={"ray.io/cluster": "c"}, managedBy="someone-else")
    assert "the managedBy field value must be either" in _refusal(store, doc)
    doc["spec"] = {
        "entrypoint": "python x.py",
        "clusterSelector": {"ray.io/cluster": "c"},
        "deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}},
    }
    assert "requires either BOTH onSuccess and onFailure" in _refusal(store, doc)


def test_an_unknown_field_deep_in_a_ray_spec_is_refused_naming_its_path(store: Store) -> None:
    doc = next(d for d in ray_docs() if d["kind"] == "RayCluster")
    doc["metadata"]["namespace"] = "default"
    doc["spec"]["autoscalerOptions"] = {"env": [{"name": "A", "valuee": "1"}]}
    with pytest.raises(BadRequest) as err:  # a strict decoding error, as the API server's
        store.create(doc)
    path = "spec.autoscalerOptions.env[0].valuee"
    assert str(err.value).endswith(f'strict decoding error: unknown field "{path}"')


def test_rayjob_defaults_are_kuberays(store: Store) -> None:
    doc: Obj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"entrypoint": "python x.py", "clusterSelector": {"ray.io/cluster": "c"}},
    }
    spec = store.create(doc)["spec"]
    assert (spec["submissionMode"], spec["backoffLimit"], spec["ttlSecondsAfterFinished"]) == (
        "K8sJobMode",
        0,
        0,
    )
