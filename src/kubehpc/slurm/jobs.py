"""Slurm's view of kubehpc objects: a Job made by ``kubehpc sbatch`` (and its pods) as one or
more :class:`SlurmJob` records, the rows of squeue, sacct and scontrol.

States (Slurm's names) from what the objects say:

* COMPLETED — Job condition Complete (for an array task: its index is in completedIndexes);
* TIMEOUT — Job condition Failed with reason DeadlineExceeded (the -t limit);
* CANCELLED — the ``slurm.kubehpc.io/cancelled`` annotation (``kubehpc scancel``);
* FAILED — any other Failed condition (array task: its index is in failedIndexes);
* RUNNING — a pod of the job is bound to a node and not finished;
* PENDING — everything else, with a reason: the hold annotation (JobHeldUser, Dependency,
  BeginTime), Resources (pods the scheduler could not place), Priority (suspended, waiting
  for its queue to admit it), or None (just submitted).

An array is one record per running or finished task (``100_3``) plus one record for all its
pending tasks (``100_[4-16%2]``), as squeue shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubehpc.slurm import hostlist
from kubehpc.slurm import translate as T
from kubehpc.slurm.mapping import FALLBACK_PARTITION
from kubehpc.slurm.specs import compress_ids, parse_array
from kubehpc.store.client import Client, ListOptions

Obj = dict[str, Any]
ANN_CANCELLED = f"{T.GROUP}/cancelled"
ANN_CANCELLED_TASKS = f"{T.GROUP}/cancelled-tasks"
"""Array task ids scancel stopped one by one (their indexes then count as failed)."""
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

COMPACT = {
    "PENDING": "PD",
    "RUNNING": "R",
    "COMPLETED": "CD",
    "FAILED": "F",
    "TIMEOUT": "TO",
    "CANCELLED": "CA",
    "COMPLETING": "CG",
}


def parse_time(value: str | None) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@dataclass
class SlurmJob:
    job_id: str
    """As squeue prints it: ``100``, ``100_3`` or ``100_[4-16%2]``."""
    numeric_id: int
    array_job_id: int | None
    array_task: str | None
    name: str
    user: str
    partition: str
    account: str
    qos: str
    state: str
    reason: str
    nodes: int
    cpus: int
    gpus: int
    time_limit_s: int | None
    submit_time: float | None
    start_time: float | None
    end_time: float | None
    node_names: list[str] = field(default_factory=list)
    exit_code: int = 0
    signal: int = 0
    work_dir: str = ""
    command: str = ""
    dependency: str = ""
    namespace: str = ""
    k8s_name: str = ""
    priority: int = 0
    nice: int = 0

    @property
    def compact_state(self) -> str:
        return COMPACT.get(self.state, self.state[:2])

    @property
    def finished(self) -> bool:
        return self.state in ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED")

    @property
    def nodelist(self) -> str:
        return hostlist.compress(sorted(set(self.node_names), key=hostlist.natural_key))

    def elapsed(self, now: float) -> float:
        if self.start_time is None:
            return 0.0
        return max(0.0, (self.end_time or now) - self.start_time)

    @property
    def nodelist_or_reason(self) -> str:
        if self.state == "PENDING":
            return f"({self.reason})"
        return self.nodelist


def array_task_job_id(array_id: int, index: int, count: int) -> int:
    """The job id of an array's task at ``index``, numbered as Slurm does: the last task keeps
    the array's id, the others take the ids after it (array 3 of tasks 1,3,5: 4, 5, 3)."""
    return array_id if index == count - 1 else array_id + index + 1


def is_slurm_job(job: Obj) -> bool:
    return T.LABEL_JOB_ID in ((job.get("metadata") or {}).get("labels") or {})


def _conditions(job: Obj) -> dict[str, Obj]:
    conds = (job.get("status") or {}).get("conditions") or []
    return {c.get("type", ""): c for c in conds if c.get("status") == "True"}


def _index_set(text: str | None) -> set[int]:
    out: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def pod_index(pod: Obj) -> int:
    meta = pod.get("metadata") or {}
    value = (meta.get("annotations") or {}).get(COMPLETION_INDEX) or (meta.get("labels") or {}).get(
        COMPLETION_INDEX
    )
    return int(value) if value is not None and str(value).isdigit() else 0


def _terminated(pod: Obj) -> Obj | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated")
        if term:
            return dict(term)
    return None


def _pod_live(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return bool((pod.get("spec") or {}).get("nodeName")) and phase not in ("Succeeded", "Failed")


def _unschedulable(pod: Obj) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return True
    return False


def records_for(job: Obj, pods: list[Obj]) -> list[SlurmJob]:
    """The Slurm records of one Job made by sbatch, with the pods it owns."""
    meta = job.get("metadata") or {}
    ann = meta.get("annotations") or {}
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    job_id = int(meta["labels"][T.LABEL_JOB_ID])
    limit = ann.get(T.ANN_TIME_LIMIT)
    base = SlurmJob(
        job_id=str(job_id),
        numeric_id=job_id,
        array_job_id=None,
        array_task=None,
        name=ann.get(T.ANN_JOB_NAME, meta.get("name", "")),
        user=ann.get(T.ANN_USER, ""),
        # sbatch without -p (and no mapped default): the partition sinfo shows every node in.
        partition=ann.get(T.ANN_PARTITION) or FALLBACK_PARTITION,
        account=ann.get(T.ANN_ACCOUNT, ""),
        qos=ann.get(T.ANN_QOS, ""),
        state="PENDING",
        reason="None",
        nodes=int(ann.get(T.ANN_NODES, "1")),
        cpus=int(ann.get(T.ANN_CPUS, "1")) * int(ann.get(T.ANN_NODES, "1")),
        gpus=int(ann.get(T.ANN_GPUS, "0")),
        time_limit_s=int(limit) if limit else None,
        submit_time=parse_time(meta.get("creationTimestamp")),
        start_time=parse_time(status.get("startTime")),
        end_time=parse_time(status.get("completionTime")),
        work_dir=ann.get(T.ANN_WORK_DIR, ""),
        command=ann.get(T.ANN_SCRIPT_NAME, ""),
        dependency=ann.get(T.ANN_DEPENDENCY, ""),
        namespace=meta.get("namespace", ""),
        k8s_name=meta.get("name", ""),
        nice=int(ann.get(T.ANN_NICE, "0") or 0),
        # kubehpc has no Slurm priority numbers; as in Slurm, a user-held job has priority 0.
        priority=0 if T.HOLD_USER in str(ann.get(T.ANN_HOLD, "")) else 1,
    )
    conds = _conditions(job)
    cancelled = ann.get(ANN_CANCELLED)
    if T.ANN_ARRAY in ann:
        return _array_records(base, job, pods, ann, conds, cancelled)
    live = [p for p in pods if _pod_live(p)]
    base.node_names = [p["spec"]["nodeName"] for p in pods if (p.get("spec") or {}).get("nodeName")]
    if ann.get(T.ANN_ALLOCATED_NODES):
        # The allocation as recorded once every pod was bound: the pods may be gone since.
        base.node_names = str(ann[T.ANN_ALLOCATED_NODES]).split(",")
    first = next((p for p in pods if pod_index(p) == 0 and _terminated(p)), None)
    pod_end = None
    if first is not None:
        term = _terminated(first) or {}
        base.exit_code, base.signal = _exit(term)
        pod_end = parse_time(term.get("finishedAt"))
    if cancelled:
        base.state, base.end_time = "CANCELLED", base.end_time or parse_time(cancelled)
    elif "Complete" in conds:
        base.state = "COMPLETED"
        base.end_time = base.end_time or parse_time(conds["Complete"].get("lastTransitionTime")) or pod_end
    elif "Failed" in conds:
        reason = conds["Failed"].get("reason")
        base.state = "TIMEOUT" if reason == "DeadlineExceeded" else "FAILED"
        base.end_time = base.end_time or parse_time(conds["Failed"].get("lastTransitionTime")) or pod_end
        if base.state == "FAILED" and base.exit_code == 0 and not base.signal:
            base.exit_code = 1
    elif live and not spec.get("suspend"):
        base.state = "RUNNING"
    else:
        base.reason = _pending_reason(ann, spec, pods)
        base.start_time = None
        base.node_names = []
    return [base]


def _exit(term: Obj) -> tuple[int, int]:
    code = int(term.get("exitCode", 0))
    if code > 128 and term.get("reason") != "Completed":
        return 0, code - 128
    return code, 0


def _pending_reason(ann: Obj, spec: Obj, pods: list[Obj]) -> str:
    if ann.get(T.ANN_HOLD):
        return str(ann[T.ANN_HOLD]).split(",")[0]
    if any(_unschedulable(p) for p in pods):
        return "Resources"
    if spec.get("suspend"):
        return "Priority"
    return "None"


def _array_records(
    base: SlurmJob, job: Obj, pods: list[Obj], ann: Obj, conds: dict[str, Obj], cancelled: str | None
) -> list[SlurmJob]:
    from dataclasses import replace

    ids = parse_array(ann[T.ANN_ARRAY]).task_ids
    status = job.get("status") or {}
    done = _index_set(status.get("completedIndexes"))
    failed = _index_set(status.get("failedIndexes"))
    by_index: dict[int, Obj] = {}
    for p in pods:
        by_index.setdefault(pod_index(p), p)
        if _pod_live(p):
            by_index[pod_index(p)] = p
    out: list[SlurmJob] = []
    pending: list[int] = []
    cancelled_tasks = {int(t) for t in str(ann.get(ANN_CANCELLED_TASKS, "")).split(",") if t.isdigit()}
    timed_out = "Failed" in conds and conds["Failed"].get("reason") == "DeadlineExceeded"
    for index, task in enumerate(ids):
        pod = by_index.get(index)
        rec = replace(
            base,
            job_id=f"{base.numeric_id}_{task}",
            numeric_id=array_task_job_id(base.numeric_id, index, len(ids)),
            array_job_id=base.numeric_id,
            array_task=str(task),
            node_names=[pod["spec"]["nodeName"]] if pod and (pod.get("spec") or {}).get("nodeName") else [],
            cpus=base.cpus,
        )
        term = _terminated(pod) if pod else None
        if term:
            rec.exit_code, rec.signal = _exit(term)
            rec.start_time = parse_time(term.get("startedAt"))
            rec.end_time = parse_time(term.get("finishedAt"))
        if index in done:
            rec.state = "COMPLETED"
        elif index in failed:
            rec.state = "CANCELLED" if cancelled or task in cancelled_tasks else "FAILED"
        elif pod is not None and _pod_live(pod) and not cancelled:
            rec.state = "RUNNING"
            rec.start_time = parse_time((pod.get("status") or {}).get("startTime")) or rec.start_time
            rec.end_time = None
        elif cancelled or timed_out or "Failed" in conds or "Complete" in conds:
            rec.state = "CANCELLED" if cancelled else ("TIMEOUT" if timed_out else "CANCELLED")
            if rec.end_time is None and rec.start_time is None:
                rec.end_time = parse_time(cancelled) if cancelled else None
        else:
            pending.append(task)
            continue
        out.append(rec)
    if pending:
        throttle = ann.get(T.ANN_ARRAY_THROTTLE)
        text = compress_ids(tuple(pending)) + (f"%{throttle}" if throttle else "")
        single = len(pending) == 1 and not throttle
        rec = replace(
            base,
            job_id=f"{base.numeric_id}_{text}" if single else f"{base.numeric_id}_[{text}]",
            array_job_id=base.numeric_id,
            array_task=text,
            start_time=None,
            end_time=None,
            node_names=[],
        )
        rec.reason = _pending_reason(ann, job.get("spec") or {}, [p for p in pods if not _pod_live(p)])
        if rec.reason == "None" and out:
            rec.reason = "JobArrayTaskLimit" if throttle else "Resources"
        out.insert(0, rec)
    return out


def sbatch_objects(
    client: Client, namespace: str | None = None, read_only: bool = False
) -> tuple[list[Obj], list[Obj]]:
    """The Jobs sbatch made and their pods (both carry the job-id label), in one read each.
    ``read_only``: the caller never changes them (see ListOptions.read_only)."""
    opts = ListOptions(namespace=namespace, label_selector=T.LABEL_JOB_ID, read_only=read_only)
    return client.list("batch/v1", "Job", opts).items, client.list("v1", "Pod", opts).items


def collect(jobs: list[Obj], pods: list[Obj]) -> list[SlurmJob]:
    """Records of every sbatch Job in ``jobs`` (others are skipped), with their pods, ordered
    by job id."""
    by_uid: dict[str, list[Obj]] = {}
    for p in pods:
        for ref in (p.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("kind") == "Job":
                by_uid.setdefault(ref.get("uid", ""), []).append(p)
    out: list[SlurmJob] = []
    for j in jobs:
        if is_slurm_job(j):
            out += records_for(j, by_uid.get((j.get("metadata") or {}).get("uid", ""), []))
    out.sort(key=lambda r: r.array_job_id or r.numeric_id)  # stable: an array's rows stay in order
    return out
