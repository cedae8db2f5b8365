"""Built-in kinds are checked against the official schema, as the API server checks them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubehpc.api import schema
from kubehpc.api.errors import Cause, Invalid, UnknownField
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import FieldValidation, Registry

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "compute-job"},
    "spec": {
        "parallelism": 4,
        "completions": 4,
        "template": {
            "metadata": {"labels": {"app": "solver"}},
            "spec": {
                "containers": [
                    {
                        "name": "solver",
                        "image": "registry/solver:v1",
                        "command": ["mpirun", "-np", "4", "app"],
                        "ports": [{"containerPort": 8080, "name": "http"}],
                        "resources": {"limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": 1}},
                    }
                ],
                "restartPolicy": "Never",
            },
        },
    },
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return build_registry(("kubehpc.api.kinds.core",))


def _validate(registry: Registry, obj: dict[str, Any], mode: FieldValidation) -> list[str]:
    _, version = registry.for_kind(obj["apiVersion"], obj["kind"])
    return version.validate(obj, mode)


def _causes(
    registry: Registry, obj: dict[str, Any], mode: FieldValidation = FieldValidation.STRICT
) -> list[Cause]:
    with pytest.raises(Invalid) as err:
        _validate(registry, obj, mode)
    return err.value.causes


def _job(**spec_changes: Any) -> dict[str, Any]:
    job = copy.deepcopy(JOB)
    job["spec"].update(spec_changes)
    return job


def _container(job: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = job["spec"]["template"]["spec"]["containers"][0]
    return container


def test_a_valid_job_passes_under_strict(registry: Registry) -> None:
    assert _validate(registry, copy.deepcopy(JOB), FieldValidation.STRICT) == []


def test_a_misspelt_field_is_an_error_naming_its_path_under_strict(registry: Registry) -> None:
    job = _job()
    _container(job)["imagePullPolicyy"] = "Always"
    (cause,) = _causes(registry, job)
    assert cause == UnknownField(
        "spec.template.spec.containers[0].imagePullPolicyy",
        'unknown field "spec.template.spec.containers[0].imagePullPolicyy"',
        "FieldValueInvalid",
    )


def test_a_misspelt_field_is_a_warning_under_warn(registry: Registry) -> None:
    assert _validate(registry, _job(foo=1), FieldValidation.WARN) == ['unknown field "spec.foo"']


def test_a_misspelt_field_is_accepted_and_dropped_under_ignore(registry: Registry) -> None:
    # As the API server: unknown fields of built-in kinds are pruned unless Strict refuses them.
    job = _job(foo=1)
    assert _validate(registry, job, FieldValidation.IGNORE) == []
    assert "foo" not in job["spec"]


def test_an_invalid_quantity_is_reported_with_its_path(registry: Registry) -> None:
    job = _job()
    _container(job)["resources"]["limits"]["memory"] = "8Gx"
    with pytest.raises(Invalid) as err:
        _validate(registry, job, FieldValidation.STRICT)
    assert err.value.causes == [
        Cause("spec.template.spec.containers[0].resources.limits.memory", 'invalid quantity "8Gx"')
    ]
    assert err.value.code == 422


def test_an_extended_resource_must_be_a_whole_number(registry: Registry) -> None:
    job = _job()
    _container(job)["resources"]["limits"]["nvidia.com/gpu"] = "0.5"
    (cause,) = _causes(registry, job)
    assert cause.field == "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]"
    assert "must be an integer" in cause.message


def test_a_wrong_type_is_reported_with_its_path(registry: Registry) -> None:
    (cause,) = _causes(registry, _job(parallelism="four"))
    assert (cause.field, cause.reason) == ("spec.parallelism", "FieldValueTypeInvalid")


def test_int32_fields_reject_values_out_of_range(registry: Registry) -> None:
    (cause,) = _causes(registry, _job(parallelism=2**31))
    assert cause.field == "spec.parallelism"


def test_a_missing_required_field_is_reported(registry: Registry) -> None:
    job = _job()
    del _container(job)["name"]
    (cause,) = _causes(registry, job)
    assert cause == Cause("spec.template.spec.containers[0].name", "Required value", "FieldValueRequired")


def test_a_job_template_must_restart_on_failure_or_never(registry: Registry) -> None:
    job = _job()
    del job["spec"]["template"]["spec"]["restartPolicy"]
    (cause,) = _causes(registry, job)
    assert cause.field == "spec.template.spec.restartPolicy"
    assert cause.message == 'Required value: valid values: "OnFailure", "Never"'


def test_a_yaml_boolean_in_a_string_field_is_a_type_error(registry: Registry) -> None:
    job = _job()
    _container(job)["env"] = [{"name": "DEBUG", "value": True}]
    (cause,) = _causes(registry, job)
    assert cause.field == "spec.template.spec.containers[0].env[0].value"


def test_a_number_in_a_list_of_strings_is_reported_at_its_index(registry: Registry) -> None:
    job = _job()
    _container(job)["command"] = ["mpirun", "-np", 4, "app"]
    (cause,) = _causes(registry, job)
    assert (cause.field, cause.reason) == (
        "spec.template.spec.containers[0].command[2]",
        "FieldValueTypeInvalid",
    )


def test_a_number_in_a_map_of_strings_is_reported_at_its_key(registry: Registry) -> None:
    job = _job()
    job["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a", "gpus": 8}
    (cause,) = _causes(registry, job)
    assert (cause.field, cause.reason) == ("spec.template.spec.nodeSelector.gpus", "FieldValueTypeInvalid")


def test_a_string_in_a_boolean_field_is_a_type_error(registry: Registry) -> None:
    job = _job()
    _container(job)["stdin"] = "yes"
    (cause,) = _causes(registry, job)
    assert cause.field == "spec.template.spec.containers[0].stdin"


def test_int_or_string_rejects_a_boolean(registry: Registry) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "targetPort": True}]},
    }
    (cause,) = _causes(registry, svc)
    assert cause.field == "spec.ports[0].targetPort"


def test_int_or_string_accepts_both(registry: Registry) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8081}]},
    }
    assert _validate(registry, svc, FieldValidation.STRICT) == []


def test_secret_data_must_be_base64(registry: Registry) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "not base64!"}}
    (cause,) = _causes(registry, secret)
    assert cause.field == "data.k"


def test_explicit_null_reads_as_unset(registry: Registry) -> None:
    assert _validate(registry, _job(activeDeadlineSeconds=None), FieldValidation.STRICT) == []


def test_top_level_metadata_is_left_to_the_metadata_validator(registry: Registry) -> None:
    job = _job()
    job["metadata"] = {"name": "x", "bogus": 1}
    assert _validate(registry, job, FieldValidation.STRICT) == []


def test_an_embedded_definition_is_validated_under_a_path_prefix() -> None:
    template = copy.deepcopy(JOB["spec"]["template"])
    template["spec"]["containers"][0]["imagee"] = "x"
    causes, warnings = schema.validate_definition(
        "io.k8s.api.core.v1.PodTemplateSpec", template, "spec.workers.template", FieldValidation.WARN
    )
    assert causes == []
    assert warnings == ['unknown field "spec.workers.template.spec.containers[0].imagee"']


def test_every_field_of_a_full_pod_is_accepted(registry: Registry) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "full"},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}
                        ]
                    }
                }
            },
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "args": ["-c", "true"],
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
                    "resources": {"requests": {"cpu": 0.5, "memory": "1e3"}},
                    "securityContext": {"runAsUser": 1000, "capabilities": {"add": ["SYS_PTRACE"]}},
                    "volumeMounts": [{"name": "v", "mountPath": "/data"}],
                }
            ],
            "initContainers": [{"name": "i", "image": "busybox", "restartPolicy": "Always"}],
            "nodeSelector": {"gpu": "a100"},
            "priorityClassName": "high",
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ],
            "volumes": [{"name": "v", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}],
        },
        "status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"},
    }
    assert _validate(registry, pod, FieldValidation.STRICT) == []


def test_openapi_components_use_component_references() -> None:
    components = schema.openapi_components()
    job = components["io.k8s.api.batch.v1.Job"]
    assert job["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.batch.v1.JobSpec"}
    ]
    assert job["type"] == "object"
    assert job["x-kubernetes-group-version-kind"] == [{"group": "batch", "kind": "Job", "version": "v1"}]


def test_kind_roots_map_group_version_kind_to_definitions() -> None:
    assert schema.definition_for_kind("batch", "v1", "Job") == "io.k8s.api.batch.v1.Job"
    assert schema.definition_for_kind("", "v1", "Pod") == "io.k8s.api.core.v1.Pod"


def test_reachable_components_include_every_referenced_definition() -> None:
    reachable = schema.reachable_components(["io.k8s.api.batch.v1.Job"])
    assert "io.k8s.api.core.v1.Container" in reachable
    assert "io.k8s.api.apps.v1.Deployment" not in reachable


def test_every_built_in_kind_publishes_a_reference_to_its_openapi_component(registry: Registry) -> None:
    components = schema.openapi_components()
    for rt in registry:
        ref = rt.versions[0].openapi_schema
        assert ref is not None, rt.kind
        component = components[str(ref["$ref"]).removeprefix("#/components/schemas/")]
        assert {"group": rt.group, "version": "v1", "kind": rt.kind} in component[
            "x-kubernetes-group-version-kind"
        ]


def test_patch_meta_gives_merge_keys_and_strategies(registry: Registry) -> None:
    _, version = registry.for_kind("v1", "Pod")
    meta = version.patch_meta
    assert meta is not None
    spec = meta.child("spec")
    assert spec is not None
    containers = spec.child("containers")
    assert containers is not None
    assert (containers.strategy, containers.merge_key) == ("merge", "name")
    item = containers.item()
    assert item is not None
    env = item.child("env")
    assert env is not None and env.merge_key == "name"
    limits = item.child("resources")
    assert limits is not None and limits.child("limits") is not None
    assert spec.child("nonexistent") is None


def test_a_manual_selector_must_match_the_template_labels(registry: Registry) -> None:
    job = _job(manualSelector=True, selector={"matchLabels": {"app": "other"}})
    (cause,) = _causes(registry, job)
    assert cause.field == "spec.template.metadata.labels"
    assert cause.message.endswith("`selector` does not match template `labels`")


def test_a_manual_selector_is_required_when_manual(registry: Registry) -> None:
    (cause,) = _causes(registry, _job(manualSelector=True))
    assert cause == Cause("spec.selector", "Required value", "FieldValueRequired")


# Leaf fields pass a quick test without building their path; what fails it is checked in full.


def test_a_boolean_in_an_integer_field_is_a_type_error(registry: Registry) -> None:
    (cause,) = _causes(registry, _job(parallelism=True))
    assert (cause.field, cause.reason) == ("spec.parallelism", "FieldValueTypeInvalid")


def test_a_bad_timestamp_is_reported_at_its_path_after_good_ones_were_seen(registry: Registry) -> None:
    job = _job()
    job["status"] = {"startTime": "2026-12-07T01:00:00Z"}
    assert _validate(registry, job, FieldValidation.STRICT) == []  # seen, and remembered
    job["status"] = {"startTime": "2026-12-07T01:00:00Z", "completionTime": "yesterday"}
    (cause,) = _causes(registry, job)
    assert cause.field == "status.completionTime"
    assert "RFC 3339" in cause.message
