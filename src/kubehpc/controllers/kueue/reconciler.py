"""The generic job reconciler (Kueue's ``jobframework.JobReconciler``), for every integration.

Level-triggered: each pass reads the job and its Workload fresh through the Client and moves
them one step towards agreement, in Kueue's order:

1. a Workload that no longer matches the job (pod sets changed) is replaced;
2. a finished job marks its Workload Finished (its quota is released);
3. a job without a Workload is held suspended and gets one (name, owner, queue, pod sets,
   priority from ``kueue.x-k8s.io/priority-class`` or the pods' PriorityClass);
4. an evicted Workload stops its job (suspended, template restored); once no pod of it runs,
   the reservation is cleared and the Workload requeued;
5. an admitted Workload starts its suspended job with the flavors' nodeSelector and
   tolerations (and the admitted count, for partial admission);
6. a job running without an admitted Workload is stopped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import ApiError, Conflict, NotFound
from kubehpc.controllers.job.clock import Clock, RealClock
from kubehpc.controllers.job.controller import EventSink
from kubehpc.controllers.job.workqueue import Key, WorkQueue, work_until_stopped
from kubehpc.controllers.kueue import constants as k
from kubehpc.controllers.kueue import workloads as W
from kubehpc.controllers.kueue.conditions import find
from kubehpc.controllers.kueue.jobframework import (
    GenericJob,
    Integration,
    PodSetConflict,
    PodSetInfo,
    custom_stop_of,
    priority_class_of,
    queue_name,
    workload_priority_class,
)
from kubehpc.controllers.kueue.webhooks import DEFAULT_INTEGRATIONS
from kubehpc.controllers.scheduling.priority import resolve_priority
from kubehpc.controllers.watching import Followers
from kubehpc.sched.planned import (
    PLANNED_NODES_ANNOTATION,
    POD_SET_ANNOTATION,
    WORKLOAD_ANNOTATION,
    encode,
    plan_of_assignment,
)
from kubehpc.store.client import HANDED_OVER, READ_ONLY_RESULT, Client, ListOptions
from kubehpc.store.events import EventRecorder, record_quietly

log = logging.getLogger(__name__)
Obj = dict[str, Any]
COMPOSE_RETRY_S = 30.0


class ComposeError(Exception):
    """The Workload cannot be made yet (a priority class it names is missing)."""


def kind_id(integration: Integration) -> str:
    return f"{integration.kind}.{integration.api_version}"


class JobReconciler:
    def __init__(
        self,
        client: Client,
        integrations: Sequence[Integration] = DEFAULT_INTEGRATIONS,
        *,
        clock: Clock | None = None,
        events: EventSink | None = None,
        resync_seconds: float = 300.0,
    ) -> None:
        self.client = client
        self.integrations = {kind_id(i): i for i in integrations}
        self.clock = clock or RealClock()
        self.events: EventSink = events or EventRecorder(client, k.JOB_RECONCILER_COMPONENT).record
        self.resync_seconds = resync_seconds
        self.queue = WorkQueue()

    # --- one job -----------------------------------------------------------------------------

    def reconcile(self, integration: Integration, namespace: str, name: str) -> float | None:
        """One pass for one job; returns after how many seconds to look again, or None."""
        try:
            # Read only, as most passes write nothing: a step that changes the job or the
            # Workload takes its own copy first (writable_job, W.private_copy).
            obj = self.client.get(integration.api_version, integration.kind, name, namespace, read_only=True)
        except NotFound:
            return None  # its Workload goes with it (ownerReference, garbage collector)
        queue = queue_name(obj)
        if not queue:
            return None
        job = integration.new_job(obj)
        meta = obj["metadata"]
        wl_name = W.workload_name(meta["name"], meta["uid"], integration.api_version, integration.kind)
        wl = self._get_workload(namespace, wl_name)
        owned = False

        def writable_job() -> GenericJob:
            # Later steps read what an earlier one changed (a stopped job is suspended).
            nonlocal job, owned
            if not owned:
                job, owned = integration.new_job(W.private_copy(job.object)), True
            return job

        # 1. A Workload that no longer matches the job is replaced.
        if wl is not None and not _stopping(obj) and not equivalent(job, wl):
            if not job.is_suspended():
                self._stop(writable_job(), wl, "Workload does not match the job any more")
            self.client.delete(k.KUEUE_API_VERSION, k.WORKLOAD, wl_name, namespace)
            wl = None

        # 2. Finished.
        message, succeeded, finished = job.finished()
        if finished:
            if wl is not None and not W.is_finished(wl):
                wl = W.status_copy(wl)
                W.set_finished(wl, succeeded, message, self.clock.now())
                self.client.update_status(wl, HANDED_OVER)  # its own status (status_copy)
            return None

        # 3. No Workload yet.
        if wl is None:
            if not job.is_suspended():
                self._stop(writable_job(), None, "Missing Workload; unable to restore pod templates")
            try:
                self._create_workload(integration, job, queue)
            except ComposeError as err:
                self._event(job.object, "Warning", k.EVENT_WORKLOAD_COMPOSE_ERROR, str(err))
                return COMPOSE_RETRY_S
            return None

        # 4. Evicted: stop, and once nothing runs, release the quota and requeue.
        evicted = find(wl, k.EVICTED)
        if evicted is not None and evicted.get("status") == "True":
            self._stop(writable_job(), wl, str(evicted.get("message") or "Workload evicted"))
            if W.has_quota_reservation(wl) and not job.is_active():
                now = self.clock.now()
                reason = str(evicted.get("reason") or "")
                message = str(evicted.get("message") or "")
                wl = W.status_copy(wl)
                W.set_requeued(wl, reason, message, reason == k.REASON_EVICTED_BY_PREEMPTION, now)
                W.unset_quota_reservation(wl, k.REASON_PENDING, message, now)
                self.client.update_status(wl, HANDED_OVER)  # its own status (status_copy)
            return None

        # 5. Suspended: start it once admitted, else keep the Workload in step with it.
        if job.is_suspended():
            if W.is_admitted(wl):
                self._start(writable_job(), wl)
            elif not W.has_quota_reservation(wl):
                self._sync_pending_spec(job, W.private_copy(wl), queue)
            return None

        # 6. Running without an admission.
        if not W.has_quota_reservation(wl):
            self._stop(writable_job(), wl, "Not admitted by cluster queue")
        return None

    def _get_workload(self, namespace: str, name: str) -> Obj | None:
        """The job's Workload, read only (:func:`W.private_copy` it before changing it)."""
        try:
            return self.client.get(k.KUEUE_API_VERSION, k.WORKLOAD, name, namespace, read_only=True)
        except NotFound:
            return None

    # --- making the Workload -----------------------------------------------------------------

    def _create_workload(self, integration: Integration, job: GenericJob, queue: str) -> None:
        priority, ref = self._priority(job)
        # The pod sets are the job's (read only); the Workload gets copies to hand over.
        pod_sets = W.private_copy(job.pod_sets())
        wl = W.new_workload(integration, job.object, queue, pod_sets, priority, ref)
        created = self.client.create(wl, HANDED_OVER)  # built for it; read for the event
        meta = created["metadata"]
        self._event(
            job.object,
            "Normal",
            k.EVENT_CREATED_WORKLOAD,
            f"Created Workload: {meta['namespace']}/{meta['name']}",
        )

    def _priority(self, job: GenericJob) -> tuple[int, Obj | None]:
        """Kueue's order: the WorkloadPriorityClass label, else the pods' PriorityClass, else the
        cluster's default PriorityClass, else 0."""
        wpc = workload_priority_class(job.object)
        if wpc:
            try:
                obj = self.client.get(k.KUEUE_API_VERSION, k.WORKLOAD_PRIORITY_CLASS, wpc, read_only=True)
            except NotFound:
                raise ComposeError(f'workloadpriorityclasses.kueue.x-k8s.io "{wpc}" not found') from None
            return int(obj.get("value") or 0), {
                "group": k.KUEUE_GROUP,
                "kind": k.WORKLOAD_PRIORITY_CLASS,
                "name": wpc,
            }
        name = priority_class_of(job)
        classes = {
            str(pc["metadata"]["name"]): pc
            for pc in self.client.list(
                k.PRIORITY_CLASS_API_VERSION, k.PRIORITY_CLASS, ListOptions(read_only=True)
            ).items
        }
        try:
            resolved = resolve_priority({"priorityClassName": name} if name else {}, classes)
        except ApiError as err:
            raise ComposeError(err.message if hasattr(err, "message") else str(err)) from None
        if not resolved.class_name:
            return resolved.priority, None
        ref = {"group": "scheduling.k8s.io", "kind": k.PRIORITY_CLASS, "name": resolved.class_name}
        return resolved.priority, ref

    def _sync_pending_spec(self, job: GenericJob, wl: Obj, queue: str) -> None:
        """The queue (and priority) of a job still waiting may change: follow it."""
        spec = wl.setdefault("spec", {})
        changed = spec.get("queueName") != queue
        spec["queueName"] = queue
        wanted = workload_priority_class(job.object) or priority_class_of(job)
        # Resolve again only when the job names another class than the Workload has: this
        # runs on every Workload event, and the class's value is read once, at creation.
        if wanted != str(F.obj_field(spec, "priorityClassRef").get("name") or ""):
            try:
                priority, ref = self._priority(job)
            except ComposeError:
                priority, ref = int(spec.get("priority") or 0), spec.get("priorityClassRef")
            if spec.get("priority") != priority or spec.get("priorityClassRef") != ref:
                changed = True
                spec["priority"] = priority
                if ref is None:
                    spec.pop("priorityClassRef", None)
                else:
                    spec["priorityClassRef"] = ref
        if changed:
            self.client.update(wl, READ_ONLY_RESULT)

    # --- starting and stopping ---------------------------------------------------------------

    def _start(self, job: GenericJob, wl: Obj) -> None:
        try:
            infos = self._admitted_infos(wl)
            job.run_with_pod_set_info(infos)
        except (PodSetConflict, ValueError, NotFound) as err:
            self._event(job.object, "Warning", "FailedToStart", str(err))
            return
        self.client.update(job.object, HANDED_OVER)  # a private copy (writable_job)
        cq = W.cluster_queue_of(wl)
        self._event(job.object, "Normal", k.EVENT_STARTED, f"Admitted by clusterQueue {cq}")

    def _admitted_infos(self, wl: Obj) -> list[PodSetInfo]:
        """Per pod set: the nodeSelector and tolerations of the flavors it was admitted to."""
        admission = F.obj_field(F.status(wl), "admission")
        assigned = {
            str(a.get("name") or k.DEFAULT_POD_SET): a for a in F.object_list(admission, "podSetAssignments")
        }
        flavors: dict[str, Obj] = {}
        infos = []
        for pod_set in F.object_list(F.spec(wl), "podSets"):
            name = str(pod_set.get("name") or k.DEFAULT_POD_SET)
            assignment = assigned.get(name) or {}
            count = assignment.get("count")
            info = PodSetInfo(name=name, count=int(count if count is not None else pod_set.get("count", 1)))
            nodes = plan_of_assignment(assignment)
            if nodes:
                # Where admission placed the pods: the scheduler binds them there (sched/planned.py).
                info.annotations[POD_SET_ANNOTATION] = name
                info.annotations[WORKLOAD_ANNOTATION] = str(wl["metadata"]["name"])
                info.annotations[PLANNED_NODES_ANNOTATION] = encode(nodes)
            for flavor_name in sorted(set(F.obj_field(assignment, "flavors").values())):
                if flavor_name not in flavors:
                    # Read only: its labels and tolerations are copied into the template.
                    flavors[flavor_name] = self.client.get(
                        k.KUEUE_API_VERSION, k.RESOURCE_FLAVOR, flavor_name, read_only=True
                    )
                spec = F.spec(flavors[flavor_name])
                info.node_selector.update(F.obj_field(spec, "nodeLabels"))
                for toleration in F.object_list(spec, "tolerations"):
                    if toleration not in info.tolerations:
                        info.tolerations.append(toleration)
            infos.append(info)
        return infos

    def _stop(self, job: GenericJob, wl: Obj | None, message: str) -> None:
        infos = [PodSetInfo.original(ps) for ps in F.object_list(F.spec(wl or {}), "podSets")]
        custom = custom_stop_of(job)
        if custom is not None:
            stopped = custom.stop(self.client, infos)
        elif job.is_suspended():
            if job.restore_pod_set_info(infos):
                self.client.update(job.object, READ_ONLY_RESULT)
            stopped = False
        else:
            job.suspend()
            job.restore_pod_set_info(infos)
            self.client.update(job.object, READ_ONLY_RESULT)
            stopped = True
        if stopped:
            self._event(job.object, "Normal", k.EVENT_STOPPED, message)

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        record_quietly(self.events, obj, type_, reason, message)

    # --- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Watch the jobs of every integration, Workloads and priority classes; reconcile."""
        sources: list[tuple[str, str, Callable[[str, Obj], None]]] = [
            (i.api_version, i.kind, self._job_handler(i)) for i in self.integrations.values()
        ]
        sources += [
            (k.KUEUE_API_VERSION, k.WORKLOAD, self._on_workload),
            (k.KUEUE_API_VERSION, k.WORKLOAD_PRIORITY_CLASS, self._on_priority_class),
            (k.PRIORITY_CLASS_API_VERSION, k.PRIORITY_CLASS, self._on_priority_class),
        ]
        self.queue = WorkQueue()
        followers = Followers(self.client, read_only=True)  # handlers pick keys
        for av, kind, handler in sources:
            followers.start(stop, av, kind, handler)
        work_until_stopped(stop, self.client, self.queue, self._enqueue_all, self.resync_seconds, self._work)
        self.queue.close()
        followers.stop()

    def _work(self, key: Key) -> None:
        kind, ref = key
        namespace, _, name = ref.partition("/")
        integration = self.integrations.get(kind)
        if integration is None:
            return
        try:
            requeue = self.reconcile(integration, namespace, name)
        except Conflict:
            self.queue.add(key)  # someone wrote meanwhile: look again at what is stored now
            return
        except Exception:
            log.exception("reconciling %s %s failed; retrying", kind, ref)
            self.queue.add(key, 1.0)
            return
        if requeue is not None:
            self.queue.add(key, self.clock.wall_seconds(requeue))

    def _enqueue_all(self) -> None:
        for kid, integration in self.integrations.items():
            try:
                # Read only: only each job's queue and key are taken.
                options = ListOptions(read_only=True)
                listed = self.client.list(integration.api_version, integration.kind, options)
            except ApiError:
                log.exception("listing %s failed", integration.kind)
                continue
            for obj in listed.items:
                if queue_name(obj):
                    self.queue.add((kid, _ref(obj)))

    def _job_handler(self, integration: Integration) -> Callable[[str, Obj], None]:
        kid = kind_id(integration)

        def handle(event_type: str, obj: Obj) -> None:
            if event_type != "DELETED" and queue_name(obj):
                self.queue.add((kid, _ref(obj)))

        return handle

    def _on_workload(self, event_type: str, wl: Obj) -> None:
        meta = F.metadata(wl)
        for ref in F.object_list(meta, "ownerReferences"):
            if not ref.get("controller"):
                continue
            for kid, integration in self.integrations.items():
                if integration.owns(ref):
                    self.queue.add((kid, f"{meta.get('namespace') or 'default'}/{ref.get('name')}"))

    def _on_priority_class(self, event_type: str, obj: Obj) -> None:
        self._enqueue_all()  # rare: a job may have waited for this class to exist


# --- comparing a job with its Workload ------------------------------------------------------------


def _ref(obj: Obj) -> str:
    meta = F.metadata(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _stopping(obj: Obj) -> bool:
    return k.STOPPING_ANNOTATION in F.annotations(obj)


def _quota_shape(pod_set: Obj) -> Any:
    """What admission charges for: the containers' resources (scheduling fields may differ
    between the queued template and the running one, which carries the flavors)."""
    spec = F.spec(F.obj_field(pod_set, "template"))
    return [
        [(c.get("name"), c.get("resources") or {}) for c in F.object_list(spec, part)]
        for part in ("initContainers", "containers")
    ]


def equivalent(job: GenericJob, wl: Obj) -> bool:
    """Whether ``wl`` still describes ``job`` (Kueue's ``EquivalentToWorkload``): same pod
    sets and resources; the counts the job runs with are the admitted ones (partial admission)
    while it runs, the queued ones while it is suspended."""
    job_sets = job.pod_sets()
    wl_sets = F.object_list(F.spec(wl), "podSets")
    if [p.get("name") for p in job_sets] != [p.get("name") for p in wl_sets]:
        return False
    admission = F.obj_field(F.status(wl), "admission")
    assigned = {a.get("name"): a.get("count") for a in F.object_list(admission, "podSetAssignments")}
    reserved = W.has_quota_reservation(wl)
    for mine, theirs in zip(job_sets, wl_sets, strict=True):
        if _quota_shape(mine) != _quota_shape(theirs) or mine.get("minCount") != theirs.get("minCount"):
            return False
        expected = theirs.get("count", 1)
        if reserved and not job.is_suspended() and assigned.get(theirs.get("name")) is not None:
            expected = assigned[theirs.get("name")]
        if mine.get("count", 1) != expected:
            return False
    return True
