"""MPIJob v1 (the older MPI Operator API) has ``spec.cleanPodPolicy`` at the top of the spec;
v2beta1 only ``spec.runPolicy.cleanPodPolicy``. Stored as v2beta1, a v1 object reads back as
written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kubehpc.api.kinds import build_registry
from kubehpc.store.store import Store

Obj = dict[str, Any]


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


def v1_job(**spec: Any) -> Obj:
    container = {"name": "main", "image": "busybox"}
    template = {"spec": {"containers": [container]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": template}}, **spec},
    }


def read(store: Store, version: str) -> Obj:
    return store.get(f"kubeflow.org/{version}", "MPIJob", "pi", "default")


def test_a_top_level_clean_pod_policy_is_the_run_policys_in_v2beta1(store: Store) -> None:
    store.create(v1_job(cleanPodPolicy="Running"))
    assert read(store, "v2beta1")["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"


def test_a_top_level_clean_pod_policy_reads_back_at_the_top_in_v1(store: Store) -> None:
    store.create(v1_job(cleanPodPolicy="Running"))
    spec = read(store, "v1")["spec"]
    assert spec["cleanPodPolicy"] == "Running"
    assert "runPolicy" not in spec


def test_a_run_policy_clean_pod_policy_stays_in_the_run_policy_in_v1(store: Store) -> None:
    store.create(v1_job(runPolicy={"cleanPodPolicy": "All"}))
    spec = read(store, "v1")["spec"]
    assert spec["runPolicy"]["cleanPodPolicy"] == "All"
    assert "cleanPodPolicy" not in spec


def test_when_both_are_given_the_run_policys_acts_and_both_read_back(store: Store) -> None:
    store.create(v1_job(cleanPodPolicy="None", runPolicy={"cleanPodPolicy": "All"}))
    assert read(store, "v2beta1")["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    spec = read(store, "v1")["spec"]
    assert (spec["cleanPodPolicy"], spec["runPolicy"]["cleanPodPolicy"]) == ("None", "All")


def test_the_conversion_note_is_not_shown_as_a_v1_annotation(store: Store) -> None:
    store.create(v1_job(cleanPodPolicy="Running"))
    assert "annotations" not in read(store, "v1")["metadata"]
