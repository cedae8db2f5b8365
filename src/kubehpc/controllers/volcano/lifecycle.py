"""The Volcano Job state machine: from the Job, its pods, its PodGroup's phase and the action
a policy chose, the next phase, the pods to create and the pods to delete.

As Volcano's job controller (pkg/controllers/job/state), one table of phases:

=============  =======================================================================
phase          on an action / otherwise
=============  =======================================================================
Pending        RestartJob -> Restarting (all pods deleted, retryCount+1), AbortJob ->
               Aborting, TerminateJob -> Terminating, CompleteJob -> Completing (those
               three keep finished pods); otherwise create missing pods once the PodGroup
               is admitted, and go Running when running+succeeded+failed >= minAvailable
Running        the same actions; otherwise create missing pods, and once every pod has
               finished: Completed if succeeded >= minAvailable (and each task's
               minAvailable, and minSuccess), else Failed; Completed as soon as
               succeeded >= minSuccess
Restarting     delete every pod; Failed when retryCount >= maxRetry, else Pending once no
               pod is terminating (the pods are created again, with job version + 1)
Aborting       delete unfinished pods -> Aborted when none is left
Completing     delete unfinished pods -> Completed when none is left
Terminating    delete unfinished pods -> Terminated when none is left
Completed, Terminated, Failed, Aborted: delete unfinished pods, stay
=============  =======================================================================

RestartTask deletes the pods of the event's task and RestartPod the event's pod; both are
created again by the next sync.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubehpc.controllers.volcano import constants as c
from kubehpc.controllers.volcano.view import JobView

Obj = dict[str, Any]
PodPhase = str


@dataclass(frozen=True)
class Request:
    """An action chosen for the Job (by a policy), with what triggered it."""

    action: str = c.SYNC_JOB
    event: str = ""
    task: str = ""
    pod: str = ""
    reason: str = ""


@dataclass
class Counts:
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    per_task: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, task: str, pod: Obj) -> None:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            self.terminating += 1
            return
        phase = pod_phase(pod)
        if phase == "Pending":
            self.pending += 1
        elif phase == "Running":
            self.running += 1
        elif phase == "Succeeded":
            self.succeeded += 1
        elif phase == "Failed":
            self.failed += 1
        else:
            self.unknown += 1
        bucket = self.per_task.setdefault(task, {})
        bucket[phase] = bucket.get(phase, 0) + 1


@dataclass
class Plan:
    phase: str
    reason: str
    message: str
    status: Obj
    create: list[tuple[str, int]] = field(default_factory=list)
    """(task, index) of the pods to create."""
    delete: list[str] = field(default_factory=list)
    phase_changed: bool = False


def pod_phase(pod: Obj) -> PodPhase:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def finished(pod: Obj) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def task_of(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return str(
        (meta.get("annotations") or {}).get(c.TASK_SPEC_KEY)
        or (meta.get("labels") or {}).get(c.TASK_SPEC_KEY)
        or ""
    )


def plan(view: JobView, status: Obj, pods: dict[str, Obj], pg_phase: str, request: Request) -> Plan:
    """What to do for the Job now. ``pods``: its pods by name; ``status``: its stored status."""
    state = status.get("state") or {}
    phase = str(state.get("phase") or c.PENDING)
    retry = int(status.get("retryCount") or 0)
    version = int(status.get("version") or 0)
    action = request.action
    delete: list[str] = []
    create: list[tuple[str, int]] = []
    new_phase, reason, message = phase, str(state.get("reason") or ""), str(state.get("message") or "")

    def kill(keep_finished: bool) -> None:
        for name, pod in sorted(pods.items()):
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue
            if keep_finished and finished(pod):
                continue
            delete.append(name)

    def because(text: str) -> str:
        return f"{text} ({request.reason})" if request.reason else text

    if phase in (c.PENDING, c.RUNNING) and action == c.RESTART_JOB:
        kill(keep_finished=False)
        new_phase, retry, version = c.RESTARTING, retry + 1, version + 1
        reason, message = c.RESTART_JOB, because("restarting the job")
    elif phase in (c.PENDING, c.RUNNING) and action == c.ABORT_JOB:
        kill(keep_finished=True)
        new_phase, reason, message = c.ABORTING, c.ABORT_JOB, because("aborting the job")
    elif phase in (c.PENDING, c.RUNNING) and action == c.TERMINATE_JOB:
        kill(keep_finished=True)
        new_phase, reason, message = c.TERMINATING, c.TERMINATE_JOB, because("terminating the job")
    elif phase in (c.PENDING, c.RUNNING) and action == c.COMPLETE_JOB:
        kill(keep_finished=True)
        new_phase, reason, message = c.COMPLETING, c.COMPLETE_JOB, because("completing the job")
    elif phase in (c.PENDING, c.RUNNING):
        if action == c.RESTART_TASK and request.task:
            delete += [n for n, p in sorted(pods.items()) if task_of(p) == request.task and not _deleting(p)]
        elif action == c.RESTART_POD and request.pod in pods and not _deleting(pods[request.pod]):
            delete.append(request.pod)
        if pg_phase not in ("", c.PG_PENDING):
            # As Volcano: pods are created only once the PodGroup is admitted by its queue, so
            # a gang that waits holds no pods (and no node's attention).
            for task in view.tasks:
                for i in range(task.replicas):
                    name = task.pod_name(view.name, i)
                    if name not in pods:
                        create.append((task.name, i))
    elif phase == c.RESTARTING:
        kill(keep_finished=False)
    else:  # Aborting, Completing, Terminating and the finished phases
        kill(keep_finished=True)
    counts = Counts()
    for name, pod in pods.items():
        if name in delete:
            counts.terminating += 1
        else:
            counts.add(task_of(pod), pod)
    counts.pending += len(create)  # pods about to be created start Pending

    if new_phase == phase:
        new_phase, reason, message = _settle(view, phase, retry, counts, reason, message)
    out = {
        **status,
        "pending": counts.pending,
        "running": counts.running,
        "succeeded": counts.succeeded,
        "failed": counts.failed,
        "terminating": counts.terminating,
        "unknown": counts.unknown,
        "minAvailable": view.min_available,
        "retryCount": retry,
        "version": version,
        "taskStatusCount": {
            t: {"phase": dict(sorted(p.items()))} for t, p in sorted(counts.per_task.items())
        },
    }
    changed = new_phase != phase or not state.get("phase")
    return Plan(new_phase, reason, message, out, create, delete, changed)


def _deleting(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _settle(
    view: JobView, phase: str, retry: int, n: Counts, reason: str, message: str
) -> tuple[str, str, str]:
    """The phase a Job reaches by itself (no action), from what its pods did."""
    unfinished = n.pending + n.running + n.terminating + n.unknown
    if phase == c.PENDING:
        if view.min_available <= n.running + n.succeeded + n.failed and view.total_replicas:
            return c.RUNNING, "", "at least minAvailable pods have started"
        return phase, reason, message
    if phase == c.RUNNING:
        total = view.total_replicas
        if not total:
            return phase, reason, message
        if view.min_success is not None and n.succeeded >= view.min_success:
            return c.COMPLETED, "", f"{n.succeeded} pods succeeded (minSuccess {view.min_success})"
        if n.succeeded + n.failed == total and not n.terminating:
            if view.min_available >= sum(t.min_available for t in view.tasks):
                for t in view.tasks:
                    done = n.per_task.get(t.name, {}).get("Succeeded", 0)
                    if done < t.min_available:
                        return (
                            c.FAILED,
                            "",
                            f"task {t.name}: {done} pods succeeded, minAvailable {t.min_available}",
                        )
            if view.min_success is not None and n.succeeded < view.min_success:
                return c.FAILED, "", f"{n.succeeded} pods succeeded, minSuccess {view.min_success}"
            if n.succeeded >= view.min_available:
                return c.COMPLETED, "", f"{n.succeeded} of {total} pods succeeded"
            return c.FAILED, "", f"{n.succeeded} of {total} pods succeeded, minAvailable {view.min_available}"
        return phase, reason, message
    if phase == c.RESTARTING:
        if retry >= view.max_retry:
            return c.FAILED, "MaxRetryReached", f"restarted {retry} times (maxRetry {view.max_retry})"
        if view.total_replicas - n.terminating >= view.min_available and not n.terminating:
            return c.PENDING, reason, message
        return phase, reason, message
    if phase == c.ABORTING and not unfinished:
        return c.ABORTED, reason, message
    if phase == c.COMPLETING and not unfinished:
        return c.COMPLETED, reason, message
    if phase == c.TERMINATING and not unfinished:
        return c.TERMINATED, reason, message
    return phase, reason, message
