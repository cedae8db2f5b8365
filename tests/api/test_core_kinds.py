"""The built-in kinds: names, scopes, subresources and kubectl's table columns."""

from __future__ import annotations

from typing import Any

import pytest

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import build_registry, core
from kubehpc.api.meta import validate_metadata
from kubehpc.api.registry import FieldValidation, PrinterColumn, Registry


@pytest.fixture(scope="module")
def registry() -> Registry:
    return build_registry(("kubehpc.api.kinds.core",))


@pytest.mark.parametrize(
    ("name", "key", "namespaced", "status"),
    [
        ("ns", "namespaces", False, True),
        ("no", "nodes", False, True),
        ("po", "pods", True, True),
        ("cm", "configmaps", True, False),
        ("secret", "secrets", True, False),
        ("svc", "services", True, True),
        ("pvc", "persistentvolumeclaims", True, True),
        ("ev", "events", True, False),
        ("sa", "serviceaccounts", True, False),
        ("jobs.batch", "jobs.batch", True, True),
        ("pc", "priorityclasses.scheduling.k8s.io", False, False),
        ("lease", "leases.coordination.k8s.io", True, False),
    ],
)
def test_kinds_resolve_with_scope_and_status_subresource(
    registry: Registry, name: str, key: str, namespaced: bool, status: bool
) -> None:
    rt = registry.resolve(name)
    assert (rt.key, rt.namespaced, rt.status_subresource) == (key, namespaced, status)


def test_pods_services_and_jobs_are_in_category_all(registry: Registry) -> None:
    assert sorted(rt.kind for rt in registry if "all" in rt.categories) == ["Job", "Pod", "Service"]


def _columns(registry: Registry, kind: str) -> tuple[list[str], list[str]]:
    rt = next(rt for rt in registry if rt.kind == kind)
    columns = rt.versions[0].printer_columns
    return (
        [c.name.upper() for c in columns if c.priority == 0],
        [c.name.upper() for c in columns if c.priority == 1],
    )


@pytest.mark.parametrize(
    ("kind", "normal", "wide"),
    [
        ("Pod", "NAME READY STATUS RESTARTS AGE", "IP|NODE|NOMINATED NODE|READINESS GATES"),
        ("Job", "NAME STATUS COMPLETIONS DURATION AGE", "CONTAINERS|IMAGES|SELECTOR"),
        (
            "Node",
            "NAME STATUS ROLES AGE VERSION",
            "INTERNAL-IP|EXTERNAL-IP|OS-IMAGE|KERNEL-VERSION|CONTAINER-RUNTIME",
        ),
        ("Namespace", "NAME STATUS AGE", ""),
        ("ConfigMap", "NAME DATA AGE", ""),
        ("Secret", "NAME TYPE DATA AGE", ""),
        ("Service", "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE", "SELECTOR"),
        (
            "PersistentVolumeClaim",
            "NAME STATUS VOLUME CAPACITY ACCESS|MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
            "",
        ),
        ("Event", "LAST|SEEN TYPE REASON OBJECT MESSAGE", "SUBOBJECT|SOURCE|FIRST SEEN|COUNT|NAME"),
        ("PriorityClass", "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY", ""),
        ("Lease", "NAME HOLDER AGE", ""),
        ("ServiceAccount", "NAME SECRETS AGE", ""),
    ],
)
def test_printer_columns_match_the_api_server_tables(
    registry: Registry, kind: str, normal: str, wide: str
) -> None:
    columns, wide_columns = _columns(registry, kind)
    assert columns == [c.replace("|", " ") for c in normal.split(" ")]
    assert wide_columns == (wide.split("|") if wide else [])


def _cell(column: PrinterColumn, obj: dict[str, Any]) -> Any:
    assert column.value is not None
    return column.value(obj)


def _status(*containers: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": f"c{i}"} for i in range(len(containers))]},
        "status": {"phase": "Running", "containerStatuses": list(containers), **status},
    }


RUNNING = {"ready": True, "restartCount": 0, "state": {"running": {}}}


@pytest.mark.parametrize(
    ("pod", "status"),
    [
        ({"metadata": {}, "status": {"phase": "Pending"}}, "Pending"),
        (_status({"state": {"waiting": {"reason": "ContainerCreating"}}}), "ContainerCreating"),
        (_status(RUNNING), "Running"),
        (_status({"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}), "Completed"),
        (_status({"state": {"terminated": {"reason": "Error", "exitCode": 1}}}), "Error"),
        (_status({"state": {"terminated": {"exitCode": 3}}}), "ExitCode:3"),
        (
            _status({"restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}),
            "CrashLoopBackOff",
        ),
        (
            {
                "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]},
                "status": {"phase": "Pending", "initContainerStatuses": [{"state": {"running": {}}}]},
            },
            "Init:0/1",
        ),
        ({**_status(RUNNING), "metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}, "Terminating"),
    ],
)
def test_pod_status_column_is_computed_like_kubectl(pod: dict[str, Any], status: str) -> None:
    assert core.pod_status(pod) == status


def test_pod_ready_and_restarts() -> None:
    pod = _status(
        RUNNING, {"ready": False, "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    )
    assert (core.pod_ready(pod), core.pod_restarts(pod)) == ("1/2", 2)


def test_job_cells() -> None:
    job = {
        "spec": {"completions": 3, "selector": {"matchLabels": {"a": "b"}}},
        "status": {
            "succeeded": 3,
            "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:05:03Z",
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    }
    assert (core.job_status(job), core.job_completions(job), core.job_duration(job)) == (
        "Complete",
        "3/3",
        "5m3s",
    )
    assert core.format_label_selector(job["spec"]["selector"]) == "a=b"


def test_a_running_job_duration_is_its_start_time_for_the_server_to_render() -> None:
    job = {"spec": {"parallelism": 4}, "status": {"startTime": "2024-01-01T00:00:00Z"}}
    assert core.job_duration(job) == "2024-01-01T00:00:00Z"
    assert core.job_completions(job) == "0/1 of 4"
    assert core.job_status(job) == "Running"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (50 * 3600, "2d2h"),
    ],
)
def test_human_duration_matches_kubectl(seconds: int, text: str) -> None:
    assert core.human_duration(seconds) == text


def test_service_cells() -> None:
    svc = {
        "spec": {
            "type": "NodePort",
            "clusterIP": "10.0.0.1",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}],
        }
    }
    assert (core.service_ports(svc), core.service_external_ip(svc)) == ("80:30080/TCP", "<none>")


def test_node_cells() -> None:
    node = {
        "metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}},
        "spec": {"unschedulable": True},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert (core.node_status(node), core.node_roles(node)) == ("Ready,SchedulingDisabled", "control-plane")


def test_event_object_cell() -> None:
    assert core.event_object({"involvedObject": {"kind": "Pod", "name": "p"}}) == "pod/p"


def test_namespace_names_must_be_dns_labels_once_registered(registry: Registry) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    with pytest.raises(Invalid):
        validate_metadata(ns, namespaced=False, mode=FieldValidation.STRICT)


def test_service_names_must_start_with_a_letter(registry: Registry) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1svc"}}
    with pytest.raises(Invalid):
        validate_metadata(svc, namespaced=True, mode=FieldValidation.STRICT)


def test_a_service_needs_ports_unless_headless(registry: Registry) -> None:
    _, version = registry.for_kind("v1", "Service")
    with pytest.raises(Invalid):
        version.validate(
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}},
            FieldValidation.STRICT,
        )
    headless = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"clusterIP": "None"},
    }
    assert version.validate(headless, FieldValidation.STRICT) == []
