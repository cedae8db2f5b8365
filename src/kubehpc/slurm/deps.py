"""When a held job may start: ``--dependency`` and ``--begin`` decided from the Slurm records of
the other jobs (pure), and the loop step that applies the decisions through a Client.

Per term, as Slurm decides them:

* ``after:ID[+M]`` — satisfied once ID has started (or ended without starting), plus M minutes;
* ``afterany:ID`` / ``afterburstbuffer:ID`` — once ID has ended, however;
* ``afterok:ID`` — once ID has COMPLETED; never, once it ended otherwise;
* ``afternotok:ID`` — once ID ended FAILED, TIMEOUT or CANCELLED; never, once it COMPLETED;
* ``aftercorr:ID`` — read as ``afterok:ID`` (task-to-task pairing is not modelled);
* ``singleton`` — once no earlier job of the same name and user is pending or running.

An array ID without ``_task`` stands for all its tasks. Terms joined by ``,`` all must be
satisfied; by ``?`` any one. A job whose dependency can never be satisfied is cancelled (as
Slurm does with ``kill_invalid_depend``), which is what ``afterok`` on a failed job needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from kubehpc.slurm import translate as T
from kubehpc.slurm.jobs import SlurmJob, collect, sbatch_objects
from kubehpc.slurm.select import cancel_patch
from kubehpc.slurm.specs import Dependency, DependencyTarget, DependencyTerm, parse_dependency
from kubehpc.store.client import Client, PatchType

Obj = dict[str, Any]
ENDED = frozenset({"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"})


class Verdict(Enum):
    WAITING = "waiting"
    SATISFIED = "satisfied"
    NEVER = "never"


def _targets(records: Sequence[SlurmJob], t: DependencyTarget) -> list[SlurmJob]:
    if t.task_id is not None:
        return [r for r in records if r.array_job_id == t.job_id and r.array_task == str(t.task_id)]
    return [r for r in records if r.numeric_id == t.job_id or r.array_job_id == t.job_id]


def _one(kind: str, recs: list[SlurmJob], t: DependencyTarget, now: float) -> Verdict:
    if not recs:
        # A job that is gone (or never was): nothing to wait for, and no success to see.
        return Verdict.NEVER if kind in ("afterok", "afternotok", "aftercorr") else Verdict.SATISFIED
    if kind == "after":
        if any(r.state == "PENDING" for r in recs):
            return Verdict.WAITING
        started = max((r.start_time or r.end_time or now) for r in recs)
        return Verdict.SATISFIED if now >= started + t.delay_minutes * 60 else Verdict.WAITING
    if kind in ("afterok", "aftercorr"):
        if any(r.state in ENDED and r.state != "COMPLETED" for r in recs):
            return Verdict.NEVER
        return Verdict.SATISFIED if all(r.state == "COMPLETED" for r in recs) else Verdict.WAITING
    if kind == "afternotok":
        if not all(r.state in ENDED for r in recs):
            return Verdict.WAITING
        return Verdict.SATISFIED if any(r.state != "COMPLETED" for r in recs) else Verdict.NEVER
    return Verdict.SATISFIED if all(r.state in ENDED for r in recs) else Verdict.WAITING  # afterany


def _term(term: DependencyTerm, me: SlurmJob, records: Sequence[SlurmJob], now: float) -> Verdict:
    if term.kind == "singleton":
        others = [
            r
            for r in records
            if r.name == me.name
            and r.user == me.user
            and (r.array_job_id or r.numeric_id) < (me.array_job_id or me.numeric_id)
            and r.state not in ENDED
        ]
        return Verdict.WAITING if others else Verdict.SATISFIED
    verdicts = [_one(term.kind, _targets(records, t), t, now) for t in term.targets]
    return _combine(verdicts, any_of=False)


def _combine(verdicts: Iterable[Verdict], any_of: bool) -> Verdict:
    vs = list(verdicts)
    if any_of:
        if Verdict.SATISFIED in vs:
            return Verdict.SATISFIED
        return Verdict.NEVER if vs and all(v is Verdict.NEVER for v in vs) else Verdict.WAITING
    if Verdict.NEVER in vs:
        return Verdict.NEVER
    return Verdict.SATISFIED if all(v is Verdict.SATISFIED for v in vs) else Verdict.WAITING


def evaluate(dep: Dependency, me: SlurmJob, records: Sequence[SlurmJob], now: float) -> Verdict:
    """Whether ``me`` may start as far as ``dep`` goes, given every job's record."""
    return _combine((_term(t, me, records, now) for t in dep.terms), dep.any_of)


def decide(job: Obj, records: Sequence[SlurmJob], now: float) -> str | None:
    """``release``, ``cancel`` or None (keep waiting) for a Job held on Dependency / BeginTime
    (a user hold is only lifted by ``scontrol release``)."""
    ann = (job.get("metadata") or {}).get("annotations") or {}
    holds = set(str(ann.get(T.ANN_HOLD, "")).split(",")) - {""}
    if not holds or T.HOLD_USER in holds:
        return None
    if T.HOLD_BEGIN in holds:
        begin = ann.get(T.ANN_BEGIN)
        if begin and datetime.fromisoformat(begin.replace("Z", "+00:00")).timestamp() > now:
            return None
    if T.HOLD_DEPENDENCY in holds and ann.get(T.ANN_DEPENDENCY):
        job_id = int(job["metadata"]["labels"][T.LABEL_JOB_ID])
        me = next((r for r in records if (r.array_job_id or r.numeric_id) == job_id), None)
        if me is None:
            return None
        verdict = evaluate(parse_dependency(ann[T.ANN_DEPENDENCY]), me, records, now)
        if verdict is Verdict.NEVER:
            return "cancel"
        if verdict is Verdict.WAITING:
            return None
    return "release"


def reconcile_holds(
    client: Client,
    now: float,
    kueue_manages: bool = False,
    namespace: str | None = None,
    objects: tuple[list[Obj], list[Obj]] | None = None,
) -> list[str]:
    """One pass over every sbatch Job: release or cancel held jobs whose time has come.
    Returns what it did (``release 12``, ``cancel 13``) for logs and tests. The runtime runs
    this on a timer or on Job watch events. ``objects``: the sbatch Jobs and pods, when the
    caller has just read them (:func:`~kubehpc.slurm.jobs.sbatch_objects`)."""
    jobs, pods = objects or sbatch_objects(client, namespace)
    records = collect(jobs, pods)
    done: list[str] = []
    now_iso = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for job in jobs:
        action = decide(job, records, now)
        if action is None:
            continue
        meta = job["metadata"]
        patch = T.release_patch(job, kueue_manages) if action == "release" else cancel_patch(now_iso)
        client.patch("batch/v1", "Job", meta["name"], patch, PatchType.MERGE, meta.get("namespace"))
        done.append(f"{action} {meta['labels'][T.LABEL_JOB_ID]}")
    return done
