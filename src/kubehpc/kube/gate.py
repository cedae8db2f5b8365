"""The scheduler of cluster mode: kubehpc's live scheduling loop plus Kueue's admission gate.

On an API server without Job suspend (Kubernetes 1.20) the pods of a queue-labelled Job exist
before its Workload is admitted (:mod:`kubehpc.kube.gatedjob`). This loop keeps such pods out of
the scheduling queue — *held* — until their Job carries the admitted annotation, and gives them
back when it does. Pods of Jobs without a queue label, and pods that belong to no Job, pass
straight through. A pod whose Job the loop has not seen yet is held too: the Job's event may
arrive after its pods', and a pod bound too early cannot be unbound.

It reuses :class:`kubehpc.controllers.scheduler.Scheduler` unchanged, watching Jobs beside its
own kinds; all gate state is touched only on the scheduler's own thread.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from kubehpc.controllers.scheduler import Scheduler, SchedulerOptions
from kubehpc.controllers.scheduling.cache import pod_key
from kubehpc.controllers.scheduling.informer import RELIST, Event, Informer
from kubehpc.kube.admitted import gate_open
from kubehpc.kube.binding import (
    BIND_FAILED,
    BackgroundEvents,
    PipelinedBinder,
    PipelinedWrites,
    PoolWrites,
    Writes,
)
from kubehpc.kube.pipeline import Pipeline
from kubehpc.kube.rest import RestClient
from kubehpc.kube.wire import BUSY_S
from kubehpc.store.client import Client

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

Obj = dict[str, Any]


def owner_job(pod: Obj) -> str:
    """The uid of the Job that controls ``pod`` ("" for none)."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if (
            ref.get("controller")
            and ref.get("kind") == "Job"
            and str(ref.get("apiVersion", "")).startswith("batch/")
        ):
            return str(ref.get("uid", ""))
    return ""


class GatedScheduler(Scheduler):
    def __init__(self, client: Client, options: SchedulerOptions | None = None, writers: int = 0) -> None:
        """``writers`` > 0: bindings and Events are written in the background
        (:mod:`kubehpc.kube.binding`), as a remote API server needs: pipelined on that many
        connections to a real API server, else by that many threads."""
        self._pool: ThreadPoolExecutor | None = None
        self._pipeline: Pipeline | None = None
        writes: Writes | None = None
        if writers > 0:
            if isinstance(client, RestClient):
                self._pipeline = Pipeline(client, connections=writers)
                writes = PipelinedWrites(client, self._pipeline)
            else:
                # Imported here: a real API server (the case that counts) never needs the pool.
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=writers, thread_name_prefix="bind")
                writes = PoolWrites(client, self._pool)
            names = (options or SchedulerOptions()).scheduler_names
            background = BackgroundEvents(client, writes, component=names[0] if names else "")
            client = cast(Client, background)
        super().__init__(client, options)
        if writes is not None:
            self.binder = PipelinedBinder(client, writes, self._events, background.scheduled)
        # Jobs are listed first, so pods listed after them find their gate known.
        self._informers.insert(0, Informer(client, "batch/v1", "Job", self._events))
        self.jobs: dict[str, bool] = {}  # Job uid -> gate open
        self.held: dict[str, dict[str, Obj]] = {}  # Job uid -> pod key -> pod as last seen
        self.coalesce_s = BUSY_S if writers > 0 else 0.0
        self._busy_at = 0.0

    def drain(self, timeout: float = 0.0) -> int:
        """As the loop's, but while events keep coming (the last ones less than ``coalesce_s``
        ago: a backlog's bindings coming back through the watch, one per pod) wait that long
        first and take what gathered in one go — woken for each event, the loop and the
        informers spend more CPU handing the interpreter lock over than applying them."""
        if self.coalesce_s > 0 and time.monotonic() - self._busy_at < self.coalesce_s:
            time.sleep(self.coalesce_s)
        handled = super().drain(timeout)
        if handled:
            self._busy_at = time.monotonic()
        return handled

    def held_count(self) -> int:
        return sum(len(pods) for pods in self.held.values())

    def stop(self) -> None:
        super().stop()
        if self._pipeline is not None:
            self._pipeline.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=False)

    def _apply(self, event: Event) -> None:
        if event.kind == BIND_FAILED:
            failed = event.object or {}
            pod, err = failed["pod"], failed["error"]
            if pod_key(pod) in self.cache.charges:
                self._forget(pod_key(pod), pod, err)
        elif event.kind == "Job":
            self._apply_job(event)
        elif event.kind == "Pod":
            self._apply_pod(event)
        else:
            super()._apply(event)

    # ----------------------------------------------------------------- jobs

    def _apply_job(self, event: Event) -> None:
        if event.type == RELIST:
            listed = {str(j["metadata"].get("uid", "")): gate_open(j) for j in event.objects}
            for uid in set(self.jobs) - set(listed):
                self._job_gone(uid)
            for uid, is_open in listed.items():
                self._set_gate(uid, is_open)
            return
        job = event.object or {}
        uid = str((job.get("metadata") or {}).get("uid", ""))
        if event.type == "DELETED":
            self._job_gone(uid)
        else:
            self._set_gate(uid, gate_open(job))

    def _set_gate(self, uid: str, is_open: bool) -> None:
        was_open = self.jobs.get(uid)
        self.jobs[uid] = is_open
        if is_open:
            for pod in self.held.pop(uid, {}).values():
                super()._apply(Event("Pod", "MODIFIED", pod))
        elif was_open:
            # Evicted: its pods still waiting go back behind the gate.
            for key, waiting in list(self.cache.waiting.items()):
                if owner_job(waiting.obj) == uid:
                    self.held.setdefault(uid, {})[key] = waiting.obj
                    self.cache.waiting.pop(key, None)
                    self.cache.parked.discard(key)

    def _job_gone(self, uid: str) -> None:
        self.jobs.pop(uid, None)
        self.held.pop(uid, None)  # the garbage collector deletes its pods

    # ----------------------------------------------------------------- pods

    def _holds(self, pod: Obj) -> str:
        """The Job uid that holds ``pod`` back, or "" when it may be scheduled."""
        if (pod.get("spec") or {}).get("nodeName") or pod_key(pod) in self.cache.charges:
            return ""  # bound, or our binding is on its way: account it as usual
        job = owner_job(pod)
        if not job or self.jobs.get(job, False):
            return ""
        return job

    def _release(self, key: str) -> None:
        for uid in [u for u, pods in self.held.items() if key in pods]:
            del self.held[uid][key]
            if not self.held[uid]:
                del self.held[uid]

    def _apply_pod(self, event: Event) -> None:
        if event.type == RELIST:
            passed = []
            self.held = {}
            for pod in event.objects:
                job = self._holds(pod)
                if job:
                    self.held.setdefault(job, {})[pod_key(pod)] = pod
                else:
                    passed.append(pod)
            super()._apply(Event("Pod", RELIST, objects=tuple(passed)))
            return
        pod = event.object or {}
        key = pod_key(pod)
        self._release(key)
        if event.type != "DELETED":
            job = self._holds(pod)
            if job:
                self.held.setdefault(job, {})[key] = pod
                self.cache.waiting.pop(key, None)
                self.cache.parked.discard(key)
                return
        super()._apply(event)
