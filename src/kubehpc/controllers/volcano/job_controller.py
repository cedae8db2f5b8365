"""The Volcano Job controller: for each batch.volcano.sh Job, its PodGroup, its plugins'
objects and its pods, and its phase as Volcano defines it.

Decisions live in :mod:`lifecycle` (the phase table) and :mod:`view` (defaults, checks,
policies); this module reads what is stored, turns what happened to the pods into at most one
policy action per pass, and writes the plan. Pod events are derived from what is observed (a
Failed pod, a task whose pods all succeeded, a pod deleted by someone else), each handled once.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any, Protocol

from kubehpc.api.errors import AlreadyExists, ApiError, Conflict, NotFound
from kubehpc.controllers.job.workqueue import Key, WorkQueue
from kubehpc.controllers.volcano import constants as c
from kubehpc.controllers.volcano import lifecycle, plugins
from kubehpc.controllers.volcano.podgroups import podgroup_for
from kubehpc.controllers.volcano.view import JobView, action_for
from kubehpc.controllers.watching import Followers
from kubehpc.store.client import Client, DeleteOptions, ListOptions, Propagation
from kubehpc.store.events import EventRecorder, record_quietly

Obj = dict[str, Any]
log = logging.getLogger(__name__)

COMPONENT = "vc-controller-manager"
SYNC_BATCH_S = 0.2
TRANSITION_RECHECK_S = 1.0


class EventSink(Protocol):
    def __call__(self, obj: Obj, event_type: str, reason: str, message: str, /) -> object: ...


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


def _exit_code(pod: Obj) -> int | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated and terminated.get("exitCode"):
            return int(terminated["exitCode"])
    return None


class VolcanoJobController:
    def __init__(
        self,
        client: Client,
        *,
        events: EventSink | None = None,
        resync_seconds: float = 30.0,
        namespace: str | None = None,
    ) -> None:
        self.client = client
        self.events: EventSink = events or EventRecorder(client, COMPONENT).record
        self.resync_seconds = resync_seconds
        self.namespace = namespace
        self.queue = WorkQueue()
        self._lock = threading.Lock()
        self._ours: set[str] = set()  # uids of pods this controller deleted
        # Per Job, the pod events already turned into actions (forgotten with the Job).
        self._handled: dict[Key, set[tuple[str, ...]]] = {}
        self._evicted: dict[Key, list[Obj]] = {}  # pods deleted by others, seen on the watch

    # --- one Job ---------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> float | None:
        for _ in range(4):
            try:
                return self._reconcile_once(namespace, name)
            except Conflict:
                continue
        return TRANSITION_RECHECK_S

    def _reconcile_once(self, namespace: str, name: str) -> float | None:
        try:
            job = self.client.get(c.JOB_API_VERSION, c.JOB_KIND, name, namespace)
        except NotFound:
            with self._lock:
                self._evicted.pop((namespace, name), None)
            self._handled.pop((namespace, name), None)
            return None
        view = JobView.of(job)
        if view.deleting:
            return None  # the garbage collector removes what the Job owns
        status: Obj = dict(job.get("status") or {})
        problems = view.problems()
        if problems:
            return self._hold_invalid(job, status, problems)
        pg = self._ensure_podgroup(job, view)
        pg_status = pg.get("status") or {}
        status = self._ensure_plugins(job, view, status)
        pods = self._pods(view)
        request, seen, gone = self._next_request(view, status, pods)
        p = lifecycle.plan(view, status, pods, str(pg_status.get("phase") or ""), request)
        try:
            self._apply(job, view, p, pods, request, pg_status)
        except Exception:
            # Not applied (a conflict, a failed write): the events stay to be handled next pass.
            with self._lock:
                self._evicted.setdefault(view.key, []).extend(gone)
            raise
        self._handled.setdefault(view.key, set()).update(seen)
        if p.phase in c.FINISHED or p.phase == c.ABORTED:
            self._complete_podgroup(view)
            if p.phase in c.FINISHED:
                left = self._ttl_left(job)
                if left is not None:
                    return left
        transitional = p.phase in (c.RESTARTING, c.ABORTING, c.COMPLETING, c.TERMINATING)
        return TRANSITION_RECHECK_S if (transitional or p.create or p.delete) else None

    def _hold_invalid(self, job: Obj, status: Obj, problems: list[str]) -> float | None:
        """As Volcano's webhook would refuse it: the Job waits, Pending, saying why."""
        message = "; ".join(problems)
        state = status.get("state") or {}
        if state.get("reason") == "InvalidJob" and state.get("message") == message:
            return None
        status["state"] = {
            "phase": c.PENDING,
            "reason": "InvalidJob",
            "message": message,
            "lastTransitionTime": now_rfc3339(),
        }
        self.client.update_status({**job, "status": status})
        self._event(job, "Warning", "InvalidJob", message)
        return None

    def _ensure_podgroup(self, job: Obj, view: JobView) -> Obj:
        try:
            return self.client.get(
                c.PODGROUP_API_VERSION, c.PODGROUP_KIND, view.podgroup_name, view.namespace
            )
        except NotFound:
            pass
        try:
            created = self.client.create(podgroup_for(job, view))
        except AlreadyExists:
            return self.client.get(
                c.PODGROUP_API_VERSION, c.PODGROUP_KIND, view.podgroup_name, view.namespace
            )
        return created

    def _ensure_plugins(self, job: Obj, view: JobView, status: Obj) -> Obj:
        controlled = dict(status.get("controlledResources") or {})
        missing = [n for n in view.plugins if controlled.get(f"plugin-{n}") != n]
        if not missing:
            return status
        for obj in plugins.job_objects(view, job):
            kind_plugin = {"ConfigMap": "svc", "Service": "svc", "Secret": "ssh"}[obj["kind"]]
            if kind_plugin not in missing:
                continue
            try:
                self.client.create(obj)
            except AlreadyExists:
                pass
        for n in missing:
            controlled[f"plugin-{n}"] = n
        return {**status, "controlledResources": controlled}

    def _pods(self, view: JobView) -> dict[str, Obj]:
        listed = self.client.list(
            c.POD_API_VERSION,
            "Pod",
            ListOptions(namespace=view.namespace, label_selector=f"{c.JOB_NAME_KEY}={view.name}"),
        )
        out: dict[str, Obj] = {}
        for pod in listed.items:
            refs = _meta(pod).get("ownerReferences") or ()
            if any(r.get("uid") == view.uid and r.get("kind") == c.JOB_KIND for r in refs):
                out[str(_meta(pod)["name"])] = pod
        return out

    # --- from what happened to the pods to one action ----------------------------------------

    def _next_request(
        self, view: JobView, status: Obj, pods: dict[str, Obj]
    ) -> tuple[lifecycle.Request, set[tuple[str, ...]], list[Obj]]:
        """The action for this pass, the events it handles, and the pods seen deleted on the
        watch that it used up."""
        version = int(status.get("version") or 0)
        found: list[tuple[tuple[str, ...], str, str, str, int | None]] = []  # (id, event, task, pod, code)
        for name, pod in sorted(pods.items()):
            meta = _meta(pod)
            uid = str(meta.get("uid") or "")
            if int((meta.get("annotations") or {}).get(c.JOB_VERSION_KEY) or 0) < version:
                continue  # from a run before the last restart
            task = lifecycle.task_of(pod)
            if lifecycle.pod_phase(pod) == "Failed":
                found.append(((uid, c.POD_FAILED), c.POD_FAILED, task, name, _exit_code(pod)))
            elif meta.get("deletionTimestamp") and uid not in self._ours and not lifecycle.finished(pod):
                found.append(((uid, c.POD_EVICTED), c.POD_EVICTED, task, name, None))
        with self._lock:
            gone = self._evicted.pop(view.key, [])
        for pod in gone:
            meta = _meta(pod)
            if int((meta.get("annotations") or {}).get(c.JOB_VERSION_KEY) or 0) < version:
                continue
            found.append(
                (
                    (str(meta.get("uid")), c.POD_EVICTED),
                    c.POD_EVICTED,
                    lifecycle.task_of(pod),
                    str(meta["name"]),
                    None,
                )
            )
        for spec in view.tasks:
            mine = [p for p in pods.values() if lifecycle.task_of(p) == spec.name]
            done = sum(1 for p in mine if lifecycle.pod_phase(p) == "Succeeded")
            failed = sum(1 for p in mine if lifecycle.pod_phase(p) == "Failed")
            if spec.replicas and done == spec.replicas:
                found.append(
                    (
                        (view.uid, str(version), spec.name, c.TASK_COMPLETED),
                        c.TASK_COMPLETED,
                        spec.name,
                        "",
                        None,
                    )
                )
            if spec.replicas and failed > spec.replicas - spec.min_available:
                found.append(
                    ((view.uid, str(version), spec.name, c.TASK_FAILED), c.TASK_FAILED, spec.name, "", None)
                )
        chosen = lifecycle.Request()
        handled = self._handled.get(view.key, set())
        seen: set[tuple[str, ...]] = set()
        for ident, event, task_name, pod_name, code in found:
            if ident in handled or ident in seen:
                continue
            seen.add(ident)
            action = action_for(view, event, task_name, code)
            if action != c.SYNC_JOB and chosen.action == c.SYNC_JOB:
                what = f"pod {pod_name}" if pod_name else f"task {task_name}"
                code_text = f", exit code {code}" if code is not None else ""
                chosen = lifecycle.Request(action, event, task_name, pod_name, f"{event}: {what}{code_text}")
        return chosen, seen, gone

    # --- writing the plan --------------------------------------------------------------------

    def _apply(
        self,
        job: Obj,
        view: JobView,
        p: lifecycle.Plan,
        pods: dict[str, Obj],
        request: lifecycle.Request,
        pg_status: Obj,
    ) -> None:
        status = dict(p.status)
        state = dict(status.get("state") or {})
        reason, message = p.reason, p.message
        if p.phase == c.PENDING and str(pg_status.get("phase") or c.PG_PENDING) == c.PG_PENDING:
            # The gang waits for its queue: say why, in the queue's words.
            for cond in pg_status.get("conditions") or ():
                if cond.get("type") == "Unschedulable" and cond.get("status") == "True":
                    reason, message = (
                        str(cond.get("reason") or "Unschedulable"),
                        str(cond.get("message") or ""),
                    )
        if p.phase_changed:
            stamp = now_rfc3339()
            state = {"phase": p.phase, "lastTransitionTime": stamp}
            conditions = list(status.get("conditions") or [])
            conditions.append({"status": p.phase, "lastTransitionTime": stamp})
            status["conditions"] = conditions[-16:]
        if reason:
            state["reason"] = reason
        else:
            state.pop("reason", None)
        if message:
            state["message"] = message
        else:
            state.pop("message", None)
        status["state"] = state
        # The status first: a phase change (with retryCount and version) is on record before
        # any pod goes, so a refused write leaves the pods, and the event they show, as they
        # were; a later pass in Restarting/Aborting/... deletes again what is left.
        stored = job
        if status != (job.get("status") or {}):
            stored = self.client.update_status({**job, "status": status})
        if request.action != c.SYNC_JOB:
            self._event(stored, "Normal", request.action, request.reason or request.action)
        if p.phase_changed:
            self._event(stored, "Normal", p.phase, message or f"job is {p.phase}")

        for name in p.delete:
            uid = str(_meta(pods[name]).get("uid") or "")
            with self._lock:
                self._ours.add(uid)
            try:
                self.client.delete(c.POD_API_VERSION, "Pod", name, view.namespace)
            except NotFound:
                continue
            except ApiError as err:
                self._event(job, "Warning", "FailedDelete", f"Error deleting pod {name}: {err}")
        version = int(p.status.get("version") or 0)
        retry = int(p.status.get("retryCount") or 0)
        for task_name, index in p.create:
            task = view.task(task_name)
            if task is None:
                continue
            pod = plugins.build_pod(view, job, task, index, version, retry)
            try:
                self.client.create(pod)
            except AlreadyExists:
                continue  # the old pod of that name is still going away
            except ApiError as err:
                self._event(
                    job, "Warning", "FailedCreate", f"Error creating pod {pod['metadata']['name']}: {err}"
                )
                break

    def _ttl_left(self, job: Obj) -> float | None:
        """Seconds until a finished Job's ttlSecondsAfterFinished runs out; the Job (and,
        through the garbage collector, all it owns) is deleted when it has."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return None
        fresh = self.client.get(
            c.JOB_API_VERSION, c.JOB_KIND, _meta(job)["name"], _meta(job).get("namespace")
        )
        stamp = ((fresh.get("status") or {}).get("state") or {}).get("lastTransitionTime")
        if not stamp:
            return None
        finished_at = datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        left = float(ttl) - (datetime.now(UTC) - finished_at).total_seconds()
        if left > 0:
            return left
        uid = str(_meta(fresh).get("uid") or "")
        try:
            self.client.delete(
                c.JOB_API_VERSION,
                c.JOB_KIND,
                str(_meta(fresh)["name"]),
                str(_meta(fresh).get("namespace") or "default"),
                DeleteOptions(propagation_policy=Propagation.FOREGROUND, preconditions_uid=uid),
            )
        except (NotFound, Conflict):
            pass
        return None

    def _complete_podgroup(self, view: JobView) -> None:
        try:
            pg = self.client.get(c.PODGROUP_API_VERSION, c.PODGROUP_KIND, view.podgroup_name, view.namespace)
        except NotFound:
            return
        status = dict(pg.get("status") or {})
        if status.get("phase") == c.PG_COMPLETED:
            return
        status["phase"] = c.PG_COMPLETED
        self.client.update({**pg, "status": status})  # no status subresource on PodGroups

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        record_quietly(self.events, obj, type_, reason, message)

    # --- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        self.queue = WorkQueue()
        followers = Followers(self.client, self.namespace, read_only=True)  # handlers pick keys
        followers.start(stop, c.JOB_API_VERSION, c.JOB_KIND, self._on_job)
        # The pods it made carry their job's name (Volcano's handlers skip pods without it):
        # the store sends no others.
        followers.start(stop, c.POD_API_VERSION, "Pod", self._on_pod, c.JOB_NAME_KEY)
        followers.start(stop, c.PODGROUP_API_VERSION, c.PODGROUP_KIND, self._on_podgroup)
        next_resync = 0.0
        while not stop.is_set():
            if time.monotonic() >= next_resync:
                self._enqueue_all()
                next_resync = time.monotonic() + self.resync_seconds
            key = self.queue.get(timeout_s=0.5)
            if key is None:
                continue
            try:
                requeue = self.reconcile(*key)
            except Exception:
                log.exception("reconciling Volcano Job %s/%s failed; retrying", *key)
                self.queue.add(key, 1.0)
                continue
            if requeue is not None:
                self.queue.add(key, requeue)
        self.queue.close()
        followers.stop()

    def _enqueue_all(self) -> None:
        try:
            jobs = self.client.list(c.JOB_API_VERSION, c.JOB_KIND, ListOptions(namespace=self.namespace))
        except ApiError:
            log.exception("listing Volcano Jobs failed")
            return
        for job in jobs.items:
            self.queue.add((str(_meta(job).get("namespace") or "default"), str(_meta(job)["name"])))

    def _on_job(self, event_type: str, job: Obj) -> None:
        key = (str(_meta(job).get("namespace") or "default"), str(_meta(job)["name"]))
        self.queue.add(key, SYNC_BATCH_S if event_type == "MODIFIED" else 0.0)

    def _owner_key(self, obj: Obj) -> Key | None:
        for ref in _meta(obj).get("ownerReferences") or ():
            if ref.get("kind") == c.JOB_KIND and str(ref.get("apiVersion", "")).startswith(
                "batch.volcano.sh/"
            ):
                return (str(_meta(obj).get("namespace") or "default"), str(ref.get("name")))
        return None

    def _on_pod(self, event_type: str, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is None:
            return
        if event_type == "DELETED":
            uid = str(_meta(pod).get("uid") or "")
            with self._lock:
                ours = uid in self._ours
                self._ours.discard(uid)
                if not ours and not lifecycle.finished(pod):
                    self._evicted.setdefault(key, []).append(pod)
        self.queue.add(key, SYNC_BATCH_S)

    def _on_podgroup(self, event_type: str, pg: Obj) -> None:
        key = self._owner_key(pg)
        if key is not None:
            self.queue.add(key, 0.0)


__all__ = ["COMPONENT", "VolcanoJobController"]
