"""The Job controller's decision, as a pure function of (Job, its pods, now).

``plan_job`` mirrors ``syncJob`` of Kubernetes' job controller: it counts finished pods,
decides whether the Job has failed or succeeded (through the interim FailureTarget and
SuccessCriteriaMet conditions), creates or deletes pods towards ``parallelism``, and computes
the new status. It performs no I/O: the caller applies the returned :class:`JobPlan` in order
— delete pods, create pods, store the status, then strip tracking finalizers, then record
events — and calls it again on the fresh state until nothing is left to do.

Counting happens exactly once across restarts because a finished pod's UID is first stored in
``status.uncountedTerminatedPods`` (Indexed successes: in ``completedIndexes``), only then is its
tracking finalizer removed, and only a pod without the finalizer moves from the uncounted list
to the ``succeeded`` / ``failed`` counters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from kubehpc.api import fields as F
from kubehpc.controllers.job import conditions as C
from kubehpc.controllers.job import constants as c
from kubehpc.controllers.job import failure_policy as fp
from kubehpc.controllers.job import pods as P
from kubehpc.controllers.job import success_policy
from kubehpc.controllers.job.actions import JobEvent, JobPlan, PodDeletion
from kubehpc.controllers.job.backoff import BackoffPolicy, BackoffRecord
from kubehpc.controllers.job.indexes import IndexState, index_failed, pods_with_delayed_deletion
from kubehpc.controllers.job.intervals import Intervals
from kubehpc.controllers.job.manage import ManageContext, manage_pods, pods_for_removal
from kubehpc.controllers.job.spec import JobSpec, format_time, parse_time

Obj = dict[str, Any]


@dataclass(frozen=True)
class Finish:
    """A terminal decision: ``ctype`` is FailureTarget, Failed, SuccessCriteriaMet or Complete."""

    ctype: str
    reason: str
    message: str


def is_finished(job: Obj) -> bool:
    conds = F.status(job).get("conditions") or []
    return C.is_true(conds, c.COMPLETE) or C.is_true(conds, c.FAILED)


# Go's omitempty drops these when zero or empty (ready and terminating are pointers: kept).
_OMIT_EMPTY = ("active", "succeeded", "failed", "completedIndexes", "startTime", "completionTime")


def _normalized(status: Obj) -> Obj:
    out = {k: v for k, v in status.items() if v is not None and not (k in _OMIT_EMPTY and not v)}
    if not out.get("conditions"):
        out.pop("conditions", None)
    unc = F.obj_field(out, "uncountedTerminatedPods")
    out["uncountedTerminatedPods"] = {k: list(v) for k, v in unc.items() if v}
    return out


def _plan_finished(job: Obj, spec: JobSpec, pods: list[Obj], now: datetime) -> JobPlan:
    out = JobPlan()
    # Pods left with the tracking finalizer (e.g. the controller stopped between writing the
    # terminal condition and cleaning up) must not stay undeletable.
    out.remove_finalizers = [P.name(p) for p in pods if P.has_tracking_finalizer(p)]
    if spec.ttl_seconds_after_finished is not None:
        conds = F.status(job).get("conditions") or []
        cond = C.find(conds, c.COMPLETE) if C.is_true(conds, c.COMPLETE) else C.find(conds, c.FAILED)
        finished_at = parse_time((cond or {}).get("lastTransitionTime")) or now
        left = spec.ttl_seconds_after_finished - (now - finished_at).total_seconds()
        if left <= 0:
            out.delete_job = True
        else:
            out.requeue(left)
    return out


def _past_backoff_limit_on_failure(spec: JobSpec, pods: list[Obj]) -> bool:
    """restartPolicy OnFailure restarts containers in place; their restarts count instead."""
    if spec.restart_policy != "OnFailure":
        return False
    restarts = sum(P.restart_count(p) for p in pods if P.phase(p) in ("Running", "Pending"))
    return restarts > 0 if spec.backoff_limit == 0 else restarts >= spec.backoff_limit


def _fail_job_message(spec: JobSpec, pods: list[Obj]) -> str | None:
    if spec.pod_failure_policy is None:
        return None
    for pod in pods:
        if P.is_failed(pod, spec):
            message = fp.match(spec.pod_failure_policy, pod).fail_job_message
            if message is not None:
                return message
    return None


def plan_job(
    job: Obj,
    pods: list[Obj],
    now: datetime,
    backoff: BackoffPolicy | None = None,
    max_pods_per_sync: int = 500,
    backoff_record: BackoffRecord | None = None,
    spec: JobSpec | None = None,
) -> JobPlan:
    """Decide what to do for ``job`` given the pods it controls (already filtered by owner).

    ``backoff_record`` is what the caller remembers of this Job's failures (None after a
    restart); the updated record comes back in ``JobPlan.backoff_record``. ``spec`` is
    ``JobSpec.of(job)`` where the caller has read it already."""
    if spec is None:
        spec = JobSpec.of(job)
    backoff = backoff or BackoffPolicy()
    pods = sorted(pods, key=P.name)
    if spec.managed_elsewhere:
        return JobPlan()
    if is_finished(job):
        return _plan_finished(job, spec, pods, now)

    out = JobPlan()
    old_status = F.status(job)
    status = orjson.loads(orjson.dumps(old_status))  # JSON: a round trip beats deepcopy
    conds: list[Obj] = status.setdefault("conditions", []) or []
    status["conditions"] = conds
    uncounted = F.obj_field(status, "uncountedTerminatedPods")
    unc_succeeded = list(uncounted.get("succeeded") or [])
    unc_failed = list(uncounted.get("failed") or [])

    active = [p for p in pods if P.is_active(p)]
    ctx = ManageContext(
        spec=spec,
        pods=pods,
        active=active,
        ready=sum(1 for p in active if P.is_ready(p)),
        terminating=sum(1 for p in pods if P.is_terminating(p)),
    )

    def countable(p: Obj) -> bool:
        return not spec.indexed or P.valid_index(p, spec.completions) != P.UNKNOWN_INDEX

    tracked = [p for p in pods if P.has_tracking_finalizer(p) and countable(p)]
    new_succeeded = [p for p in tracked if P.is_succeeded(p) and P.uid(p) not in unc_succeeded]
    new_failed = [p for p in tracked if P.is_failed(p, spec) and P.uid(p) not in unc_failed]
    ctx.succeeded = int(status.get("succeeded") or 0) + len(new_succeeded) + len(unc_succeeded)
    if backoff_record is None:
        # After a restart: rebuild the record from the pods already counted (or being counted).
        counting = set(unc_succeeded) | set(unc_failed)
        counted = [p for p in pods if not P.has_tracking_finalizer(p) or P.uid(p) in counting]
        backoff_record = BackoffRecord.seed(
            [P.finished_time(p) for p in counted if P.phase(p) == "Failed"],
            [P.finished_time(p) for p in counted if P.is_succeeded(p)],
        )
    ctx.backoff_record = backoff_record.advance(
        [P.finished_time(p) for p in new_failed], [P.finished_time(p) for p in new_succeeded]
    )
    out.backoff_record = ctx.backoff_record
    failed = (
        int(status.get("failed") or 0)
        + sum(1 for p in new_failed if fp.match(spec.pod_failure_policy, p).counts)
        + len(unc_failed)
    )

    if not status.get("startTime") and not spec.suspend:
        status["startTime"] = format_time(now)

    finish: Finish | None = None
    scm = C.find(conds, c.SUCCESS_CRITERIA_MET)
    target = C.find(conds, c.FAILURE_TARGET)
    if scm is not None and scm.get("status") == "True":
        finish = Finish(c.SUCCESS_CRITERIA_MET, scm.get("reason", ""), scm.get("message", ""))
    elif target is not None and target.get("status") == "True":
        finish = Finish(c.FAILED, target.get("reason", ""), target.get("message", ""))
    elif (message := _fail_job_message(spec, pods)) is not None:
        finish = Finish(c.FAILURE_TARGET, c.REASON_POD_FAILURE_POLICY, message)
    if finish is None:
        start = parse_time(status.get("startTime"))
        if failed > spec.backoff_limit or _past_backoff_limit_on_failure(spec, pods):
            finish = Finish(
                c.FAILURE_TARGET, c.REASON_BACKOFF_LIMIT_EXCEEDED, c.MESSAGE_BACKOFF_LIMIT_EXCEEDED
            )
        elif spec.active_deadline_seconds is not None and start is not None and not spec.suspend:
            left = spec.active_deadline_seconds - (now - start).total_seconds()
            if left <= 0:
                finish = Finish(c.FAILURE_TARGET, c.REASON_DEADLINE_EXCEEDED, c.MESSAGE_DEADLINE_EXCEEDED)
            else:
                out.requeue(left)

    if spec.indexed:
        assert spec.completions is not None
        prev = Intervals.parse(status.get("completedIndexes"), spec.completions)
        ix_state = IndexState(previous_succeeded=prev)
        ix_state.succeeded = prev.with_indexes(
            P.valid_index(p, spec.completions) for p in tracked if P.is_succeeded(p)
        )
        ctx.succeeded = ix_state.succeeded.total()
        if spec.backoff_limit_per_index is not None:
            prev_failed = Intervals.parse(status.get("failedIndexes"), spec.completions)
            ix_state.failed = prev_failed.with_indexes(
                P.valid_index(p, spec.completions) for p in tracked if index_failed(spec, p)
            )
            if finish is None:
                n_failed = ix_state.failed.total()
                if spec.max_failed_indexes is not None and n_failed > spec.max_failed_indexes:
                    finish = Finish(
                        c.FAILURE_TARGET,
                        c.REASON_MAX_FAILED_INDEXES_EXCEEDED,
                        c.MESSAGE_MAX_FAILED_INDEXES_EXCEEDED,
                    )
                elif n_failed > 0 and n_failed + ix_state.succeeded.total() >= spec.completions:
                    finish = Finish(c.FAILURE_TARGET, c.REASON_FAILED_INDEXES, c.MESSAGE_FAILED_INDEXES)
            ix_state.delayed = pods_with_delayed_deletion(spec, ctx, ix_state)
        if finish is None:
            msg = success_policy.match(spec.success_policy, spec.completions, ix_state.succeeded)
            if msg is not None:
                finish = Finish(c.SUCCESS_CRITERIA_MET, c.REASON_SUCCESS_POLICY, msg)
        ctx.indexes = ix_state

    n_active = len(active)
    if finish is not None:
        # Stop whatever still runs; finalizers stay so those pods are counted below.
        for pod in active:
            out.delete.append(PodDeletion(P.name(pod), P.uid(pod), remove_finalizer=False))
        n_active = 0
        ctx.terminating += len(active)
        ctx.ready -= sum(1 for p in active if P.is_ready(p))
    else:
        managed = False
        if not spec.deleting:
            n_active = manage_pods(ctx, out, now, backoff, max_pods_per_sync)
            managed = True
        if spec.completions is None:
            complete = ctx.succeeded > 0 and n_active == 0
        else:
            complete = ctx.succeeded >= spec.completions and n_active == 0
        if complete:
            finish = Finish(
                c.SUCCESS_CRITERIA_MET, c.REASON_COMPLETIONS_REACHED, c.MESSAGE_COMPLETIONS_REACHED
            )
        elif managed:
            _suspend_conditions(spec, status, conds, out, now)

    status["active"] = n_active
    status["ready"] = ctx.ready
    status["terminating"] = ctx.terminating

    finish = _track(spec, ctx, pods, status, conds, unc_succeeded, unc_failed, finish, out, now)
    _enact_finished(spec, status, conds, finish, ctx, out, now)

    new_status = _normalized(status)
    if new_status != _normalized(old_status):
        out.status = new_status
    return out


def _suspend_conditions(spec: JobSpec, status: Obj, conds: list[Obj], out: JobPlan, now: datetime) -> None:
    if spec.suspend:
        if C.ensure(conds, c.SUSPENDED, "True", c.REASON_JOB_SUSPENDED, c.MESSAGE_JOB_SUSPENDED, now):
            out.events.append(JobEvent(c.NORMAL, c.EVENT_SUSPENDED, c.MESSAGE_JOB_SUSPENDED))
            # KEP-5440: a suspended Job has not started; resuming sets a fresh startTime, so
            # activeDeadlineSeconds measures continuous activity.
            status.pop("startTime", None)
    elif C.ensure(conds, c.SUSPENDED, "False", c.REASON_JOB_RESUMED, c.MESSAGE_JOB_RESUMED, now):
        out.events.append(JobEvent(c.NORMAL, c.EVENT_RESUMED, c.MESSAGE_JOB_RESUMED))
        status["startTime"] = format_time(now)


def _can_remove_finalizer(spec: JobSpec, ctx: ManageContext, pod: Obj, failed: bool, finishing: bool) -> bool:
    if spec.deleting or finishing or P.is_succeeded(pod):
        return True
    if not failed:
        return False
    if spec.backoff_limit_per_index is not None and ctx.indexes is not None:
        ix = P.completion_index(pod)
        held = ctx.indexes.delayed.get(ix)
        if held is not None and P.uid(held) == P.uid(pod):
            # Kept until its replacement exists: the replacement copies its failure count.
            return False
    return True


def _track(
    spec: JobSpec,
    ctx: ManageContext,
    pods: list[Obj],
    status: Obj,
    conds: list[Obj],
    unc_succeeded: list[str],
    unc_failed: list[str],
    finish: Finish | None,
    out: JobPlan,
    now: datetime,
) -> Finish | None:
    """Move counted pods from the uncounted lists to the counters, add newly finished pods to
    the uncounted lists, and choose the finalizers to strip once that is stored."""
    with_finalizer = {P.uid(p) for p in pods if P.has_tracking_finalizer(p)}
    keep_s = [u for u in unc_succeeded if u in with_finalizer]
    keep_f = [u for u in unc_failed if u in with_finalizer]
    status["succeeded"] = int(status.get("succeeded") or 0) + len(unc_succeeded) - len(keep_s)
    status["failed"] = int(status.get("failed") or 0) + len(unc_failed) - len(keep_f)

    finishing = finish is not None
    failing = finish is not None and finish.ctype != c.SUCCESS_CRITERIA_MET
    ordered = sorted(pods, key=P.completion_index) if spec.indexed else pods
    new_indexes: list[int] = []
    for pod in ordered:
        if not P.has_tracking_finalizer(pod):
            continue
        pod_failed = P.is_failed(pod, spec)
        if not _can_remove_finalizer(spec, ctx, pod, pod_failed, finishing):
            continue
        uid = P.uid(pod)
        if P.is_succeeded(pod) and uid not in keep_f:
            if spec.indexed:
                ix = P.valid_index(pod, spec.completions)
                assert ctx.indexes is not None
                if ix != P.UNKNOWN_INDEX and ix not in ctx.indexes.previous_succeeded:
                    new_indexes.append(ix)
            elif uid not in keep_s:
                keep_s.append(uid)
        elif pod_failed or failing:
            # When the Job fails, every pod that has not finished counts as failed.
            valid = not spec.indexed or P.valid_index(pod, spec.completions) != P.UNKNOWN_INDEX
            if uid not in keep_f and valid and fp.match(spec.pod_failure_policy, pod).counts:
                keep_f.append(uid)
        out.remove_finalizers.append(P.name(pod))

    if spec.indexed and ctx.indexes is not None:
        ctx.indexes.succeeded = ctx.indexes.succeeded.with_indexes(new_indexes)
        status["succeeded"] = ctx.indexes.succeeded.total()
        status["completedIndexes"] = str(ctx.indexes.succeeded)
        if spec.backoff_limit_per_index is not None:
            status["failedIndexes"] = str(ctx.indexes.failed)
    status["uncountedTerminatedPods"] = {"succeeded": keep_s, "failed": keep_f}

    if finish is None:
        return None
    if finish.ctype == c.FAILURE_TARGET:
        conds.append(C.new(c.FAILURE_TARGET, "True", finish.reason, finish.message, now))
        return Finish(c.FAILED, finish.reason, finish.message)
    if finish.ctype == c.SUCCESS_CRITERIA_MET:
        if not C.is_true(conds, c.SUCCESS_CRITERIA_MET):
            conds.append(C.new(c.SUCCESS_CRITERIA_MET, "True", finish.reason, finish.message, now))
        return Finish(c.COMPLETE, finish.reason, finish.message)
    return finish


def _enact_finished(
    spec: JobSpec,
    status: Obj,
    conds: list[Obj],
    finish: Finish | None,
    ctx: ManageContext,
    out: JobPlan,
    now: datetime,
) -> None:
    """Write Complete / Failed once every pod is counted and none is still terminating."""
    if finish is None:
        return
    unc = status["uncountedTerminatedPods"]
    if unc["succeeded"] or unc["failed"] or ctx.terminating > 0:
        return
    C.ensure(conds, finish.ctype, "True", finish.reason, finish.message, now)
    if finish.ctype == c.COMPLETE:
        status["completionTime"] = format_time(now)
        if spec.completions is not None and int(status.get("succeeded") or 0) > spec.completions:
            out.events.append(
                JobEvent(
                    c.WARNING,
                    c.EVENT_TOO_MANY_SUCCEEDED,
                    "Too many succeeded pods running after completion count reached",
                )
            )
        out.events.append(JobEvent(c.NORMAL, c.EVENT_COMPLETED, "Job completed"))
    else:
        out.events.append(JobEvent(c.WARNING, finish.reason, finish.message))
    if spec.ttl_seconds_after_finished is not None:
        if spec.ttl_seconds_after_finished <= 0:
            out.requeue(0.001)
        else:
            out.requeue(float(spec.ttl_seconds_after_finished))


__all__ = ["Finish", "JobEvent", "JobPlan", "PodDeletion", "is_finished", "plan_job", "pods_for_removal"]
