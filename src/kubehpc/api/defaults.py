"""Defaults the API server fills in, per kind (``pkg/apis/*/v1/defaults.go`` plus the
create-time fields set by each kind's REST strategy).

Every function only fills what is missing and tolerates malformed input (validation reports
that), so the store may call it before or after validation. ``default_job`` reads
``metadata.uid``: the store sets it before defaulting, as the API server does.
"""

from __future__ import annotations

import base64
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.quantity import parse_quantity

Obj = dict[str, Any]
MAX_INT32 = 2**31 - 1
JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"


def _dict(parent: Obj, key: str) -> Obj:
    """``parent[key]``, created as ``{}`` when absent (or null)."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


# --- Pods -------------------------------------------------------------------------------------


def image_pull_policy(image: str) -> str:
    """Always for ``:latest`` or an untagged image, IfNotPresent otherwise (digests count as tags)."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_probe(probe: Any) -> None:
    if isinstance(probe, dict):
        for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1)):
            probe.setdefault(key, value)
        probe.setdefault("failureThreshold", 3)


def default_container(container: Obj) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = container.get("image")
    if "imagePullPolicy" not in container and isinstance(image, str):
        container["imagePullPolicy"] = image_pull_policy(image)
    for port in _dicts(container.get("ports")):
        port.setdefault("protocol", "TCP")
    for env in _dicts(container.get("env")):
        value_from = env.get("valueFrom")
        field_ref = value_from.get("fieldRef") if isinstance(value_from, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(probe))


def default_pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and the container defaults (Pods and pod templates alike)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _dicts(spec.get(key)):
            default_container(container)
            if spec.get("hostNetwork") is True:
                # on the host network a container port is a host port
                for port in _dicts(container.get("ports")):
                    port.setdefault("hostPort", port.get("containerPort"))
    for volume in _dicts(spec.get("volumes")):
        for source in ("secret", "configMap", "downwardAPI", "projected"):
            if isinstance(volume.get(source), dict):
                volume[source].setdefault("defaultMode", 0o644)
        if isinstance(volume.get("hostPath"), dict):
            volume["hostPath"].setdefault("type", "")


def default_pod_template(template: Any) -> None:
    """Pod templates get the pod spec defaults; ``enableServiceLinks`` and requests copied from
    limits are Pod-only defaults (``SetDefaults_Pod``), so templates stay without them."""
    if isinstance(template, dict):
        default_pod_spec(_dict(template, "spec"))


def _requests_from_limits(container: Obj) -> None:
    resources = container.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return
    requests = _dict(resources, "requests")
    for name, value in resources["limits"].items():
        requests.setdefault(name, value)


def qos_class(spec: Obj) -> str:
    """Guaranteed, Burstable or BestEffort, from cpu and memory requests and limits."""
    containers = _dicts(spec.get("containers")) + _dicts(spec.get("initContainers"))
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources")
        resources = resources if isinstance(resources, dict) else {}
        requests: Obj = resources["requests"] if isinstance(resources.get("requests"), dict) else {}
        limits: Obj = resources["limits"] if isinstance(resources.get("limits"), dict) else {}
        for name in ("cpu", "memory"):
            request, limit = requests.get(name), limits.get(name)
            if request is not None or limit is not None:
                any_set = True
            if limit is None or (request is not None and _amount(request) != _amount(limit)):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _amount(value: Any) -> Any:
    try:
        return parse_quantity(value).amount
    except ValueError:
        return value


def default_pod(pod: Obj) -> None:
    spec = _dict(pod, "spec")
    default_pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)
    for key in ("initContainers", "containers"):
        for container in _dicts(spec.get(key)):
            _requests_from_limits(container)
    status = _dict(pod, "status")
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos_class(spec))


# --- Jobs -------------------------------------------------------------------------------------


def default_job(job: Obj) -> None:
    spec = _dict(job, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if spec.get("podReplacementPolicy") is None:
        failure_policy = spec.get("podFailurePolicy") is not None
        spec["podReplacementPolicy"] = "Failed" if failure_policy else "TerminatingOrFailed"
    template = _dict(spec, "template")
    metadata = _dict(job, "metadata")
    # The API server copies the template labels onto a Job without labels when it decodes the
    # request, generates the selector afterwards, and defaults again when it reads the Job back
    # from storage; copying before and after generating gives the object a client sees.
    _copy_template_labels(metadata, template)
    if not spec.get("manualSelector"):
        _generate_job_selector(metadata, spec, template)
    _copy_template_labels(metadata, template)
    default_pod_template(template)


def _copy_template_labels(metadata: Obj, template: Obj) -> None:
    template_meta = template.get("metadata")
    labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
    if isinstance(labels, dict) and labels and not metadata.get("labels"):
        metadata["labels"] = dict(labels)


def _generate_job_selector(metadata: Obj, spec: Obj, template: Obj) -> None:
    uid, name = metadata.get("uid"), metadata.get("name")
    if not uid:
        return  # offline checks: no uid yet, the store fills the selector on create
    labels = _dict(_dict(template, "metadata"), "labels")
    labels.setdefault(JOB_CONTROLLER_UID, uid)
    labels.setdefault(LEGACY_CONTROLLER_UID, uid)
    if isinstance(name, str):
        labels.setdefault(JOB_NAME, name)
        labels.setdefault(LEGACY_JOB_NAME, name)
    if spec.get("selector") is None:
        spec["selector"] = {"matchLabels": {JOB_CONTROLLER_UID: uid}}


# --- Other kinds ------------------------------------------------------------------------------


def default_service(service: Obj) -> None:
    spec = _dict(service, "spec")
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec.get("type") != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in _dicts(spec.get("ports")):
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")


def default_namespace(namespace: Obj) -> None:
    name = F.metadata(namespace).get("name")
    if isinstance(name, str) and name:
        labels = _dict(_dict(namespace, "metadata"), "labels")
        labels["kubernetes.io/metadata.name"] = name  # always set to the name, as the server does
    spec = _dict(namespace, "spec")
    if spec.get("finalizers") is None:
        spec["finalizers"] = ["kubernetes"]
    _dict(namespace, "status").setdefault("phase", "Active")


def default_pvc(pvc: Obj) -> None:
    _dict(pvc, "spec").setdefault("volumeMode", "Filesystem")
    _dict(pvc, "status").setdefault("phase", "Pending")


def default_secret(secret: Obj) -> None:
    """``type`` defaults to Opaque; ``stringData`` is write-only: the server merges it into
    ``data`` (base64, winning over ``data``) and never stores it."""
    secret.setdefault("type", "Opaque")
    string_data = secret.get("stringData")
    if isinstance(string_data, dict):
        data = _dict(secret, "data")
        for key, value in string_data.items():
            if isinstance(value, str):
                data[key] = base64.b64encode(value.encode()).decode()
        del secret["stringData"]


def default_priority_class(pc: Obj) -> None:
    pc.setdefault("preemptionPolicy", "PreemptLowerPriority")
