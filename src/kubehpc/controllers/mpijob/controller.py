"""The MPIJob controller: the MPI Operator's sync loop over the Client protocol.

Level-triggered, one pass per job in the operator's order (``syncHandler``):

1. a new job gets the ``Created`` condition;
2. a finished job (completion time set) only cleans up its workers per ``cleanPodPolicy``;
3. otherwise the Service, the ConfigMap (hostfile; discover_hosts.sh follows running workers)
   and the SSH Secret exist; unless suspended, the Volcano PodGroup (when the job has a
   ``schedulingPolicy``: its pods are then one gang) and the worker pods exist (extra ones beyond
   ``replicas`` are deleted); the launcher Job is created at startup or, with
   ``launcherCreationPolicy: WaitForWorkersReady``, once every worker is Ready;
4. the launcher's suspension follows the job's; a suspended job's workers are deleted;
5. status: replica counts, ``Running`` when the launcher and every worker run, ``Succeeded``
   / ``Failed`` from the launcher Job (an evicted worker fails the job), ``Suspended`` and
   its resumption.

On the embedded cluster the launcher's MPI reaches workers through the launch agent
(:class:`~kubehpc.controllers.mpijob.objects.Embedded`); a launcher program that is not on
the host (``mpirun`` not installed) fails the job at once with a condition and an event that
say so, instead of a launcher crash-looping on "executable file not found".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubehpc.api.errors import AlreadyExists, ApiError, Conflict, NotFound
from kubehpc.api.kinds.kubeflow.mpijob import validation_errors
from kubehpc.controllers.job.workqueue import Key, WorkQueue
from kubehpc.controllers.mpijob import objects as O
from kubehpc.controllers.mpijob import status as S
from kubehpc.controllers.watching import Followers
from kubehpc.store.client import Client, ListOptions
from kubehpc.store.events import EventRecorder, record_quietly

log = logging.getLogger(__name__)
Obj = dict[str, Any]
COMPONENT = "mpi-job-controller"
EventSink = Callable[[Obj, str, str, str], Any]


@dataclass(frozen=True)
class HostCheck:
    """Whether a program exists on the host (embedded cluster only): ``shutil.which``-like."""

    which: Callable[[str, str], str | None]
    path: str


class MPIJobController:
    def __init__(
        self,
        client: Client,
        *,
        embedded: O.Embedded | None = None,
        host: HostCheck | None = None,
        events: EventSink | None = None,
        clock: Callable[[], float] = time.time,
        resync_seconds: float = 30.0,
    ) -> None:
        self.client = client
        self.embedded = embedded
        self.host = host
        self.events: EventSink = events or EventRecorder(client, COMPONENT).record
        self.clock = clock
        self.resync_seconds = resync_seconds
        self.queue = WorkQueue()

    # --- one job -----------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> None:
        try:
            stored = self.client.get(O.API_VERSION, O.KIND, name, namespace)
        except NotFound:
            return
        if stored["metadata"].get("deletionTimestamp"):
            return
        job = O.with_defaults(stored)
        errors = validation_errors(job)
        if errors:
            # As the operator: reported, not requeued (a fixed spec is a new event).
            msg = f"Found validation errors: [{', '.join(errors)}]"[:1024]
            self._event(stored, "Warning", S.REASON_VALIDATION, msg)
            return
        status: Obj = job.setdefault("status", {})
        before = _comparable(stored.get("status") or {})
        now = S.rfc3339(self.clock())
        if not status.get("conditions"):
            msg = f"MPIJob {namespace}/{name} is created."
            S.set_condition(status, "Created", "True", S.REASON_CREATED, msg, now)
            self._event(stored, "Normal", S.REASON_CREATED, msg)
        suspended = bool(job["spec"]["runPolicy"].get("suspend"))
        if S.is_finished(status) and status.get("completionTime"):
            if job["spec"]["runPolicy"].get("cleanPodPolicy") in ("All", "Running"):
                self._clean_workers(job)
                self._delete_pod_group(job)
                S.init_replica(status, O.WORKER)["active"] = 0
            self._write_status(stored, status, before)
            return
        if not status.get("startTime") and not suspended:
            status["startTime"] = now
        launcher = self._get(("batch/v1", "Job"), namespace, O.launcher_name(job))
        workers: list[Obj] = []
        done = launcher is not None and S.job_finished(launcher)
        if not done:
            self._ensure(O.service(job))
            running = [p["metadata"]["name"] for p in self._worker_pods(job) if _phase(p) == "Running"]
            self._ensure_config_map(O.config_map(job, running))
            self._ensure(None, lambda: O.ssh_secret(job), ("v1", "Secret"), namespace, f"{name}-ssh")
            if not suspended:
                if O.gang_scheduled(job):
                    self._ensure(O.pod_group(job))
                workers = self._ensure_workers(job)
            if launcher is None:
                missing = self._missing_launcher_program(job)
                if missing:
                    self._fail_missing_program(job, stored, status, missing, now, before)
                    return
                ready = sum(1 for w in workers if _ready(w))
                if job["spec"]["launcherCreationPolicy"] == "AtStartup" or ready == len(workers):
                    launcher = self._create_launcher(job, stored)
        if launcher is not None and bool(launcher["spec"].get("suspend")) != suspended:
            launcher["spec"]["suspend"] = suspended
            launcher = self.client.update(launcher)
        if suspended:
            self._clean_workers(job)
            self._delete_pod_group(job)
            S.init_replica(status, O.WORKER)["active"] = 0
        self._update_status(job, stored, status, launcher, workers, now)
        self._write_status(stored, status, before)

    # --- children ----------------------------------------------------------------------------

    def _get(self, av_kind: tuple[str, str], namespace: str, name: str) -> Obj | None:
        try:
            return self.client.get(av_kind[0], av_kind[1], name, namespace)
        except NotFound:
            return None

    def _ensure(
        self,
        obj: Obj | None,
        make: Callable[[], Obj] | None = None,
        av_kind: tuple[str, str] | None = None,
        namespace: str = "",
        name: str = "",
    ) -> Obj | None:
        """Get the object, creating it when missing (``make`` builds it lazily: key generation
        is not free)."""
        if obj is not None:
            av_kind = (obj["apiVersion"], obj["kind"])
            namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        assert av_kind is not None
        existing = self._get(av_kind, namespace, name)
        if existing is not None:
            return existing
        try:
            return self.client.create(obj if obj is not None else make())  # type: ignore[misc]
        except AlreadyExists:
            return self._get(av_kind, namespace, name)

    def _ensure_config_map(self, wanted: Obj) -> None:
        existing = self._ensure(wanted)
        if existing is not None and existing.get("data") != wanted["data"]:
            existing["data"] = wanted["data"]
            self.client.update(existing)

    def _worker_pods(self, job: Obj) -> list[Obj]:
        selector = ",".join(f"{k}={v}" for k, v in O.labels(job, "worker").items())
        pods = self.client.list(
            "v1", "Pod", ListOptions(namespace=O.namespace(job), label_selector=selector)
        ).items
        uid = job["metadata"].get("uid")
        return [p for p in pods if _owned_by(p, uid)]

    def _ensure_workers(self, job: Obj) -> list[Obj]:
        replicas = O.worker_replicas(job)
        pods = {p["metadata"]["name"]: p for p in self._worker_pods(job)}
        for existing in pods.values():  # scaled down
            index = (existing["metadata"].get("labels") or {}).get(O.REPLICA_INDEX_LABEL, "")
            if index.isdigit() and int(index) >= replicas:
                self._delete("Pod", O.namespace(job), existing["metadata"]["name"])
        out = []
        for i in range(replicas):
            pod: Obj | None = pods.get(O.worker_name(job, i))
            if pod is None:
                try:
                    pod = self.client.create(O.worker_pod(job, i, self.embedded))
                except AlreadyExists:
                    pod = self._get(("v1", "Pod"), O.namespace(job), O.worker_name(job, i))
                except ApiError as err:
                    self._event(job, "Warning", S.REASON_FAILED, f"worker pod created failed: {err}")
                    raise
            if pod is not None:
                out.append(pod)
        return out

    def _create_launcher(self, job: Obj, stored: Obj) -> Obj | None:
        try:
            return self.client.create(O.launcher_job(job, self.embedded))
        except AlreadyExists:
            return self._get(("batch/v1", "Job"), O.namespace(job), O.launcher_name(job))
        except ApiError as err:
            self._event(stored, "Warning", S.REASON_FAILED, f"launcher pod created failed: {err}")
            raise

    def _clean_workers(self, job: Obj) -> None:
        """``deleteWorkerPods``: with ``Running``, pods that already ended are kept."""
        policy = job["spec"]["runPolicy"].get("cleanPodPolicy")
        for pod in self._worker_pods(job):
            if policy == "Running" and _phase(pod) not in ("Running", "Pending"):
                continue
            if not pod["metadata"].get("deletionTimestamp"):
                self._delete("Pod", O.namespace(job), pod["metadata"]["name"])

    def _delete(self, kind: str, namespace: str, name: str, api_version: str = "v1") -> None:
        try:
            self.client.delete(api_version, kind, name, namespace)
        except NotFound:
            pass

    def _delete_pod_group(self, job: Obj) -> None:
        if O.gang_scheduled(job):
            self._delete("PodGroup", O.namespace(job), O.name(job), O.PODGROUP_API_VERSION)

    # --- a launcher program missing on the host ----------------------------------------------

    def _missing_launcher_program(self, job: Obj) -> str:
        if self.host is None:
            return ""
        argv = O.launcher_argv(job)
        # Only a bare command name is looked up: a path may be relative to the working directory.
        if not argv or "/" in argv[0]:
            return ""
        return "" if self.host.which(argv[0], self.host.path) is not None else argv[0]

    def _fail_missing_program(
        self, job: Obj, stored: Obj, status: Obj, program: str, now: str, before: Any
    ) -> None:
        msg = (
            f"the launcher's command {program!r} is not installed on this machine: the embedded "
            f"cluster runs containers as host processes (install Open MPI, e.g. the openmpi-bin package)"
        )
        S.set_condition(status, "Failed", "True", S.REASON_PROGRAM_MISSING, msg, now)
        status["completionTime"] = now
        self._event(stored, "Warning", S.REASON_PROGRAM_MISSING, msg)
        if job["spec"]["runPolicy"].get("cleanPodPolicy") in ("All", "Running"):
            self._clean_workers(job)
        self._write_status(stored, status, before)

    # --- status ------------------------------------------------------------------------------

    def _launcher_pods(self, launcher: Obj) -> list[Obj]:
        uid = launcher["metadata"].get("uid")
        pods = self.client.list("v1", "Pod", ListOptions(namespace=launcher["metadata"]["namespace"])).items
        return [p for p in pods if _owned_by(p, uid)]

    def _update_status(
        self, job: Obj, stored: Obj, status: Obj, launcher: Obj | None, workers: list[Obj], now: str
    ) -> None:
        namespace, name = O.namespace(job), O.name(job)
        suspended = bool(job["spec"]["runPolicy"].get("suspend"))
        if suspended and S.set_condition(
            status, "Suspended", "True", S.REASON_SUSPENDED, "MPIJob suspended", now
        ):
            self._event(stored, "Normal", S.REASON_SUSPENDED, "MPIJob suspended")
        elif (
            not suspended
            and S.get_condition(status, "Suspended") is not None
            and S.set_condition(status, "Suspended", "False", S.REASON_RESUMED, "MPIJob resumed", now)
        ):
            self._event(stored, "Normal", S.REASON_RESUMED, "MPIJob resumed")
            status["startTime"] = now
        launcher_running = 0
        if launcher is not None:
            launcher_pods = self._launcher_pods(launcher)
            launcher_running = sum(1 for p in launcher_pods if _phase(p) == "Running")
            replica = S.init_replica(status, O.LAUNCHER)
            replica["failed"] = int((launcher.get("status") or {}).get("failed") or 0)
            if S.job_succeeded(launcher):
                replica["succeeded"] = 1
                replica["active"] = 0
                msg = f"MPIJob {namespace}/{name} successfully completed."
                status.setdefault(
                    "completionTime", (launcher.get("status") or {}).get("completionTime") or now
                )
                if S.set_condition(status, "Succeeded", "True", S.REASON_SUCCEEDED, msg, now):
                    self._event(stored, "Normal", S.REASON_SUCCEEDED, msg)
            elif S.job_failed(launcher):
                cond = S.job_condition(launcher, "Failed") or {}
                reason = str(cond.get("reason") or S.REASON_FAILED)
                msg = str(cond.get("message") or f"MPIJob {namespace}/{name} has failed")
                if reason == "BackoffLimitExceeded":
                    last = max(
                        (p for p in launcher_pods if _phase(p) == "Failed"),
                        key=lambda p: p["metadata"].get("creationTimestamp", ""),
                        default=None,
                    )
                    if last is not None:
                        reason += "/" + str((last.get("status") or {}).get("reason") or "")
                        msg += ": " + str((last.get("status") or {}).get("message") or "")
                status.setdefault("completionTime", now)
                replica["active"] = 0
                if S.set_condition(status, "Failed", "True", reason, msg[:1024], now):
                    self._event(stored, "Warning", reason, msg[:1024])
            else:
                replica["active"] = launcher_running
        worker = S.init_replica(status, O.WORKER)
        running = evicted = 0
        for pod in workers:
            phase = _phase(pod)
            if phase == "Failed":
                worker["failed"] = worker.get("failed", 0) + 1
                evicted += (pod.get("status") or {}).get("reason") == "Evicted"
            elif phase == "Succeeded":
                worker["succeeded"] = worker.get("succeeded", 0) + 1
            elif phase == "Running":
                running += 1
                worker["active"] = worker.get("active", 0) + 1
        if evicted:
            msg = f"{evicted}/{len(workers)} workers are evicted"
            if S.set_condition(status, "Failed", "True", S.REASON_EVICTED, msg, now):
                self._event(stored, "Warning", S.REASON_EVICTED, msg)
        if suspended:
            S.set_condition(
                status,
                "Running",
                "False",
                S.REASON_SUSPENDED,
                f"MPIJob {namespace}/{name} is suspended.",
                now,
            )
        elif (
            launcher is not None
            and launcher_running >= 1
            and running == len(workers)
            and not S.is_finished(status)
        ):
            msg = f"MPIJob {namespace}/{name} is running."
            if S.set_condition(status, "Running", "True", S.REASON_RUNNING, msg, now):
                self._event(stored, "Normal", S.REASON_RUNNING, f"MPIJob {namespace}/{name} is running")

    def _write_status(self, stored: Obj, status: Obj, before: Any) -> None:
        if _comparable(status) == before:
            return
        obj = {**stored, "status": status}
        try:
            self.client.update_status(obj)
        except NotFound:
            pass

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        record_quietly(self.events, obj, type_, reason, message)

    # --- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        self.queue = WorkQueue()
        followers = Followers(self.client, read_only=True)  # handlers pick keys
        followers.start(stop, O.API_VERSION, O.KIND, self._on_job)
        # Its pods, workers and launcher alike, carry the operator's name: the store sends no
        # other pods. Its launcher Job, ConfigMap and Service are labelled only ``app: <job>``,
        # as the MPI Operator labels them, so those kinds are followed whole.
        followers.start(stop, "v1", "Pod", self._on_child, f"{O.OPERATOR_NAME_LABEL}={O.OPERATOR_NAME}")
        for av, kind in (("batch/v1", "Job"), ("v1", "ConfigMap"), ("v1", "Service")):
            followers.start(stop, av, kind, self._on_child)
        next_resync = 0.0
        while not stop.is_set():
            if time.monotonic() >= next_resync:
                self._enqueue_all()
                next_resync = time.monotonic() + self.resync_seconds
            key = self.queue.get(timeout_s=0.5)
            if key is None:
                continue
            namespace, _, name = key[1].partition("/")
            try:
                self.reconcile(namespace, name)
            except Conflict:
                self.queue.add(key)
            except Exception:
                log.exception("syncing MPIJob %s failed; retrying", key[1])
                self.queue.add(key, 1.0)
        self.queue.close()
        followers.stop()

    def _key(self, namespace: str, name: str) -> Key:
        return (O.KIND, f"{namespace}/{name}")

    def _on_job(self, event_type: str, obj: Obj) -> None:
        if event_type != "DELETED":
            meta = obj["metadata"]
            self.queue.add(self._key(meta.get("namespace") or "default", meta["name"]))

    def _on_child(self, event_type: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        for ref in meta.get("ownerReferences") or ():
            if not ref.get("controller"):
                continue
            if ref.get("kind") == O.KIND and str(ref.get("apiVersion", "")).startswith("kubeflow.org/"):
                self.queue.add(self._key(namespace, ref["name"]))
            elif ref.get("kind") == "Job" and obj.get("kind") == "Pod":
                # A launcher pod: its Job's owner is the MPIJob (``<job>-launcher``).
                job_name = str(ref.get("name", ""))
                if job_name.endswith("-launcher"):
                    self.queue.add(self._key(namespace, job_name[: -len("-launcher")]))

    def _enqueue_all(self) -> None:
        try:
            for obj in self.client.list(O.API_VERSION, O.KIND).items:
                self._on_job("ADDED", obj)
        except ApiError:
            log.exception("listing MPIJobs failed")


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _ready(pod: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _owned_by(obj: Mapping[str, Any], uid: Any) -> bool:
    return any(
        r.get("controller") and r.get("uid") == uid
        for r in (obj.get("metadata") or {}).get("ownerReferences") or ()
    )


def _comparable(status: Mapping[str, Any]) -> Any:
    return {k: v for k, v in status.items() if k != "lastReconcileTime"}
