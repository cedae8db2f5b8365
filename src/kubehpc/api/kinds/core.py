"""Built-in kinds: v1, batch/v1, scheduling.k8s.io/v1 and coordination.k8s.io/v1.

Validation is the official schema (:mod:`kubehpc.api.schema`) plus the API server's semantic
rules (:mod:`kubehpc.api.kinds.core_validation`); defaults come from
:mod:`kubehpc.api.defaults`, update rules from :mod:`kubehpc.api.immutable`.

Printer columns mirror the API server's tables (names as the server sends them; kubectl
upper-cases them). Cell conventions for the HTTP server:

* ``type="date"`` (AGE, LAST SEEN, FIRST SEEN): the cell is the raw RFC 3339 timestamp (or
  None); render it as an age relative to the server clock with :func:`human_duration`.
* ``format="duration-since"`` (Job DURATION): the cell is either a finished duration already
  rendered (``"5m3s"``) or, while the Job runs, the raw ``status.startTime`` timestamp to be
  rendered as the time elapsed since then. Tell them apart by parsing as RFC 3339.
* ``format="name"``: the object's name column, as in the API server's tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubehpc.api import defaults, immutable, schema
from kubehpc.api import fields as F
from kubehpc.api.errors import Cause, invalid
from kubehpc.api.kinds.core_validation import job_causes, pod_causes, service_causes
from kubehpc.api.meta import set_name_rule
from kubehpc.api.registry import (
    STATUS_WRITE_FIELDS,
    Default,
    FieldValidation,
    PrinterColumn,
    Registry,
    ResourceType,
    Validate,
    ValidateUpdate,
    VersionSpec,
)

Obj = dict[str, Any]
Semantic = Callable[[Obj], list[Cause]]
NONE = "<none>"


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _no_semantics(obj: Obj) -> list[Cause]:
    return []


def _only_status_may_change(obj: Obj, unchanged: frozenset[str]) -> bool:
    return all(key in unchanged or key in STATUS_WRITE_FIELDS for key in obj)


def schema_validator(group: str, version: str, kind: str, semantic: Semantic = _no_semantics) -> Validate:
    """A ``registry.Validate`` for a built-in kind: the official schema, then ``semantic``."""
    definition = schema.definition_for_kind(group, version, kind)

    def validate(obj: Obj, mode: FieldValidation, /, *, unchanged: frozenset[str] = frozenset()) -> list[str]:
        causes, warnings = schema.validate_object(definition, obj, mode, skip=unchanged)
        # The semantic rules (ValidateJobSpec, ...) read what a status write cannot change: a
        # write that changes nothing but the status skips them, as the API server's status
        # strategies validate the status alone.
        if not causes and not (unchanged and _only_status_may_change(obj, unchanged)):
            causes = semantic(obj)
        if causes:
            name = str(_get(obj, "metadata", "name") or _get(obj, "metadata", "generateName") or "")
            raise invalid(kind, name, causes, group=group)
        return warnings

    return validate


# --- printer cells ------------------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """kubectl's ``HumanDuration`` (``5m3s``, ``3h``, ``2d4h``)."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _seconds_between(start: str, end: str) -> float:
    from datetime import datetime

    def parse(ts: str) -> datetime:
        return datetime.fromisoformat(ts.replace("Z", "+00:00").replace("z", "+00:00"))

    return (parse(end) - parse(start)).total_seconds()


def format_label_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: ``a=b,c in (d,e),!f``; ``<none>`` when empty."""
    if not isinstance(selector, dict):
        return NONE
    parts = [f"{k}={v}" for k, v in F.obj_field(selector, "matchLabels").items()]
    for expr in _list(selector.get("matchExpressions")):
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or NONE


def pod_ready(pod: Obj) -> str:
    statuses = _list(_get(pod, "status", "containerStatuses"))
    total = len(_list(_get(pod, "spec", "containers")))
    ready = sum(
        1
        for c in statuses
        if isinstance(c, dict) and c.get("ready") and _get(c, "state", "running") is not None
    )
    return f"{ready}/{total}"


def pod_restarts(pod: Obj) -> int:
    statuses = _list(_get(pod, "status", "containerStatuses")) + _list(
        _get(pod, "status", "initContainerStatuses")
    )
    return sum(int(c.get("restartCount") or 0) for c in statuses if isinstance(c, dict))


def pod_status(pod: Obj) -> str:
    """The STATUS cell, computed as kubectl's ``printPod`` does."""
    status = _dict(pod.get("status"))
    reason = status.get("reason") or status.get("phase") or ""
    for cond in _list(status.get("conditions")):
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = _list(_get(pod, "spec", "initContainers"))
    initializing = False
    for i, c in enumerate(_list(status.get("initContainerStatuses"))):
        state = F.obj_field(c, "state")
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and terminated.get("exitCode") == 0:
            continue
        if c.get("started") and i < len(init_specs) and init_specs[i].get("restartPolicy") == "Always":
            continue  # a running sidecar
        if terminated:
            if terminated.get("reason"):
                reason = "Init:" + terminated["reason"]
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{terminated.get('exitCode')}"
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    if not initializing:
        has_running = False
        for c in _list(status.get("containerStatuses"))[::-1]:
            state = F.obj_field(c, "state")
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated:
                signal = terminated.get("signal")
                reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode')}"
            elif c.get("ready") and state.get("running") is not None:
                has_running = True
        if reason == "Completed" and has_running:
            ready = any(
                cond.get("type") == "Ready" and cond.get("status") == "True"
                for cond in _list(status.get("conditions"))
            )
            reason = "Running" if ready else "NotReady"
    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return str(reason)


def _readiness_gates(pod: Obj) -> str:
    gates = _list(_get(pod, "spec", "readinessGates"))
    if not gates:
        return NONE
    true = {c.get("type") for c in _list(_get(pod, "status", "conditions")) if c.get("status") == "True"}
    return f"{sum(1 for g in gates if g.get('conditionType') in true)}/{len(gates)}"


def _has_condition(obj: Obj, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in _list(_get(obj, "status", "conditions"))
    )


def job_status(job: Obj) -> str:
    if _has_condition(job, "Complete"):
        return "Complete"
    if _has_condition(job, "Failed"):
        return "Failed"
    if _get(job, "metadata", "deletionTimestamp"):
        return "Terminating"
    for condition in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _has_condition(job, condition):
            return condition
    return "Running"


def job_completions(job: Obj) -> str:
    succeeded = _get(job, "status", "succeeded") or 0
    completions = _get(job, "spec", "completions")
    if completions is not None:
        return f"{succeeded}/{completions}"
    parallelism = _get(job, "spec", "parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def job_duration(job: Obj) -> str | None:
    start, end = _get(job, "status", "startTime"), _get(job, "status", "completionTime")
    if start and end:
        return human_duration(_seconds_between(start, end))
    return start if start else None


def _template_containers(obj: Obj, field: str) -> str:
    containers = _list(_get(obj, "spec", "template", "spec", "containers"))
    return ",".join(str(c.get(field, "")) for c in containers if isinstance(c, dict))


def node_status(node: Obj) -> str:
    ready = next(
        (c.get("status") for c in _list(_get(node, "status", "conditions")) if c.get("type") == "Ready"), None
    )
    text = {"True": "Ready", "False": "NotReady"}.get(str(ready), "Unknown")
    return text + (",SchedulingDisabled" if _get(node, "spec", "unschedulable") else "")


def node_roles(node: Obj) -> str:
    roles = set()
    for key, value in (_get(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key != "node-role.kubernetes.io/":
            roles.add(key.removeprefix("node-role.kubernetes.io/"))
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or NONE


def _node_address(kind: str) -> Callable[[Obj], str]:
    def cell(node: Obj) -> str:
        addresses = [
            a.get("address") for a in _list(_get(node, "status", "addresses")) if a.get("type") == kind
        ]
        return ",".join(str(a) for a in addresses) or NONE

    return cell


def service_external_ip(svc: Obj) -> str:
    spec = F.spec(svc)
    kind = spec.get("type") or "ClusterIP"
    external = _list(spec.get("externalIPs"))
    if kind == "ExternalName":
        return str(spec.get("externalName") or NONE)
    if kind == "LoadBalancer":
        ingress = [
            i.get("ip") or i.get("hostname") for i in _list(_get(svc, "status", "loadBalancer", "ingress"))
        ]
        found = [str(x) for x in [*ingress, *external] if x]
        return ",".join(found) or "<pending>"
    return ",".join(external) or NONE


def service_ports(svc: Obj) -> str:
    out = []
    for port in _list(_get(svc, "spec", "ports")):
        text = str(port.get("port"))
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        out.append(f"{text}/{port.get('protocol') or 'TCP'}")
    return ",".join(out) or NONE


def _selector_map(svc: Obj) -> str:
    selector = _get(svc, "spec", "selector") or {}
    return ",".join(f"{k}={v}" for k, v in selector.items()) or NONE


_ACCESS_MODES = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}


def pvc_status(pvc: Obj) -> str:
    if _get(pvc, "metadata", "deletionTimestamp"):
        return "Terminating"
    return str(_get(pvc, "status", "phase") or "")


def event_last_seen(ev: Obj) -> Any:
    return (
        _get(ev, "series", "lastObservedTime")
        or ev.get("lastTimestamp")
        or ev.get("eventTime")
        or _get(ev, "metadata", "creationTimestamp")
    )


def event_object(ev: Obj) -> str:
    involved = ev.get("involvedObject") or ev.get("regarding") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_source(ev: Obj) -> str:
    source = F.obj_field(ev, "source")
    text = source.get("component") or ev.get("reportingComponent") or ""
    if source.get("host"):
        text += f", {source['host']}"
    return str(text)


def _first_seen(ev: Obj) -> Any:
    return ev.get("firstTimestamp") or ev.get("eventTime") or _get(ev, "metadata", "creationTimestamp")


def _count(ev: Obj) -> int:
    return int(_get(ev, "series", "count") or ev.get("count") or 1)


def _path(json_path: str) -> Callable[[Obj], Any]:
    keys = json_path.strip(".").split(".")

    def cell(obj: Obj) -> Any:
        return _get(obj, *keys)

    return cell


def _len_of(*fields: str) -> Callable[[Obj], int]:
    def cell(obj: Obj) -> int:
        return sum(len(obj.get(f) or ()) for f in fields)

    return cell


NAME = PrinterColumn("Name", json_path=".metadata.name", format="name", description="Name of the object")
AGE = PrinterColumn(
    "Age", type="date", json_path=".metadata.creationTimestamp", value=_path(".metadata.creationTimestamp")
)


def _col(
    name: str, value: Callable[[Obj], Any], type: str = "string", priority: int = 0, **kw: Any
) -> PrinterColumn:
    return PrinterColumn(name, type=type, value=value, priority=priority, **kw)


POD_COLUMNS = (
    NAME,
    _col("Ready", pod_ready),
    _col("Status", pod_status),
    _col("Restarts", pod_restarts, type="integer"),
    AGE,
    _col("IP", lambda p: _get(p, "status", "podIP") or NONE, priority=1),
    _col("Node", lambda p: _get(p, "spec", "nodeName") or NONE, priority=1),
    _col("Nominated Node", lambda p: _get(p, "status", "nominatedNodeName") or NONE, priority=1),
    _col("Readiness Gates", _readiness_gates, priority=1),
)
JOB_COLUMNS = (
    NAME,
    _col("Status", job_status),
    _col("Completions", job_completions),
    _col("Duration", job_duration, format="duration-since"),
    AGE,
    _col("Containers", lambda j: _template_containers(j, "name"), priority=1),
    _col("Images", lambda j: _template_containers(j, "image"), priority=1),
    _col("Selector", lambda j: format_label_selector(_get(j, "spec", "selector")), priority=1),
)
NODE_COLUMNS = (
    NAME,
    _col("Status", node_status),
    _col("Roles", node_roles),
    AGE,
    _col("Version", lambda n: _get(n, "status", "nodeInfo", "kubeletVersion") or ""),
    _col("Internal-IP", _node_address("InternalIP"), priority=1),
    _col("External-IP", _node_address("ExternalIP"), priority=1),
    _col("OS-Image", lambda n: _get(n, "status", "nodeInfo", "osImage") or "<unknown>", priority=1),
    _col(
        "Kernel-Version", lambda n: _get(n, "status", "nodeInfo", "kernelVersion") or "<unknown>", priority=1
    ),
    _col(
        "Container-Runtime",
        lambda n: _get(n, "status", "nodeInfo", "containerRuntimeVersion") or "<unknown>",
        priority=1,
    ),
)
NAMESPACE_COLUMNS = (NAME, _col("Status", lambda n: _get(n, "status", "phase") or ""), AGE)
CONFIGMAP_COLUMNS = (NAME, _col("Data", _len_of("data", "binaryData"), type="integer"), AGE)
SECRET_COLUMNS = (
    NAME,
    _col("Type", lambda s: s.get("type") or ""),
    _col("Data", _len_of("data"), type="integer"),
    AGE,
)
SERVICE_COLUMNS = (
    NAME,
    _col("Type", lambda s: _get(s, "spec", "type") or "ClusterIP"),
    _col("Cluster-IP", lambda s: _get(s, "spec", "clusterIP") or NONE),
    _col("External-IP", service_external_ip),
    _col("Port(s)", service_ports),
    AGE,
    _col("Selector", _selector_map, priority=1),
)
PVC_COLUMNS = (
    NAME,
    _col("Status", pvc_status),
    _col("Volume", lambda p: _get(p, "spec", "volumeName") or ""),
    _col("Capacity", lambda p: _get(p, "status", "capacity", "storage") or ""),
    _col(
        "Access Modes",
        lambda p: ",".join(_ACCESS_MODES.get(m, m) for m in _list(_get(p, "status", "accessModes"))),
    ),
    _col("StorageClass", lambda p: _get(p, "spec", "storageClassName") or ""),
    _col("VolumeAttributesClass", lambda p: _get(p, "spec", "volumeAttributesClassName") or "<unset>"),
    AGE,
)
EVENT_COLUMNS = (
    _col("Last Seen", event_last_seen, type="date"),
    _col("Type", lambda e: e.get("type") or ""),
    _col("Reason", lambda e: e.get("reason") or ""),
    _col("Object", event_object),
    _col("Subobject", lambda e: _get(e, "involvedObject", "fieldPath") or "", priority=1),
    _col("Source", _event_source, priority=1),
    _col("Message", lambda e: e.get("message") or e.get("note") or ""),
    _col("First Seen", _first_seen, type="date", priority=1),
    _col("Count", _count, type="integer", priority=1),
    PrinterColumn("Name", json_path=".metadata.name", format="name", priority=1),
)
PRIORITY_CLASS_COLUMNS = (
    NAME,
    _col("Value", lambda p: p.get("value"), type="integer"),
    _col("Global-Default", lambda p: bool(p.get("globalDefault")), type="boolean"),
    AGE,
    _col("PreemptionPolicy", lambda p: p.get("preemptionPolicy") or ""),
)
LEASE_COLUMNS = (NAME, _col("Holder", lambda lease: _get(lease, "spec", "holderIdentity") or ""), AGE)
SERVICE_ACCOUNT_COLUMNS = (NAME, _col("Secrets", _len_of("secrets"), type="integer"), AGE)


# --- registration -------------------------------------------------------------------------------


def _kind(
    group: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    status: bool = False,
    semantic: Semantic = _no_semantics,
    default: Default | None = None,
    update: ValidateUpdate = immutable.metadata_update_causes,
    columns: tuple[PrinterColumn, ...] = (),
    write_mostly: bool = False,
) -> ResourceType:
    version = "v1"
    definition = schema.definition_for_kind(group, version, kind)
    spec = VersionSpec(
        name=version,
        validate=schema_validator(group, version, kind, semantic),
        default=default,
        patch_meta=schema.patch_meta(definition),
        printer_columns=columns or (NAME, AGE),
        openapi_schema=schema.component_ref(definition),
    )
    return ResourceType(
        group=group,
        kind=kind,
        plural=plural,
        namespaced=namespaced,
        versions=(spec,),
        storage_version=version,
        short_names=short_names,
        categories=categories,
        status_subresource=status,
        validate_update=update,
        write_mostly=write_mostly,
    )


def register(registry: Registry) -> None:
    set_name_rule("", "Namespace", "label")
    set_name_rule("", "Service", "dns1035")
    for rt in (
        _kind(
            "",
            "Namespace",
            "namespaces",
            namespaced=False,
            short_names=("ns",),
            status=True,
            default=defaults.default_namespace,
            columns=NAMESPACE_COLUMNS,
        ),
        _kind("", "Node", "nodes", namespaced=False, short_names=("no",), status=True, columns=NODE_COLUMNS),
        _kind(
            "",
            "Pod",
            "pods",
            short_names=("po",),
            categories=("all",),
            status=True,
            semantic=pod_causes,
            default=defaults.default_pod,
            update=immutable.pod_update_causes,
            columns=POD_COLUMNS,
        ),
        _kind(
            "",
            "ConfigMap",
            "configmaps",
            short_names=("cm",),
            update=immutable.configmap_update_causes,
            columns=CONFIGMAP_COLUMNS,
        ),
        _kind(
            "",
            "Secret",
            "secrets",
            default=defaults.default_secret,
            update=immutable.secret_update_causes,
            columns=SECRET_COLUMNS,
        ),
        _kind(
            "",
            "Service",
            "services",
            short_names=("svc",),
            categories=("all",),
            status=True,
            semantic=service_causes,
            default=defaults.default_service,
            update=immutable.service_update_causes,
            columns=SERVICE_COLUMNS,
        ),
        _kind(
            "",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            short_names=("pvc",),
            status=True,
            default=defaults.default_pvc,
            update=immutable.pvc_update_causes,
            columns=PVC_COLUMNS,
        ),
        _kind("", "Event", "events", short_names=("ev",), columns=EVENT_COLUMNS, write_mostly=True),
        _kind("", "ServiceAccount", "serviceaccounts", short_names=("sa",), columns=SERVICE_ACCOUNT_COLUMNS),
        _kind(
            "batch",
            "Job",
            "jobs",
            categories=("all",),
            status=True,
            semantic=job_causes,
            default=defaults.default_job,
            update=immutable.job_update_causes,
            columns=JOB_COLUMNS,
        ),
        _kind(
            "scheduling.k8s.io",
            "PriorityClass",
            "priorityclasses",
            namespaced=False,
            short_names=("pc",),
            default=defaults.default_priority_class,
            update=immutable.priority_class_update_causes,
            columns=PRIORITY_CLASS_COLUMNS,
        ),
        _kind("coordination.k8s.io", "Lease", "leases", columns=LEASE_COLUMNS),
    ):
        registry.register(rt)
