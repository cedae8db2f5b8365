"""Kueue's kinds (kueue.x-k8s.io v1beta1 and v1beta2): defaults, validation, conversion."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubehpc.api.crd import custom_resource_definition
from kubehpc.api.errors import Invalid
from kubehpc.api.kinds.kueue import conversion, register
from kubehpc.api.registry import FieldValidation, Registry, ResourceType, VersionSpec

GROUP = "kueue.x-k8s.io"


@pytest.fixture(scope="module")
def registry() -> Registry:
    r = Registry()
    register(r)
    return r


def kind(registry: Registry, api_version: str, kind: str) -> tuple[ResourceType, VersionSpec]:
    return registry.for_kind(api_version, kind)


def cluster_queue(version: str = "v1beta2", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "a100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": 64},
                                {"name": "nvidia.com/gpu", "nominalQuota": 8},
                            ],
                        },
                        {
                            "name": "h100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "32"},
                                {"name": "nvidia.com/gpu", "nominalQuota": 4},
                            ],
                        },
                    ],
                }
            ],
            **spec,
        },
    }


def workload(version: str = "v1beta2", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Workload",
        "metadata": {"name": "job-pi", "namespace": "default"},
        "spec": {
            "queueName": "user-queue",
            "podSets": [
                {
                    "count": 4,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "pi", "image": "perl", "resources": {"requests": {"cpu": "1"}}}
                            ],
                        }
                    },
                }
            ],
            **spec,
        },
    }


def causes_of(
    spec: VersionSpec, obj: dict[str, Any], mode: FieldValidation = FieldValidation.STRICT
) -> dict[str, str]:
    with pytest.raises(Invalid) as raised:
        spec.validate(obj, mode)
    assert raised.value.code == 422
    return {c.field: c.message for c in raised.value.causes}


# --- defaults ------------------------------------------------------------------------------------


def test_cluster_queue_defaults_are_the_crds(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue()
    assert spec.default is not None
    spec.default(obj)
    assert obj["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert obj["spec"]["stopPolicy"] == "None"
    assert obj["spec"]["preemption"] == {
        "reclaimWithinCohort": "Never",
        "withinClusterQueue": "Never",
        "borrowWithinCohort": {"policy": "Never"},
    }
    assert obj["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }


def test_defaults_fill_only_what_the_user_left_out(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue(queueingStrategy="StrictFIFO", preemption={"withinClusterQueue": "LowerPriority"})
    assert spec.default is not None
    spec.default(obj)
    assert obj["spec"]["queueingStrategy"] == "StrictFIFO"
    assert obj["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority"
    assert obj["spec"]["preemption"]["reclaimWithinCohort"] == "Never"


def test_workload_pod_sets_default_to_one_pod_named_main(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "Workload")
    obj = workload()
    del obj["spec"]["podSets"][0]["count"]
    assert spec.default is not None
    spec.default(obj)
    assert obj["spec"]["podSets"][0]["name"] == "main"
    assert obj["spec"]["podSets"][0]["count"] == 1
    assert obj["spec"]["active"] is True


def test_fair_sharing_weight_defaults_to_one(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "Cohort")
    obj = {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": "org"},
        "spec": {"fairSharing": {}},
    }
    assert spec.default is not None
    spec.default(obj)
    assert obj["spec"]["fairSharing"] == {"weight": 1}


# --- validation ----------------------------------------------------------------------------------


def test_invalid_quota_is_named_by_its_path(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue()
    obj["spec"]["resourceGroups"][0]["flavors"][1]["resources"][0]["nominalQuota"] = "8Gx"
    causes = causes_of(spec, obj)
    assert causes == {"spec.resourceGroups[0].flavors[1].resources[0].nominalQuota": 'invalid quantity "8Gx"'}


def test_negative_quota_is_rejected(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["lendingLimit"] = "-1"
    assert "spec.resourceGroups[0].flavors[0].resources[1].lendingLimit" in causes_of(spec, obj)


def test_at_most_sixteen_resource_groups(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue()
    group = obj["spec"]["resourceGroups"][0]
    obj["spec"]["resourceGroups"] = [copy.deepcopy(group) for _ in range(17)]
    assert causes_of(spec, obj) == {"spec.resourceGroups": "Too many: 17: must have at most 16 items"}


def test_at_most_sixty_four_covered_resources(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue()
    obj["spec"]["resourceGroups"][0]["coveredResources"] = [f"example.com/r{i}" for i in range(65)]
    assert "spec.resourceGroups[0].coveredResources" in causes_of(spec, obj)


def test_each_flavor_lists_every_covered_resource(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue()
    obj["spec"]["resourceGroups"][0]["flavors"][1]["resources"].pop()
    assert causes_of(spec, obj) == {
        "spec.resourceGroups[0]": "flavors must have the same number of resources as the coveredResources"
    }


def test_flavor_names_are_dns_subdomains(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "A100_SXM"
    assert "lowercase RFC 1123 subdomain" in causes_of(spec, obj)["spec.resourceGroups[0].flavors[0].name"]


def test_borrowing_limit_needs_a_cohort(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 4
    assert causes_of(spec, obj) == {"spec": "borrowingLimit must be nil when cohort is empty"}
    obj["spec"]["cohortName"] = "research"
    assert spec.validate(obj, FieldValidation.STRICT) == []


def test_v1beta1_names_the_cohort_cohort_and_v1beta2_cohort_name(registry: Registry) -> None:
    _, v1 = kind(registry, f"{GROUP}/v1beta1", "ClusterQueue")
    _, v2 = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    assert v1.validate(cluster_queue("v1beta1", cohort="research"), FieldValidation.STRICT) == []
    assert causes_of(v2, cluster_queue("v1beta2", cohort="research")) == {
        "spec.cohort": 'unknown field "spec.cohort"'
    }
    assert causes_of(v1, cluster_queue("v1beta1", cohortName="research")) == {
        "spec.cohortName": 'unknown field "spec.cohortName"'
    }


def test_snake_case_field_names_are_unknown_fields(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    assert causes_of(spec, cluster_queue(cohort_name="research")) == {
        "spec.cohort_name": 'unknown field "spec.cohort_name"'
    }


def test_unsupported_enum_value_lists_the_supported_ones(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    message = causes_of(spec, cluster_queue(queueingStrategy="FIFO"))["spec.queueingStrategy"]
    assert message == "Unsupported value: \"FIFO\": supported values: 'StrictFIFO' or 'BestEffortFIFO'"


def test_unknown_fields_warn_under_warn_and_pass_under_ignore_pruned(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue(stopPolicyy="Hold")
    expected = copy.deepcopy(obj)
    del expected["spec"]["stopPolicyy"]
    assert spec.validate(obj, FieldValidation.WARN) == ['unknown field "spec.stopPolicyy"']
    assert obj == expected
    again = cluster_queue(stopPolicyy="Hold")
    assert spec.validate(again, FieldValidation.IGNORE) == []
    assert again == expected


def test_rules_still_apply_beside_an_unknown_field_under_warn(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    obj = cluster_queue(extra=1)
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 4
    assert causes_of(spec, obj, FieldValidation.WARN) == {
        "spec": "borrowingLimit must be nil when cohort is empty"
    }


def test_workload_pod_template_is_checked_against_the_official_schema(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "Workload")
    obj = workload()
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1x"
    causes = causes_of(spec, obj)
    assert set(causes) == {
        "spec.podSets[0].template.spec.containers[0].imagePullPolicyy",
        "spec.podSets[0].template.spec.containers[0].resources.requests.cpu",
    }


def test_workload_min_count_may_not_exceed_count(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "Workload")
    obj = workload()
    obj["spec"]["podSets"][0]["minCount"] = 5
    assert causes_of(spec, obj) == {
        "spec.podSets[0]": "minCount should be positive and less or equal to count"
    }


def test_resource_flavor_tolerations_follow_the_crds_rules(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "ResourceFlavor")
    obj = {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "spot"},
        "spec": {"tolerations": [{"key": "spot", "operator": "Exists", "value": "true"}]},
    }
    assert causes_of(spec, obj) == {"spec": "a value must be empty when 'operator' is 'Exists'"}


# --- updates -------------------------------------------------------------------------------------


def test_local_queue_cluster_queue_is_immutable(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta2", "LocalQueue")
    old = {"spec": {"clusterQueue": "a"}}
    assert [c.field for c in rt.validate_update(old, {"spec": {"clusterQueue": "b"}})] == [
        "spec.clusterQueue"
    ]
    assert rt.validate_update(old, copy.deepcopy(old)) == []


def test_topology_levels_change_only_above_a_hostname_level(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta2", "Topology")

    def topology(*labels: str) -> dict[str, Any]:
        return {"spec": {"levels": [{"nodeLabel": label} for label in labels]}}

    assert (
        rt.validate_update(
            topology("rack", "kubernetes.io/hostname"), topology("block", "rack", "kubernetes.io/hostname")
        )
        == []
    )
    assert rt.validate_update(topology("block", "rack"), topology("rack")) != []


def _reserved(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["status"] = {"conditions": [{"type": "QuotaReserved", "status": "True"}]}
    return obj


def test_workload_queue_name_is_immutable_while_quota_is_reserved(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta2", "Workload")
    old = _reserved(workload())
    new = copy.deepcopy(old)
    new["spec"]["queueName"] = "other-queue"
    assert [c.field for c in rt.validate_update(old, new)] == ["spec.queueName"]
    assert rt.validate_update(workload(), {**new, "status": {}}) == []


def test_workload_pod_priority_class_is_immutable_while_quota_is_reserved(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta2", "Workload")
    ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
    old = _reserved(workload(priority=10, priorityClassRef=ref))
    new = copy.deepcopy(old)
    new["spec"]["priorityClassRef"]["name"] = "low"
    assert [c.field for c in rt.validate_update(old, new)] == ["spec.priorityClassRef.name"]


# --- conversion ----------------------------------------------------------------------------------


def test_v1beta1_cluster_queue_is_stored_as_v1beta2_and_reads_back_unchanged(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta1", "ClusterQueue")
    original = cluster_queue("v1beta1", cohort="research", admissionChecks=["prov"])
    stored = rt.to_storage(copy.deepcopy(original))
    assert stored["apiVersion"] == f"{GROUP}/v1beta2"
    assert stored["spec"]["cohortName"] == "research"
    assert stored["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
    assert "cohort" not in stored["spec"] and "admissionChecks" not in stored["spec"]
    assert rt.from_storage(stored, "v1beta1") == original


def test_plain_renames_need_no_conversion_annotation(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta1", "ClusterQueue")
    stored = rt.to_storage(cluster_queue("v1beta1", cohort="research"))
    assert "annotations" not in stored["metadata"]


def test_v1beta2_only_fields_survive_a_read_and_write_in_v1beta1(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    policy = {"migration": {"mode": "TryPreferredFlavors"}}
    stored = cluster_queue(cohortName="research", concurrentAdmissionPolicy=policy)
    served = rt.from_storage(copy.deepcopy(stored), "v1beta1")
    assert "concurrentAdmissionPolicy" not in served["spec"]
    assert served["spec"]["cohort"] == "research"
    assert rt.to_storage(served) == stored


def test_a_section_changed_in_the_other_version_converts_plainly(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta2", "ClusterQueue")
    stored = cluster_queue(
        cohortName="research", concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}}
    )
    served = rt.from_storage(copy.deepcopy(stored), "v1beta1")
    served["spec"]["cohort"] = "other"
    again = rt.to_storage(served)
    assert again["spec"]["cohortName"] == "other"
    assert "concurrentAdmissionPolicy" not in again["spec"]


def test_v1beta1_priority_class_name_and_source_become_a_priority_class_ref(registry: Registry) -> None:
    rt, _ = kind(registry, f"{GROUP}/v1beta1", "Workload")
    original = workload(
        "v1beta1",
        priority=100,
        priorityClassName="high",
        priorityClassSource="kueue.x-k8s.io/workloadpriorityclass",
    )
    stored = rt.to_storage(copy.deepcopy(original))
    assert stored["spec"]["priorityClassRef"] == {
        "group": GROUP,
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    assert rt.from_storage(stored, "v1beta1") == original


def test_topology_domains_become_slices_and_expand_back() -> None:
    domains = {
        "levels": ["rack", "host"],
        "domains": [{"values": ["r1", "h1"], "count": 2}, {"values": ["r1", "h2"], "count": 1}],
    }
    slices = conversion.domains_to_slices(domains)
    assert slices["slices"][0] == {
        "domainCount": 1,
        "podCounts": {"universal": 2},
        "valuesPerLevel": [{"universal": "r1"}, {"universal": "h1"}],
    }
    assert conversion.slices_to_domains(slices) == domains
    compact = {
        "levels": ["rack", "host"],
        "slices": [
            {
                "domainCount": 2,
                "podCounts": {"individual": [3, 1]},
                "valuesPerLevel": [{"universal": "r1"}, {"individual": {"prefix": "h", "roots": ["1", "2"]}}],
            }
        ],
    }
    assert conversion.slices_to_domains(compact)["domains"] == [
        {"values": ["r1", "h1"], "count": 3},
        {"values": ["r1", "h2"], "count": 1},
    ]


# --- registration --------------------------------------------------------------------------------


def test_kinds_are_served_in_both_versions_and_stored_in_v1beta2(registry: Registry) -> None:
    kueue = [rt for rt in registry if rt.group == GROUP]
    assert len(kueue) == 8
    for rt in kueue:
        assert [v.name for v in rt.versions] == ["v1beta2", "v1beta1"]
        assert rt.storage_version == "v1beta2"
    assert registry.resolve("cq").kind == "ClusterQueue"
    assert registry.resolve("kwl").kind == "Workload"
    assert registry.resolve("localqueues").namespaced


def test_workload_admitted_column_reads_the_condition(registry: Registry) -> None:
    _, spec = kind(registry, f"{GROUP}/v1beta2", "Workload")
    column = next(c for c in spec.printer_columns if c.name == "Admitted")
    assert column.value is not None
    assert (
        column.value(
            {
                "status": {
                    "conditions": [
                        {"type": "QuotaReserved", "status": "True"},
                        {"type": "Admitted", "status": "False"},
                    ]
                }
            }
        )
        == "False"
    )


def _untyped_nodes(schema: dict[str, Any], path: str = "") -> list[str]:
    found = []
    if (
        "type" not in schema
        and not schema.get("x-kubernetes-int-or-string")
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        found.append(path)
    if any(k in schema for k in ("$ref", "anyOf", "allOf", "oneOf")) and not schema.get(
        "x-kubernetes-int-or-string"
    ):
        found.append(path)
    for key, sub in (schema.get("properties") or {}).items():
        found += _untyped_nodes(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        found += _untyped_nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        found += _untyped_nodes(schema["additionalProperties"], f"{path}{{}}")
    return found


def test_generated_crds_have_structural_schemas(registry: Registry) -> None:
    for rt in (rt for rt in registry if rt.group == GROUP):
        crd = custom_resource_definition(rt)
        for version in crd["spec"]["versions"]:
            assert _untyped_nodes(version["schema"]["openAPIV3Schema"]) == [], (rt.kind, version["name"])


# --- samples -------------------------------------------------------------------------------------


def test_every_kueue_sample_validates_and_round_trips_through_storage(
    registry: Registry, shared_dir: Path
) -> None:
    seen: set[str] = set()
    for path in sorted((shared_dir / "samples/manifests/kueue").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or not doc.get("apiVersion", "").startswith(GROUP + "/"):
                continue
            rt, spec = kind(registry, doc["apiVersion"], doc["kind"])
            obj = copy.deepcopy(doc)
            assert spec.validate(obj, FieldValidation.STRICT) == [], path.name
            assert spec.default is not None
            spec.default(obj)
            assert spec.validate(obj, FieldValidation.STRICT) == [], path.name
            assert rt.from_storage(rt.to_storage(copy.deepcopy(obj)), spec.name) == obj, path.name
            seen.add(spec.name)
    assert seen == {"v1beta1", "v1beta2"}
