"""KubeRay's kinds: the upstream samples apply, v1alpha1 is accepted, bad specs are refused
with the field named."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import default_registry
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


def test_min_above_max_replicas_is_refused_naming_the_group(store: Store) -> None:
    doc = next(d for d in ray_docs() if d["kind"] == "RayCluster")
    doc["metadata"]["namespace"] = "default"
    doc["spec"]["workerGroupSpecs"][0].update(minReplicas=3, maxReplicas=1)
    message = _refusal(store, doc)
    assert (
        "spec.workerGroupSpecs[0]" in message and "minReplicas (3) must not exceed maxReplicas (1)" in message
    )


def test_a_rayjob_needs_an_entrypoint_and_a_cluster(store: Store) -> None:
    doc: Obj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {},
    }
    message = _refusal(store, doc)
    assert "one of rayClusterSpec or clusterSelector is required" in message
    doc["spec"] = {"clusterSelector": {"ray.io/cluster": "c"}}
    assert "entrypoint is required" in _refusal(store, doc)


def test_unknown_submission_mode_is_refused(store: Store) -> None:
    doc: Obj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "entrypoint": "python x.py",
            "clusterSelector": {"ray.io/cluster": "c"},
            "submissionMode": "Batch",
        },
    }
    assert "spec.submissionMode" in _refusal(store, doc)


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
