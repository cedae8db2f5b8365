"""The RayJob controller: KubeRay's ``RayJobReconciler`` over the Client protocol.

``status.jobDeploymentStatus`` moves as in KubeRay::

    "" (New) -> Initializing -> Running -> Complete | Failed
    Initializing | Running --suspend--> Suspending -> Suspended --resume--> New
    Running --failed, retries left (backoffLimit)--> Retrying -> New

* New: pick the job id (``spec.jobId`` or ``<name>-<suffix>``) and the cluster: the one
  ``clusterSelector`` names, else a new RayCluster ``<name>-<suffix>`` from ``rayClusterSpec``
  owned by the RayJob; a suspended RayJob goes straight to Suspended.
* Initializing: once the cluster is ready the job is submitted, through a submitter Job
  (K8sJobMode: ``ray job submit``, its logs are the job's) or straight to the job submission
  API (HTTPMode). A cluster that ends ``failed`` (its ``ray`` missing on the host, a spec
  KubeRay's controller refuses) fails the job with reason ``RayClusterFailed`` instead of
  leaving it in Initializing.
* Running: ``status.jobStatus`` follows Ray's job status (PENDING, RUNNING, SUCCEEDED,
  FAILED, STOPPED) read from the dashboard; ``activeDeadlineSeconds`` counts from startTime.
* Complete / Failed: with ``shutdownAfterJobFinishes`` the RayCluster is deleted
  ``ttlSecondsAfterFinished`` after the end.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import yaml

from kubehpc.api.errors import AlreadyExists, Conflict, NotFound
from kubehpc.controllers.ray import constants as c
from kubehpc.controllers.ray import objects as O
from kubehpc.controllers.ray.dashboard import TERMINAL_JOB_STATUSES, DashboardClient, DashboardError
from kubehpc.controllers.ray.loop import RAY_JOBS, OwnerLoop
from kubehpc.controllers.ray.startparams import NodePorts
from kubehpc.controllers.ray.submitter import runtime_env_json, submitter_job
from kubehpc.controllers.ray.validation import rayjob_spec_problems
from kubehpc.store.client import Client, DeleteOptions, Propagation
from kubehpc.store.events import EventRecorder, record_quietly
from kubehpc.store.strategy import rfc3339

log = logging.getLogger(__name__)
Obj = dict[str, Any]
COMPONENT = "rayjob-controller"
POLL_S = 1.0
SUBMITTER_GRACE_S = 30.0  # how long a finished Ray job waits for its submitter to end
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

NEW = ""
INITIALIZING = "Initializing"
RUNNING = "Running"
COMPLETE = "Complete"
FAILED = "Failed"
SUSPENDING = "Suspending"
SUSPENDED = "Suspended"
RETRYING = "Retrying"
VALIDATION_FAILED = "ValidationFailed"

EventSink = Callable[[Obj, str, str, str], Any]
DashboardFactory = Callable[[str], DashboardClient]


def _suffix() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(5))


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class RayJobController:
    def __init__(
        self,
        client: Client,
        mode: O.HostMode | None = None,
        *,
        events: EventSink | None = None,
        dashboard: DashboardFactory = DashboardClient,
        clock: Callable[[], float] = time.time,
        resync_s: float = 10.0,
    ) -> None:
        self.client = client
        self.mode = mode or O.HostMode()
        self.events: EventSink = events or EventRecorder(client, COMPONENT).record
        self.dashboard = dashboard
        self.clock = clock
        self.resync_s = resync_s

    def reconcile(self, namespace: str, name: str) -> float | None:
        try:
            job = self.client.get(c.API_VERSION, c.JOB_KIND, name, namespace)
        except NotFound:
            return None
        if (job.get("metadata") or {}).get("deletionTimestamp"):
            return None
        status: Obj = dict(job.get("status") or {})
        before = dict(status)
        step = {
            NEW: self._new,
            INITIALIZING: self._initializing,
            RUNNING: self._running,
            COMPLETE: self._finished,
            FAILED: self._finished,
            SUSPENDING: self._suspending,
            SUSPENDED: self._suspended,
            RETRYING: self._retrying,
        }.get(str(status.get("jobDeploymentStatus") or NEW))
        again: float | None = None
        if step is not None:
            again = step(job, status)
        if status != before:
            status["observedGeneration"] = int((job.get("metadata") or {}).get("generation") or 1)
            try:
                self.client.update_status({**job, "status": status})
            except (Conflict, NotFound):
                return 0.2
            if status.get("jobDeploymentStatus") != before.get("jobDeploymentStatus"):
                return 0.0  # take the next step at once
        return again

    # --- states ----------------------------------------------------------------------------

    def _new(self, job: Obj, status: Obj) -> float | None:
        spec = job.get("spec") or {}
        # Admitted as the CRD admits it; refused here, as KubeRay's reconciler does.
        problems = rayjob_spec_problems(spec)
        if problems:
            message = "; ".join(problems)
            status.update(
                {"jobDeploymentStatus": VALIDATION_FAILED, "reason": "ValidationFailed", "message": message}
            )
            self._event(job, "Warning", "InvalidRayJobSpec", message)
            return None
        if spec.get("suspend"):
            status["jobDeploymentStatus"] = SUSPENDED
            return None
        try:
            runtime_env_json(spec)
        except (ValueError, yaml.YAMLError) as err:
            status.update(
                {"jobDeploymentStatus": VALIDATION_FAILED, "reason": "ValidationFailed", "message": str(err)}
            )
            self._event(job, "Warning", "InvalidRayJobSpec", str(err))
            return None
        name = job["metadata"]["name"]
        selector = spec.get("clusterSelector") or {}
        cluster_name = selector.get(c.CLUSTER_LABEL) if selector else f"{name}-{_suffix()}"
        if selector and not cluster_name:
            message = f"clusterSelector must name the cluster with the {c.CLUSTER_LABEL} key"
            status.update(
                {"jobDeploymentStatus": VALIDATION_FAILED, "reason": "ValidationFailed", "message": message}
            )
            self._event(job, "Warning", "InvalidRayJobSpec", message)
            return None
        status.update(
            {
                "jobId": spec.get("jobId") or f"{name}-{_suffix()}",
                "rayClusterName": cluster_name,
                "jobDeploymentStatus": INITIALIZING,
                "jobStatus": "",
                "startTime": rfc3339(self.clock()),
            }
        )
        for key in ("endTime", "message", "reason", "rayJobInfo", "dashboardURL"):
            status.pop(key, None)
        return None

    def _cluster(self, job: Obj, status: Obj) -> Obj | None:
        try:
            return self.client.get(
                c.API_VERSION, c.CLUSTER_KIND, str(status["rayClusterName"]), job["metadata"].get("namespace")
            )
        except NotFound:
            return None

    def _initializing(self, job: Obj, status: Obj) -> float | None:
        spec = job.get("spec") or {}
        if spec.get("suspend"):
            status["jobDeploymentStatus"] = SUSPENDING
            return None
        if self._past_deadline(
            job, status, spec.get("preRunningDeadlineSeconds"), "PreRunningDeadlineExceeded"
        ):
            return None
        if self._past_deadline(job, status, spec.get("activeDeadlineSeconds"), "DeadlineExceeded"):
            return None
        cluster = self._cluster(job, status)
        if cluster is None:
            if spec.get("clusterSelector"):
                status["message"] = f"waiting for RayCluster {status['rayClusterName']} (clusterSelector)"
                return POLL_S
            cluster = self._create_cluster(job, status)
        cluster_status = cluster.get("status") or {}
        if cluster_status.get("state") == c.FAILED:
            # The cluster cannot start (its `ray` program is missing on this host, or KubeRay's
            # controller refused its spec): end the job with the cluster's reason rather than
            # wait in Initializing for a cluster that will never be ready.
            reason = cluster_status.get("reason") or "the RayCluster failed"
            return self._fail(
                job, status, "RayClusterFailed", f"RayCluster {cluster['metadata']['name']}: {reason}"
            )
        if cluster_status.get("state") != c.READY:
            return POLL_S
        dashboard = self._dashboard_address(cluster)
        status["dashboardURL"] = dashboard
        if spec.get("submissionMode", "K8sJobMode") == "HTTPMode":
            try:
                self.dashboard(dashboard).submit_job(self._http_request(job, status))
            except DashboardError as err:
                status["message"] = f"submitting the job failed, retrying: {err}"
                return POLL_S
            self._event(job, "Normal", "Submitted", f"Submitted Ray job {status['jobId']} over HTTP")
        else:
            sub = submitter_job(job, dashboard, str(status["jobId"]), self.mode)
            try:
                self.client.create(sub)
                self._event(job, "Normal", "Created", f"Created submitter Job {sub['metadata']['name']}")
            except AlreadyExists:
                pass
        status["jobDeploymentStatus"] = RUNNING
        status.pop("message", None)
        return None

    def _running(self, job: Obj, status: Obj) -> float | None:
        spec = job.get("spec") or {}
        if spec.get("suspend"):
            status["jobDeploymentStatus"] = SUSPENDING
            return None
        if self._past_deadline(job, status, spec.get("activeDeadlineSeconds"), "DeadlineExceeded"):
            self._stop_ray_job(status)
            return None
        cluster = self._cluster(job, status)
        if cluster is None:
            return self._fail(
                job, status, "RayClusterNotFound", f"RayCluster {status['rayClusterName']} is gone"
            )
        info = None
        try:
            info = self.dashboard(
                str(status.get("dashboardURL") or self._dashboard_address(cluster))
            ).job_info(str(status["jobId"]))
        except DashboardError as err:
            log.debug("job status of %s: %s", status.get("jobId"), err)
        if info is not None:
            status["jobStatus"] = info.status
            ray_info: Obj = {}
            if info.start_time_ms:
                ray_info["startTime"] = rfc3339(info.start_time_ms / 1000)
            if info.end_time_ms:
                ray_info["endTime"] = rfc3339(info.end_time_ms / 1000)
            status["rayJobInfo"] = ray_info
            if info.status in TERMINAL_JOB_STATUSES:
                if not self._submitter_done(job, info.end_time_ms):
                    # As KubeRay: in K8sJobMode the job ends once its submitter has printed
                    # the last of the logs, not before (deleting the cluster would cut them).
                    return POLL_S
                if info.status == "SUCCEEDED":
                    status["jobDeploymentStatus"] = COMPLETE
                    status["succeeded"] = int(status.get("succeeded") or 0) + 1
                    status["endTime"] = rfc3339(self.clock())
                    self._event(job, "Normal", "Completed", f"Ray job {status['jobId']} succeeded")
                    return None
                return self._fail(job, status, "AppFailed", info.message or f"Ray job {info.status}")
        if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode" and info is None:
            sub = self._submitter(job)
            if sub is not None and _job_failed(sub):
                return self._fail(job, status, "SubmissionFailed", "the submitter Job failed")
        return POLL_S

    def _submitter_done(self, job: Obj, ray_end_ms: int | None) -> bool:
        if (job.get("spec") or {}).get("submissionMode", "K8sJobMode") != "K8sJobMode":
            return True
        if ray_end_ms and self.clock() - ray_end_ms / 1000 > SUBMITTER_GRACE_S:
            return True
        sub = self._submitter(job)
        if sub is None:
            return True
        return any(
            cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True"
            for cond in (sub.get("status") or {}).get("conditions") or ()
        )

    def _fail(self, job: Obj, status: Obj, reason: str, message: str) -> float | None:
        failed = int(status.get("failed") or 0) + 1
        status["failed"] = failed
        limit = int((job.get("spec") or {}).get("backoffLimit") or 0)
        if failed <= limit and reason != "DeadlineExceeded":
            status["jobDeploymentStatus"] = RETRYING
            status["message"] = f"{message}; retrying ({failed} of {limit})"
            self._event(job, "Normal", "Retrying", status["message"])
            return None
        status.update(
            {
                "jobDeploymentStatus": FAILED,
                "reason": reason,
                "message": message,
                "endTime": rfc3339(self.clock()),
            }
        )
        self._event(job, "Warning", reason, message)
        return None

    def _past_deadline(self, job: Obj, status: Obj, seconds: Any, reason: str) -> bool:
        start = _seconds(status.get("startTime"))
        if seconds is None or start is None or self.clock() < start + int(seconds):
            return False
        status["failed"] = int(status.get("failed") or 0) + 1
        status.update(
            {
                "jobDeploymentStatus": FAILED,
                "reason": reason,
                "message": f"the RayJob ran past its {seconds}s deadline",
                "endTime": rfc3339(self.clock()),
            }
        )
        self._event(job, "Warning", reason, status["message"])
        return True

    def _finished(self, job: Obj, status: Obj) -> float | None:
        spec = job.get("spec") or {}
        if not spec.get("shutdownAfterJobFinishes") or spec.get("clusterSelector"):
            return None
        end = _seconds(status.get("endTime")) or self.clock()
        wait = end + int(spec.get("ttlSecondsAfterFinished") or 0) - self.clock()
        if wait > 0:
            return wait
        cluster = self._cluster(job, status)
        if cluster is not None:
            self._delete(c.API_VERSION, c.CLUSTER_KIND, job, str(status["rayClusterName"]))
            self._event(
                job, "Normal", "Deleted", f"Deleted RayCluster {status['rayClusterName']} (job finished)"
            )
        return None

    def _suspending(self, job: Obj, status: Obj) -> float | None:
        self._stop_ray_job(status)
        gone = self._teardown(job, status)
        if not gone:
            return POLL_S
        for key in (
            "jobStatus",
            "startTime",
            "endTime",
            "rayClusterName",
            "jobId",
            "rayJobInfo",
            "dashboardURL",
        ):
            status.pop(key, None)
        status["jobDeploymentStatus"] = SUSPENDED
        self._event(job, "Normal", "Suspended", "RayJob suspended: its cluster and submitter were deleted")
        return None

    def _suspended(self, job: Obj, status: Obj) -> float | None:
        if not (job.get("spec") or {}).get("suspend"):
            status["jobDeploymentStatus"] = NEW
        return None

    def _retrying(self, job: Obj, status: Obj) -> float | None:
        if not self._teardown(job, status):
            return POLL_S
        for key in ("jobStatus", "rayClusterName", "jobId", "rayJobInfo", "dashboardURL", "startTime"):
            status.pop(key, None)
        status["jobDeploymentStatus"] = NEW
        return None

    # --- helpers ---------------------------------------------------------------------------

    def _teardown(self, job: Obj, status: Obj) -> bool:
        """Delete the submitter and (unless it is shared through clusterSelector) the cluster;
        whether both are gone."""
        gone = True
        if self._submitter(job) is not None:
            self._delete("batch/v1", "Job", job, job["metadata"]["name"])
            gone = False
        spec = job.get("spec") or {}
        own_cluster = status.get("rayClusterName") and not spec.get("clusterSelector")
        if own_cluster and self._cluster(job, status) is not None:
            self._delete(c.API_VERSION, c.CLUSTER_KIND, job, str(status["rayClusterName"]))
            gone = False
        return gone

    def _stop_ray_job(self, status: Obj) -> None:
        if status.get("dashboardURL") and status.get("jobId"):
            try:
                self.dashboard(str(status["dashboardURL"])).stop_job(str(status["jobId"]))
            except DashboardError:
                pass

    def _submitter(self, job: Obj) -> Obj | None:
        try:
            return self.client.get(
                "batch/v1", "Job", job["metadata"]["name"], job["metadata"].get("namespace")
            )
        except NotFound:
            return None

    def _create_cluster(self, job: Obj, status: Obj) -> Obj:
        meta = job["metadata"]
        labels = {
            c.ORIGINATED_FROM_CR_NAME_LABEL: str(meta["name"]),
            c.ORIGINATED_FROM_CRD_LABEL: c.JOB_KIND,
            **{k: v for k, v in (meta.get("labels") or {}).items() if not k.startswith("kueue.x-k8s.io/")},
        }
        cluster = {
            "apiVersion": c.API_VERSION,
            "kind": c.CLUSTER_KIND,
            "metadata": {
                "name": status["rayClusterName"],
                "namespace": meta.get("namespace", "default"),
                "labels": labels,
                "ownerReferences": [O.owner_reference(job)],
            },
            "spec": (job.get("spec") or {}).get("rayClusterSpec") or {},
        }
        try:
            created = self.client.create(cluster)
            self._event(job, "Normal", "Created", f"Created RayCluster {status['rayClusterName']}")
            return created
        except AlreadyExists:
            return self.client.get(
                c.API_VERSION, c.CLUSTER_KIND, str(status["rayClusterName"]), meta.get("namespace")
            )

    def _dashboard_address(self, cluster: Obj) -> str:
        endpoints = (cluster.get("status") or {}).get("endpoints") or {}
        if self.mode.host_processes and endpoints.get("dashboard"):
            return f"127.0.0.1:{endpoints['dashboard']}"
        ports = None if not self.mode.host_processes else NodePorts(0, 0, 0, 0, 0, 0)
        return O.dashboard_address(cluster, ports)

    def _http_request(self, job: Obj, status: Obj) -> Obj:
        spec = job.get("spec") or {}
        req: Obj = {"entrypoint": spec.get("entrypoint"), "submission_id": status["jobId"]}
        env = runtime_env_json(spec)
        if env:
            req["runtime_env"] = json.loads(env)
        for key, field in (
            ("entrypointNumCpus", "entrypoint_num_cpus"),
            ("entrypointNumGpus", "entrypoint_num_gpus"),
        ):
            if spec.get(key) is not None:
                req[field] = spec[key]
        if spec.get("metadata"):
            req["metadata"] = spec["metadata"]
        return req

    def _delete(self, api_version: str, kind: str, job: Obj, name: str) -> None:
        try:
            self.client.delete(
                api_version,
                kind,
                name,
                job["metadata"].get("namespace"),
                DeleteOptions(propagation_policy=Propagation.BACKGROUND),
            )
        except NotFound:
            pass

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        record_quietly(self.events, obj, type_, reason, message)

    def run(self, stop: threading.Event) -> None:
        OwnerLoop(
            self.client,
            c.API_VERSION,
            c.JOB_KIND,
            self.reconcile,
            owned=((c.API_VERSION, c.CLUSTER_KIND), RAY_JOBS),
            resync_s=self.resync_s,
        ).run(stop)


def _job_failed(job: Obj) -> bool:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Failed" and cond.get("status") == "True":
            return True
    return False
