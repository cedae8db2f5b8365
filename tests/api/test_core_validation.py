"""The API server's semantic rules on Pods and Jobs, with its messages and field paths.

Each case breaks one rule of a valid object and expects exactly the one cause the API server
reports (``pkg/apis/core/validation``, ``pkg/apis/batch/validation``). The pod-spec cases run
both on a Pod (paths under ``spec``) and on a Job's template (paths under
``spec.template.spec``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubehpc.api.errors import Cause, Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import FieldValidation, Registry

Obj = dict[str, Any]

POD_SPEC: Obj = {
    "restartPolicy": "Never",
    "volumes": [{"name": "data", "emptyDir": {}}],
    "initContainers": [{"name": "fetch", "image": "busybox"}],
    "containers": [
        {
            "name": "main",
            "image": "trainer:v1",
            "env": [{"name": "RANK", "value": "0"}],
            "ports": [{"containerPort": 8080}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            "resources": {
                "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
                "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
            },
        }
    ],
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return build_registry(("kubehpc.api.kinds.core",))


def _pod(spec: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def _job(pod_spec: Obj, **job_spec: Any) -> Obj:
    spec = {"template": {"spec": pod_spec}, **job_spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}


def _causes(registry: Registry, obj: Obj) -> list[Cause]:
    _, version = registry.for_kind(obj["apiVersion"], obj["kind"])
    try:
        version.validate(obj, FieldValidation.STRICT)
    except Invalid as err:
        return err.causes
    return []


def _main(spec: Obj) -> Obj:
    container: Obj = spec["containers"][0]
    return container


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[Obj], None]:
    def change(spec: Obj) -> None:
        target: Any = spec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _add_container(container: Obj) -> Callable[[Obj], None]:
    return lambda spec: spec["containers"].append(container)


C0 = ("containers", 0)
NOT_A_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
ENV_NAME = "a valid environment variable name must consist only of printable ASCII characters other than '='"

# (rule, change to the valid pod spec, field under the pod spec, message, reason)
POD_SPEC_CASES: list[tuple[str, Callable[[Obj], None], str, str, str]] = [
    (
        "container_name_must_be_a_dns1123_label",
        _set((*C0, "name"), "Main"),
        "containers[0].name",
        f'Invalid value: "Main": {NOT_A_LABEL}',
        "FieldValueInvalid",
    ),
    (
        "init_container_name_must_be_a_dns1123_label",
        _set(("initContainers", 0, "name"), "fetch_data"),
        "initContainers[0].name",
        f'Invalid value: "fetch_data": {NOT_A_LABEL}',
        "FieldValueInvalid",
    ),
    (
        "container_names_are_unique",
        _add_container({"name": "main", "image": "x"}),
        "containers[1].name",
        'Duplicate value: "main"',
        "FieldValueDuplicate",
    ),
    (
        "an_init_container_may_not_reuse_a_container_name",
        _set(("initContainers", 0, "name"), "main"),
        "initContainers[0].name",
        'Duplicate value: "main"',
        "FieldValueDuplicate",
    ),
    (
        "a_request_may_not_exceed_its_limit",
        _set((*C0, "resources", "requests", "cpu"), "2"),
        "containers[0].resources.requests",
        'Invalid value: "2": must be less than or equal to cpu limit of 1',
        "FieldValueInvalid",
    ),
    (
        "a_memory_request_may_not_exceed_its_limit",
        _set((*C0, "resources", "requests", "memory"), "2Gi"),
        "containers[0].resources.requests",
        'Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi',
        "FieldValueInvalid",
    ),
    (
        "a_gpu_request_needs_a_limit",
        lambda spec: _main(spec)["resources"]["limits"].pop("nvidia.com/gpu"),
        "containers[0].resources.limits",
        "Required value: Limit must be set for non overcommitable resources",
        "FieldValueRequired",
    ),
    (
        "a_mig_request_needs_a_limit",
        _set((*C0, "resources", "requests", "nvidia.com/mig-1g.10gb"), "1"),
        "containers[0].resources.limits",
        "Required value: Limit must be set for non overcommitable resources",
        "FieldValueRequired",
    ),
    (
        "a_gpu_request_must_equal_its_limit",
        _set((*C0, "resources", "limits", "nvidia.com/gpu"), "2"),
        "containers[0].resources.requests",
        'Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
        "FieldValueInvalid",
    ),
    (
        "gpus_are_whole_numbers",
        _set((*C0, "resources"), {"limits": {"nvidia.com/gpu": "500m"}}),
        "containers[0].resources.limits[nvidia.com/gpu]",
        'Invalid value: "500m": must be an integer',
        "FieldValueInvalid",
    ),
    (
        "a_volume_mount_names_a_volume_of_the_pod",
        _set((*C0, "volumeMounts", 0, "name"), "scratch"),
        "containers[0].volumeMounts[0].name",
        'Not found: "scratch"',
        "FieldValueNotFound",
    ),
    (
        "an_env_var_name_has_no_equals_sign",
        _set((*C0, "env", 0, "name"), "A=B"),
        "containers[0].env[0].name",
        f'Invalid value: "A=B": {ENV_NAME}',
        "FieldValueInvalid",
    ),
    (
        "an_env_var_name_is_printable_ascii",
        _set((*C0, "env", 0, "name"), "RANK\t"),
        "containers[0].env[0].name",
        f'Invalid value: "RANK\\t": {ENV_NAME}',
        "FieldValueInvalid",
    ),
    (
        "an_env_var_name_is_not_empty",
        _set((*C0, "env", 0, "name"), ""),
        "containers[0].env[0].name",
        "Required value",
        "FieldValueRequired",
    ),
    (
        "a_volume_name_must_be_a_dns1123_label",
        lambda spec: spec["volumes"].append({"name": "Data", "emptyDir": {}}),
        "volumes[1].name",
        f'Invalid value: "Data": {NOT_A_LABEL}',
        "FieldValueInvalid",
    ),
    (
        "volume_names_are_unique",
        lambda spec: spec["volumes"].append({"name": "data", "emptyDir": {}}),
        "volumes[1].name",
        'Duplicate value: "data"',
        "FieldValueDuplicate",
    ),
    (
        "a_container_port_is_at_most_65535",
        _set((*C0, "ports", 0, "containerPort"), 70000),
        "containers[0].ports[0].containerPort",
        "Invalid value: 70000: must be between 1 and 65535, inclusive",
        "FieldValueInvalid",
    ),
    (
        "a_container_port_is_positive",
        _set((*C0, "ports", 0, "containerPort"), -1),
        "containers[0].ports[0].containerPort",
        "Invalid value: -1: must be between 1 and 65535, inclusive",
        "FieldValueInvalid",
    ),
    (
        "a_container_port_of_zero_is_missing",
        _set((*C0, "ports", 0, "containerPort"), 0),
        "containers[0].ports[0].containerPort",
        "Required value",
        "FieldValueRequired",
    ),
]


@pytest.mark.parametrize("kind", ["Pod", "Job"])
def test_the_valid_pod_spec_passes(registry: Registry, kind: str) -> None:
    spec = copy.deepcopy(POD_SPEC)
    assert _causes(registry, _pod(spec) if kind == "Pod" else _job(spec)) == []


@pytest.mark.parametrize(
    ("prefix", "wrap"), [("spec", _pod), ("spec.template.spec", _job)], ids=["Pod", "Job"]
)
@pytest.mark.parametrize(
    ("change", "field", "message", "reason"),
    [pytest.param(*case[1:], id=case[0]) for case in POD_SPEC_CASES],
)
def test_pod_spec_rule(
    registry: Registry,
    prefix: str,
    wrap: Callable[[Obj], Obj],
    change: Callable[[Obj], None],
    field: str,
    message: str,
    reason: str,
) -> None:
    spec = copy.deepcopy(POD_SPEC)
    change(spec)
    assert _causes(registry, wrap(spec)) == [Cause(f"{prefix}.{field}", message, reason)]


def test_a_cpu_request_below_its_limit_is_allowed(registry: Registry) -> None:
    spec = copy.deepcopy(POD_SPEC)
    _main(spec)["resources"] = {"requests": {"cpu": "250m"}, "limits": {"cpu": "4"}}
    assert _causes(registry, _pod(spec)) == []


def test_a_gpu_limit_without_a_request_is_allowed(registry: Registry) -> None:
    spec = copy.deepcopy(POD_SPEC)
    _main(spec)["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    assert _causes(registry, _pod(spec)) == []


def test_a_dotted_env_var_name_is_allowed(registry: Registry) -> None:
    spec = copy.deepcopy(POD_SPEC)
    _main(spec)["env"] = [{"name": "my.env-name", "value": "1"}, {"name": "1ST", "value": "2"}]
    assert _causes(registry, _pod(spec)) == []


# --- Job spec -------------------------------------------------------------------------------------


def _never() -> Obj:
    spec = copy.deepcopy(POD_SPEC)
    spec["restartPolicy"] = "Never"
    return spec


INDEXED: Obj = {"completionMode": "Indexed", "completions": 4}
IGNORE_EXIT_3: Obj = {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}
FAIL_INDEX_RULE: Obj = {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}

NON_NEGATIVE = (
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "parallelism",
    "completions",
)

# (rule, job spec fields, template restartPolicy, field, message, reason)
JOB_CASES: list[tuple[str, Obj, str | None, str, str, str]] = [
    (
        "backoff_limit_per_index_needs_indexed_completion",
        {"backoffLimitPerIndex": 1},
        "Never",
        "spec.backoffLimitPerIndex",
        "Invalid value: 1: requires indexed completion mode",
        "FieldValueInvalid",
    ),
    (
        "max_failed_indexes_needs_backoff_limit_per_index",
        {**INDEXED, "maxFailedIndexes": 1},
        "Never",
        "spec.backoffLimitPerIndex",
        "Required value: when maxFailedIndexes is specified",
        "FieldValueRequired",
    ),
    (
        "max_failed_indexes_is_at_most_completions",
        {**INDEXED, "backoffLimitPerIndex": 1, "maxFailedIndexes": 5},
        "Never",
        "spec.maxFailedIndexes",
        "Invalid value: 5: must be less than or equal to completions",
        "FieldValueInvalid",
    ),
    (
        "success_policy_needs_indexed_completion",
        {"successPolicy": {"rules": [{"succeededCount": 1}]}},
        "Never",
        "spec.successPolicy",
        'Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode',
        "FieldValueInvalid",
    ),
    (
        "pod_failure_policy_needs_restart_policy_never",
        {
            "podFailurePolicy": {
                "rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]
            }
        },
        "OnFailure",
        "spec.template.spec.restartPolicy",
        'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified',
        "FieldValueInvalid",
    ),
    (
        "fail_index_action_needs_backoff_limit_per_index",
        {**INDEXED, "podFailurePolicy": {"rules": [FAIL_INDEX_RULE]}},
        "Never",
        "spec.podFailurePolicy.rules[0].action",
        'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set',
        "FieldValueInvalid",
    ),
    *[
        (
            f"{key}_is_not_negative",
            {key: -1},
            "Never",
            f"spec.{key}",
            "Invalid value: -1: must be greater than or equal to 0",
            "FieldValueInvalid",
        )
        for key in (
            "ttlSecondsAfterFinished",
            "activeDeadlineSeconds",
            "backoffLimit",
            "parallelism",
            "completions",
        )
    ],
    (
        "completions_are_required_when_indexed",
        {"completionMode": "Indexed"},
        "Never",
        "spec.completions",
        "Required value: when completion mode is Indexed",
        "FieldValueRequired",
    ),
    (
        "a_template_must_not_restart_always",
        {},
        "Always",
        "spec.template.spec.restartPolicy",
        'Required value: valid values: "OnFailure", "Never"',
        "FieldValueRequired",
    ),
    (
        "a_template_restart_policy_is_required",
        {},
        None,
        "spec.template.spec.restartPolicy",
        'Required value: valid values: "OnFailure", "Never"',
        "FieldValueRequired",
    ),
]


@pytest.mark.parametrize(
    ("job_spec", "restart", "field", "message", "reason"),
    [pytest.param(*case[1:], id=case[0]) for case in JOB_CASES],
)
def test_job_spec_rule(
    registry: Registry, job_spec: Obj, restart: str | None, field: str, message: str, reason: str
) -> None:
    pod_spec = _never()
    if restart is None:
        del pod_spec["restartPolicy"]
    else:
        pod_spec["restartPolicy"] = restart
    assert _causes(registry, _job(pod_spec, **copy.deepcopy(job_spec))) == [Cause(field, message, reason)]


@pytest.mark.parametrize(
    "job_spec",
    [
        pytest.param({**INDEXED, "backoffLimitPerIndex": 1, "maxFailedIndexes": 4}, id="per_index_limits"),
        pytest.param(
            {**INDEXED, "backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": [FAIL_INDEX_RULE]}},
            id="fail_index",
        ),
        pytest.param({**INDEXED, "successPolicy": {"rules": [{"succeededCount": 1}]}}, id="success_policy"),
        pytest.param(
            {"activeDeadlineSeconds": 0, "ttlSecondsAfterFinished": 0, "backoffLimit": 0}, id="zeros"
        ),
    ],
)
def test_a_job_using_the_indexed_features_as_documented_is_valid(registry: Registry, job_spec: Obj) -> None:
    assert _causes(registry, _job(_never(), **copy.deepcopy(job_spec))) == []


def test_a_job_template_may_restart_on_failure(registry: Registry) -> None:
    pod_spec = _never()
    pod_spec["restartPolicy"] = "OnFailure"
    assert _causes(registry, _job(pod_spec)) == []
