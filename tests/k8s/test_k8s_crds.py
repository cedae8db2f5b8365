"""kubehpc installs the CustomResourceDefinitions of its kinds, and the real API server
validates objects against their structural schemas."""

from __future__ import annotations

import pytest
from k8skit import K8sEnv, Proc

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import default_registry
from kubehpc.kube.crds import CRD_API, established, owned_crds
from kubehpc.kube.rest import RestClient


def test_every_owned_kind_has_an_established_crd(controller: Proc, api: RestClient) -> None:
    wanted = {crd["metadata"]["name"] for crd in owned_crds(default_registry())}
    assert "clusterqueues.kueue.x-k8s.io" in wanted
    for name in sorted(wanted):
        assert established(api.get(CRD_API, "CustomResourceDefinition", name)), name


def test_kubectl_lists_the_crds_and_their_kinds(controller: Proc, k8s: K8sEnv) -> None:
    out = k8s.kubectl("get", "crd", "-o", "name")
    assert "customresourcedefinition.apiextensions.k8s.io/workloads.kueue.x-k8s.io" in out
    resources = k8s.kubectl("api-resources", "--api-group", "kueue.x-k8s.io", "-o", "name")
    assert "clusterqueues.kueue.x-k8s.io" in resources


def test_the_server_rejects_a_cluster_queue_against_the_schema(controller: Proc, api: RestClient) -> None:
    bad = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "bad-schema"},
        "spec": {"resourceGroups": "not-a-list"},
    }
    with pytest.raises(Invalid) as err:
        api.create(bad)
    assert "resourceGroups" in str(err.value)


def test_the_server_accepts_a_valid_cluster_queue_and_prunes_nothing_known(
    controller: Proc, api: RestClient
) -> None:
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "schema-ok"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "3"}]}],
                }
            ],
        },
    }
    created = api.create(cq)
    try:
        group = created["spec"]["resourceGroups"][0]
        assert group["flavors"][0]["resources"][0]["nominalQuota"] == "3"
    finally:
        api.delete("kueue.x-k8s.io/v1beta1", "ClusterQueue", "schema-ok")
