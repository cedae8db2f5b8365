"""What the Job controller reads from pods, and how it builds the pods it creates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from kubehpc.api import fields as F
from kubehpc.controllers.job import constants as c
from kubehpc.controllers.job.spec import JobSpec, parse_time

Obj = dict[str, Any]
UNKNOWN_INDEX = -1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def meta(pod: Obj) -> Obj:
    return pod.get("metadata") or {}


def status(pod: Obj) -> Obj:
    return pod.get("status") or {}


def uid(pod: Obj) -> str:
    return str(meta(pod).get("uid", ""))


def name(pod: Obj) -> str:
    return str(meta(pod).get("name", ""))


def phase(pod: Obj) -> str:
    return str(status(pod).get("phase") or "Pending")


def deleting(pod: Obj) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def has_tracking_finalizer(pod: Obj) -> bool:
    return c.TRACKING_FINALIZER in (meta(pod).get("finalizers") or ())


def is_active(pod: Obj) -> bool:
    """Counts toward ``status.active``: not finished and not being deleted."""
    return phase(pod) not in ("Succeeded", "Failed") and not deleting(pod)


def is_terminating(pod: Obj) -> bool:
    return deleting(pod) and phase(pod) not in ("Succeeded", "Failed")


def is_succeeded(pod: Obj) -> bool:
    return phase(pod) == "Succeeded"


def is_failed(pod: Obj, job: JobSpec) -> bool:
    """A failure for the Job. With podReplacementPolicy TerminatingOrFailed (and no pod failure
    policy) a pod being deleted already counts: it will never succeed."""
    if phase(pod) == "Failed":
        return True
    if job.replace_only_failed:
        return False
    return deleting(pod) and phase(pod) != "Succeeded"


def condition(pod: Obj, ctype: str) -> Obj | None:
    for cond in F.object_list(status(pod), "conditions"):
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def is_ready(pod: Obj) -> bool:
    cond = condition(pod, "Ready")
    return bool(cond and cond.get("status") == "True")


def completion_index(pod: Obj) -> int:
    value = (meta(pod).get("annotations") or {}).get(c.COMPLETION_INDEX_KEY)
    try:
        ix = int(value) if value is not None else UNKNOWN_INDEX
    except (TypeError, ValueError):
        return UNKNOWN_INDEX
    return ix if ix >= 0 else UNKNOWN_INDEX


def valid_index(pod: Obj, completions: int | None) -> int:
    """The pod's completion index when it is within ``completions``, else UNKNOWN_INDEX."""
    ix = completion_index(pod)
    if ix == UNKNOWN_INDEX or completions is None or ix >= completions:
        return UNKNOWN_INDEX
    return ix


def _annotation_count(pod: Obj, key: str) -> int:
    try:
        value = int((meta(pod).get("annotations") or {}).get(key, 0))
    except (TypeError, ValueError):
        return 0
    return value if 0 <= value <= c.MAX_INT32 else 0


def index_failure_count(pod: Obj) -> int:
    return _annotation_count(pod, c.INDEX_FAILURE_COUNT_ANNOTATION)


def index_ignored_failure_count(pod: Obj) -> int:
    return _annotation_count(pod, c.INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)


def restart_count(pod: Obj) -> int:
    st = status(pod)
    return sum(
        int(cs.get("restartCount") or 0)
        for cs in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or [])
    )


def finished_time(pod: Obj) -> datetime:
    """When the pod finished, looked up as the Job controller does: the last container's
    finishedAt, else the Ready=False transition, else deletion time minus grace, else creation."""
    latest: datetime | None = None
    statuses = status(pod).get("containerStatuses") or []
    for cs in statuses:
        terminated = F.obj_field(F.obj_field(cs, "state"), "terminated")
        at = parse_time(terminated.get("finishedAt"))
        if at is None:
            latest = None
            break
        latest = at if latest is None or at > latest else latest
    if latest is not None:
        return latest
    ready = condition(pod, "Ready")
    if ready and ready.get("status") == "False":
        at = parse_time(ready.get("lastTransitionTime"))
        if at is not None:
            return at
    deleted = parse_time(meta(pod).get("deletionTimestamp"))
    if deleted is not None:
        return deleted - timedelta(seconds=int(meta(pod).get("deletionGracePeriodSeconds") or 0))
    return parse_time(meta(pod).get("creationTimestamp")) or EPOCH


def _without_binding(pod: Obj) -> Obj:
    """A view of ``pod`` (sharing its parts) without what binding it to a node sets."""
    view = dict(pod)
    view["metadata"] = {k: v for k, v in meta(pod).items() if k not in ("resourceVersion", "managedFields")}
    view["spec"] = {k: v for k, v in F.spec(pod).items() if k != "nodeName"}
    pod_status = dict(status(pod))
    conditions = [
        cond for cond in F.object_list(pod_status, "conditions") if cond.get("type") != "PodScheduled"
    ]
    if conditions:
        pod_status["conditions"] = conditions
    else:
        pod_status.pop("conditions", None)
    view["status"] = pod_status
    return view


def only_bound_since(before: Obj, after: Obj) -> bool:
    """Whether ``after`` is ``before`` bound to a node and nothing else: ``spec.nodeName`` and
    the PodScheduled condition set (as ``pods/binding`` does), every other field as it was."""
    if F.spec(before).get("nodeName") or not F.spec(after).get("nodeName"):
        return False
    return _without_binding(before) == _without_binding(after)


def removal_rank(pod: Obj) -> tuple[int, int, int, float, int, float, str]:
    """Sort key putting first the pods to remove first, as Kubernetes' ``ActivePods`` order:
    unscheduled before scheduled, Pending before Unknown before Running, not ready before
    ready, ready for less time first, more container restarts first, newer before older."""
    scheduled = 1 if F.spec(pod).get("nodeName") else 0
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(phase(pod), 0)
    ready = is_ready(pod)
    ready_cond = condition(pod, "Ready") or {}
    ready_since = parse_time(ready_cond.get("lastTransitionTime")) if ready else None
    created = parse_time(meta(pod).get("creationTimestamp")) or EPOCH
    return (
        scheduled,
        phase_rank,
        1 if ready else 0,
        -(ready_since or EPOCH).timestamp(),
        -restart_count(pod),
        -created.timestamp(),
        name(pod),
    )


def generate_name(job: JobSpec, index: int | None) -> str:
    """``<job>-`` or ``<job>-<index>-``, cut to fit the 63-character name limit."""
    if index is None:
        prefix = job.name + "-"
        return prefix[: c.MAX_GENERATED_NAME_LENGTH]
    suffix = f"-{index}-"
    prefix = job.name + suffix
    if len(prefix) > c.MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[: c.MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def _add_index_env(container: Obj) -> None:
    env = container.setdefault("env", [])
    if any(e.get("name") == c.COMPLETION_INDEX_ENV for e in env):
        return
    env.append(
        {
            "name": c.COMPLETION_INDEX_ENV,
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{c.COMPLETION_INDEX_KEY}']"}},
        }
    )


def build_pod(job: JobSpec, index: int | None, failure_counts: tuple[int, int] | None = None) -> Obj:
    """A pod for ``job`` from its template (``index`` for Indexed Jobs), owned by the Job and
    carrying the tracking finalizer; the API server picks the name from ``generateName``."""
    template = orjson.loads(orjson.dumps(job.template))  # JSON: a round trip beats deepcopy
    tmeta = F.metadata(template)
    spec = F.spec(template)
    labels = dict(F.obj_field(tmeta, "labels"))
    annotations = dict(F.obj_field(tmeta, "annotations"))
    finalizers = list(tmeta.get("finalizers") or [])
    if c.TRACKING_FINALIZER not in finalizers:
        finalizers.append(c.TRACKING_FINALIZER)
    if index is not None:
        for container in F.object_list(spec, "initContainers"):
            _add_index_env(container)
        for container in F.object_list(spec, "containers"):
            _add_index_env(container)
        annotations[c.COMPLETION_INDEX_KEY] = str(index)
        labels[c.COMPLETION_INDEX_KEY] = str(index)
        spec["hostname"] = f"{job.name}-{index}"
        if failure_counts is not None:
            failed, ignored = failure_counts
            annotations[c.INDEX_FAILURE_COUNT_ANNOTATION] = str(failed)
            if ignored > 0:
                annotations[c.INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
    pod_meta: Obj = {
        "generateName": generate_name(job, index),
        "namespace": job.namespace,
        "labels": labels,
        "finalizers": finalizers,
        "ownerReferences": [
            {
                "apiVersion": c.JOB_API_VERSION,
                "kind": c.JOB_KIND,
                "name": job.name,
                "uid": job.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if annotations:
        pod_meta["annotations"] = annotations
    return {"apiVersion": c.POD_API_VERSION, "kind": c.POD_KIND, "metadata": pod_meta, "spec": spec}


def controller_ref(pod: Obj) -> Obj | None:
    for ref in F.object_list(meta(pod), "ownerReferences"):
        if ref.get("controller"):
            return dict(ref)
    return None


def is_owned_by(pod: Obj, job_uid: str) -> bool:
    ref = controller_ref(pod)
    return bool(ref and ref.get("kind") == c.JOB_KIND and ref.get("uid") == job_uid)
