"""The batch/v1 Job controller: watches Jobs and Pods through a Client and applies plans.

All decisions live in :func:`kubehpc.controllers.job.plan.plan_job`; this module only reads
the current state, applies the plan's actions in their safe order, and re-reads until a pass
has nothing left to do. Everything is read fresh from the Client on each pass (no informer
cache), so there are no "expectations" to track: what a pass sees is what is stored.

What the controller does remember is which versions it has already found nothing to do for:
the resourceVersion of the Job and of the pod list its last idle pass read. A watch event for
a version no newer than those (the echo of the controller's own status write or pod create,
which the pass after the write already read) cannot change the plan, so it queues nothing;
nor can the scheduler binding a pod that pass saw unbound (``_bound_since_planned``).
Anything else newer, from anyone, queues the Job as before.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from mypy_extensions import mypyc_attr

from kubehpc.api import fields as F
from kubehpc.api.errors import AlreadyExists, ApiError, Conflict, NotFound
from kubehpc.controllers.job import constants as c
from kubehpc.controllers.job import pods as P
from kubehpc.controllers.job.actions import JobEvent, JobPlan
from kubehpc.controllers.job.backoff import BackoffPolicy, BackoffRecord
from kubehpc.controllers.job.clock import Clock, RealClock
from kubehpc.controllers.job.plan import plan_job
from kubehpc.controllers.job.spec import JobSpec
from kubehpc.controllers.job.workqueue import Key, WorkQueue, work_until_stopped
from kubehpc.controllers.watching import Followers
from kubehpc.store.client import (
    HANDED_OVER,
    Client,
    DeleteOptions,
    ListOptions,
    PatchType,
    Propagation,
    resource_version_number,
)
from kubehpc.store.events import EventRecorder

Obj = dict[str, Any]
log = logging.getLogger(__name__)

COMPONENT = "job-controller"
API_BACKOFF_BASE_S = 1.0
API_BACKOFF_MAX_S = 60.0
# As Kubernetes' syncJobBatchPeriod (1 s there): pod events and the Job's own status updates
# are batched into one sync per period. Without it every pod event of a big Job re-lists (and
# decodes) all of its pods: quadratic work that made a 1,000-pod Job CPU-bound.
SYNC_BATCH_S = 0.5
# Every Job is synced again this often, so a lost event is only ever late. Watches here lose
# nothing (a watch that ends is followed by a fresh list), so this is a safety net, not a
# clock: time-driven work asks for its own requeue. Each resync costs a sync of every Job,
# which at 15,000 Jobs and every 30 s was a third of the controller's syncs. (Kubernetes'
# controller manager resyncs its informers every 12 to 24 hours.)
RESYNC_S = 300.0


class EventSink(Protocol):
    """Records a v1 Event about ``obj`` (store/events.py's EventRecorder fits)."""

    def __call__(self, obj: Obj, event_type: str, reason: str, message: str, /) -> object: ...


# Subclassed outside the compiled modules: tests that stop it between writes (test_job_restart.py).
@mypyc_attr(allow_interpreted_subclasses=True)
class JobController:
    def __init__(
        self,
        client: Client,
        *,
        clock: Clock | None = None,
        events: EventSink | None = None,
        backoff: BackoffPolicy | None = None,
        max_pods_per_sync: int = 500,
        max_passes: int = 8,
        resync_seconds: float = RESYNC_S,
        namespace: str | None = None,
    ) -> None:
        self.client = client
        self.clock = clock or RealClock()
        self.events: EventSink = events or EventRecorder(client, COMPONENT).record
        self.backoff = backoff or BackoffPolicy()
        self.max_pods_per_sync = max_pods_per_sync
        self.max_passes = max_passes
        self.resync_seconds = resync_seconds
        self.namespace = namespace
        self.queue = WorkQueue()
        self._api_failures: dict[Key, int] = {}
        self._backoff: dict[Key, BackoffRecord] = {}
        # Key -> (Job resourceVersion, pod list resourceVersion) its last idle pass read.
        self._planned: dict[Key, tuple[int, int]] = {}
        # Pod uid -> the last version seen of each pod of a Job not bound yet (_bound_since_planned).
        self._unbound: dict[str, Obj] = {}

    # --- one Job ---------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> float | None:
        """Bring one Job towards its desired state. Returns after how many seconds (of the
        controller's clock) it wants to look again (back-off, deadline, TTL), or None."""
        requeue: float | None = None
        for _ in range(self.max_passes):
            try:
                # Read only: planning copies what it changes (status, pod templates).
                job = self.client.get(c.JOB_API_VERSION, c.JOB_KIND, name, namespace, read_only=True)
            except NotFound:
                self._backoff.pop((namespace, name), None)
                self._planned.pop((namespace, name), None)
                self._release_orphans(namespace, name)
                return None
            spec = JobSpec.of(job)
            pods, pods_rv = self._owned_pods(spec)
            key = (namespace, name)
            plan = plan_job(
                job,
                pods,
                self.clock.now(),
                self.backoff,
                self.max_pods_per_sync,
                self._backoff.get(key),
                spec,
            )
            requeue = plan.requeue_after
            if plan.idle:
                self._remember_backoff(key, plan)
                self._api_failures.pop(key, None)
                self._remember_planned(key, job, pods_rv)
                return requeue
            self._planned.pop(key, None)
            try:
                failures = self._apply(job, spec, plan)
            except Conflict:
                continue  # someone else wrote the Job meanwhile: plan again from what is stored
            except NotFound:
                continue
            if failures:
                # Pod creates or deletes were refused (quota, invalid template, ...): retry with
                # a growing delay instead of spinning, as the real controller's rate limiter.
                n = self._api_failures.get(key, 0) + 1
                self._api_failures[key] = n
                return float(min(API_BACKOFF_BASE_S * 2.0 ** (n - 1), API_BACKOFF_MAX_S))
        # Still busy after max_passes (a big Job): come back at once.
        return 0.0

    def _remember_backoff(self, key: Key, plan: JobPlan) -> None:
        if plan.backoff_record is None:
            self._backoff.pop(key, None)  # finished: nothing more to back off from
        else:
            self._backoff[key] = plan.backoff_record

    def _owned_pods(self, spec: JobSpec) -> tuple[list[Obj], str]:
        """The Job's pods, and the resourceVersion of the list they were read in."""
        selector = ",".join(f"{k}={v}" for k, v in sorted(spec.selector_labels.items()))
        # Read only: planning reads the pods and builds new ones from the Job's template.
        options = ListOptions(namespace=spec.namespace, label_selector=selector, read_only=True)
        listed = self.client.list(c.POD_API_VERSION, c.POD_KIND, options)
        return [p for p in listed.items if P.is_owned_by(p, spec.uid)], listed.resource_version

    # --- versions already planned ----------------------------------------------------------

    def _remember_planned(self, key: Key, job: Obj, pods_rv: str) -> None:
        job_rv = resource_version_number(F.metadata(job).get("resourceVersion"))
        list_rv = resource_version_number(pods_rv)
        if job_rv is None or list_rv is None:
            self._planned.pop(key, None)  # versions we cannot compare: never skip
        else:
            self._planned[key] = (job_rv, list_rv)

    def _already_planned(self, key: Key, obj: Obj, which: int) -> bool:
        """Whether the last idle pass of ``key`` read this version of ``obj`` or a newer one
        (``which``: 0 compares with the Job's version, 1 with the pod list's)."""
        planned = self._planned.get(key)
        if planned is None:
            return False
        rv = resource_version_number(F.metadata(obj).get("resourceVersion"))
        return rv is not None and rv <= planned[which]

    def _bound_since_planned(self, key: Key, event_type: str, pod: Obj) -> bool:
        """Whether this event only binds a pod that the last idle pass of ``key`` saw unbound.
        Such an event cannot make that pass's plan busy: of the pods, a plan reads the node
        only to choose which to delete first, and an idle plan deletes none (how many to
        delete does not depend on where they run). The versions of pods not bound yet are
        kept (shared, read only) to compare with."""
        uid = P.uid(pod)
        if event_type == "DELETED":
            self._unbound.pop(uid, None)
            return False
        if not F.spec(pod).get("nodeName"):
            self._unbound[uid] = pod
            return False
        before = self._unbound.pop(uid, None)
        return (
            before is not None and self._already_planned(key, before, 1) and P.only_bound_since(before, pod)
        )

    def _forget_planned(self, keys: list[Key]) -> None:
        # A failed commit takes back writes (and their resourceVersions) a pass may have read.
        for key in keys:
            self._planned.pop(key, None)

    def _apply(self, job: Obj, spec: JobSpec, plan: JobPlan) -> int:
        """Apply the plan in its safe order; returns how many pod writes were refused."""
        namespace = spec.namespace
        refused = 0
        for deletion in plan.delete:
            if deletion.remove_finalizer:
                self._strip_finalizer(namespace, deletion.name)
            try:
                self.client.delete(c.POD_API_VERSION, c.POD_KIND, deletion.name, namespace)
            except NotFound:
                continue
            except ApiError as err:
                refused += 1
                self._event(job, JobEvent(c.WARNING, c.EVENT_FAILED_DELETE, f"Error deleting: {err}"))
                continue
            self._event(job, JobEvent(c.NORMAL, c.EVENT_SUCCESSFUL_DELETE, f"Deleted pod: {deletion.name}"))
        not_created = 0
        for position, pod in enumerate(plan.create):
            try:
                created = self.client.create(pod, HANDED_OVER)  # built for it (build_pod); read for its name
            except AlreadyExists:
                continue
            except ApiError as err:
                # As the real controller's slow start: after a failure, stop creating this pass.
                refused += 1
                not_created = len(plan.create) - position
                self._event(job, JobEvent(c.WARNING, c.EVENT_FAILED_CREATE, f"Error creating: {err}"))
                break
            self._event(job, JobEvent(c.NORMAL, c.EVENT_SUCCESSFUL_CREATE, f"Created pod: {P.name(created)}"))
        stored = job
        if plan.status is not None:
            status = plan.status
            if not_created:
                status = {**status, "active": max(0, int(status.get("active") or 0) - not_created)}
            # The plan's own status (a copy it changed); the result is read only: the events
            # below name it.
            stored = self.client.update_status({**job, "status": status}, HANDED_OVER)
        # The failures this pass saw are now recorded in the status: remember them, as the
        # real controller does right after its first status flush.
        self._remember_backoff(spec.key, plan)
        for pod_name in plan.remove_finalizers:
            self._strip_finalizer(namespace, pod_name)
        for event in plan.events:
            self._event(stored, event)
        if plan.delete_job:
            # As Kubernetes' TTL-after-finished controller: foreground cascading deletion, and
            # only of the Job whose TTL was checked (UID precondition).
            uid = str(F.metadata(job).get("uid", ""))
            self.client.delete(
                c.JOB_API_VERSION,
                c.JOB_KIND,
                spec.name,
                namespace,
                DeleteOptions(propagation_policy=Propagation.FOREGROUND, preconditions_uid=uid),
            )
        return refused

    def _strip_finalizer(self, namespace: str, pod_name: str) -> None:
        """Remove the tracking finalizer, guarded by the pod's resourceVersion."""
        for _ in range(5):
            try:
                pod = self.client.get(c.POD_API_VERSION, c.POD_KIND, pod_name, namespace)
            except NotFound:
                return
            finalizers = list(P.meta(pod).get("finalizers") or [])
            if c.TRACKING_FINALIZER not in finalizers:
                return
            finalizers.remove(c.TRACKING_FINALIZER)
            patch = {
                "metadata": {"finalizers": finalizers, "resourceVersion": P.meta(pod).get("resourceVersion")}
            }
            try:
                self.client.patch(c.POD_API_VERSION, c.POD_KIND, pod_name, patch, PatchType.MERGE, namespace)
                return
            except NotFound:
                return
            except Conflict:
                continue
        raise Conflict(f"could not remove the job-tracking finalizer of pod {namespace}/{pod_name}")

    def _release_orphans(self, namespace: str, job_name: str) -> None:
        """Pods of a Job that is gone keep no tracking finalizer (else they never go away)."""
        listed = self.client.list(
            c.POD_API_VERSION,
            c.POD_KIND,
            ListOptions(namespace=namespace, label_selector=f"{c.JOB_NAME_LABEL}={job_name}"),
        )
        for pod in listed.items:
            ref = P.controller_ref(pod)
            if not P.has_tracking_finalizer(pod) or not ref or ref.get("kind") != c.JOB_KIND:
                continue
            if ref.get("name") == job_name:
                self._strip_finalizer(namespace, P.name(pod))

    def _event(self, job: Obj, event: JobEvent) -> None:
        try:
            self.events(job, event.type, event.reason, event.message)
        except Exception:  # events are best effort, as in Kubernetes
            log.debug("recording event %s failed", event.reason, exc_info=True)

    # --- the loop --------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Watch Jobs and Pods and reconcile until ``stop`` is set."""
        self.queue = WorkQueue()
        followers = Followers(self.client, self.namespace, read_only=True)  # handlers pick keys
        followers.start(stop, c.JOB_API_VERSION, c.JOB_KIND, self._on_job)
        followers.start(stop, c.POD_API_VERSION, c.POD_KIND, self._on_pod)
        work_until_stopped(
            stop,
            self.client,
            self.queue,
            self._enqueue_all,
            self.resync_seconds,
            self._work,
            self._forget_planned,
        )
        self.queue.close()
        followers.stop()

    def _work(self, key: Key) -> None:
        try:
            requeue = self.reconcile(*key)
        except Exception:
            log.exception("reconciling Job %s/%s failed; retrying", *key)
            self._planned.pop(key, None)
            self.queue.add(key, 1.0)
            return
        if requeue is not None:
            self.queue.add(key, self.clock.wall_seconds(requeue))

    def _enqueue_all(self) -> None:
        # Forgetting costs only skips; a pod deleted while a watch restarted is never seen
        # deleted, and must not be kept for ever.
        self._unbound.clear()
        try:
            # Read only: only each Job's key is taken.
            options = ListOptions(namespace=self.namespace, read_only=True)
            jobs = self.client.list(c.JOB_API_VERSION, c.JOB_KIND, options)
        except ApiError:
            log.exception("listing Jobs failed")
            return
        for job in jobs.items:
            self.queue.add(_key_of(job))

    def _on_job(self, event_type: str, job: Obj) -> None:
        key = _key_of(job)
        if event_type == "MODIFIED" and self._already_planned(key, job, 0):
            return  # the echo of our own write, read by the pass that followed it
        # A new Job is synced at once; an update (mostly our own status writes) is batched.
        self.queue.add(key, self._batch_s() if event_type == "MODIFIED" else 0.0)

    def _batch_s(self) -> float:
        return self.clock.wall_seconds(SYNC_BATCH_S)

    def _on_pod(self, event_type: str, pod: Obj) -> None:
        namespace = str(P.meta(pod).get("namespace") or "default")
        ref = P.controller_ref(pod)
        is_job_pod = bool(
            ref and ref.get("kind") == c.JOB_KIND and ref.get("apiVersion", "").startswith("batch/")
        )
        if ref and is_job_pod:
            key = (namespace, str(ref.get("name")))
            # Kept up to date on every event of the pod, skipped or not.
            only_bound = self._bound_since_planned(key, event_type, pod)
            if not only_bound and not self._already_planned(key, pod, 1):
                self.queue.add(key, self._batch_s())
        if not P.has_tracking_finalizer(pod):
            return
        try:
            if not is_job_pod:
                # Released by its Job (or by the garbage collector): nothing will count it now.
                self._strip_finalizer(namespace, P.name(pod))
            elif P.deleting(pod) and ref and not self._owner_exists(namespace, ref):
                # Being deleted after its Job went (perhaps replaced by a new Job of that name).
                self._strip_finalizer(namespace, P.name(pod))
        except ApiError:
            log.debug("releasing orphan pod %s failed", P.name(pod), exc_info=True)

    def _owner_exists(self, namespace: str, ref: Obj) -> bool:
        try:
            job = self.client.get(c.JOB_API_VERSION, c.JOB_KIND, str(ref.get("name")), namespace)
        except NotFound:
            return False
        return bool(F.metadata(job).get("uid") == ref.get("uid"))


def _key_of(job: Obj) -> Key:
    meta = F.metadata(job)
    return (str(meta.get("namespace") or "default"), str(meta.get("name", "")))


__all__ = ["COMPONENT", "EventSink", "JobController", "Key"]
