"""squeue and sacct: Slurm job records as Slurm prints them (pure: records in, text out)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from kubehpc.api.kinds.kueue.workload import ESTIMATED_START_ANNOTATION
from kubehpc.slurm.columns import Column, named_format, percent_format, render, sacct_table
from kubehpc.slurm.jobs import SlurmJob
from kubehpc.slurm.timefmt import (
    format_elapsed,
    format_sacct_elapsed,
    format_scontrol_time,
    format_time_limit,
)

SQUEUE_DEFAULT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
SQUEUE_LONG = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
SQUEUE_START = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
"""squeue --start: Slurm's own format for it (with --sort=S --states=PENDING)."""
SACCT_DEFAULT = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
SACCT_LONG = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode,Elapsed,Start,End,NodeList"


def timestamp(t: float | None, tz_offset_s: int | None = None) -> str:
    """Slurm's ``2026-12-02T12:00:00`` (local time, or UTC + ``tz_offset_s``), N/A for none."""
    if t is None:
        return "N/A"
    if tz_offset_s is None:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t + tz_offset_s))


def squeue_columns(now: float, tz: int | None = None) -> dict[str, Column[SlurmJob]]:
    def col(header: str, fn: Any, cut: bool = True) -> Column[SlurmJob]:
        return Column(header, fn, cut)

    return {
        "i": col("JOBID", lambda r: r.job_id),
        "A": col("JOBID", lambda r: str(r.numeric_id)),
        "F": col("ARRAY_JOB_ID", lambda r: str(r.array_job_id or r.numeric_id)),
        "K": col("ARRAY_TASK_ID", lambda r: r.array_task or "N/A"),
        "P": col("PARTITION", lambda r: r.partition),
        "j": col("NAME", lambda r: r.name),
        "u": col("USER", lambda r: r.user),
        "t": col("ST", lambda r: r.compact_state),
        "T": col("STATE", lambda r: r.state),
        "M": col("TIME", lambda r: format_elapsed(r.elapsed(now)), cut=False),
        "l": col("TIME_LIMIT", lambda r: format_time_limit(r.time_limit_s), cut=False),
        "L": col("TIME_LEFT", lambda r: _time_left(r, now), cut=False),
        "D": col("NODES", lambda r: str(r.nodes)),
        "R": col("NODELIST(REASON)", lambda r: r.nodelist_or_reason),
        "N": col("NODELIST", lambda r: r.nodelist),
        "r": col("REASON", lambda r: r.reason if r.state == "PENDING" else "None"),
        "C": col("CPUS", lambda r: str(r.cpus)),
        "b": col("TRES_PER_NODE", lambda r: f"gres/gpu:{r.gpus}" if r.gpus else "N/A"),
        "a": col("ACCOUNT", lambda r: r.account or "(null)"),
        "q": col("QOS", lambda r: r.qos or "(null)"),
        "V": col("SUBMIT_TIME", lambda r: timestamp(r.submit_time, tz), cut=False),
        "S": col("START_TIME", lambda r: timestamp(r.start_time, tz), cut=False),
        "e": col("END_TIME", lambda r: timestamp(r.end_time, tz), cut=False),
        "Z": col("WORK_DIR", lambda r: r.work_dir),
        "o": col("COMMAND", lambda r: r.command),
        "E": col("DEPENDENCY", lambda r: r.dependency or "(null)"),
        # The nodes the scheduler plans a pending job on: kubehpc's estimates are per quota,
        # not per node, so it names none — as Slurm does for a job it has not planned.
        "Y": col("SCHEDNODES", lambda r: "(null)"),
        "y": col("NICE", lambda r: str(r.nice)),
        "Q": col("PRIORITY", lambda r: str(r.priority)),
    }


_LONG_NAMES = {
    "JobID": "i",
    "JobArrayID": "i",
    "ArrayJobID": "F",
    "ArrayTaskID": "K",
    "Partition": "P",
    "Name": "j",
    "UserName": "u",
    "StateCompact": "t",
    "State": "T",
    "TimeUsed": "M",
    "TimeLimit": "l",
    "TimeLeft": "L",
    "NumNodes": "D",
    "ReasonList": "R",
    "NodeList": "N",
    "Reason": "r",
    "NumCPUs": "C",
    "tres-per-node": "b",
    "Account": "a",
    "QOS": "q",
    "SubmitTime": "V",
    "StartTime": "S",
    "EndTime": "e",
    "WorkDir": "Z",
    "Command": "o",
    "Dependency": "E",
    "SchedNodes": "Y",
    "Nice": "y",
    "Priority": "Q",
}


def with_estimated_starts(
    records: Sequence[SlurmJob], starts: Mapping[tuple[str, str], float]
) -> list[SlurmJob]:
    """squeue --start: the pending records, each with its Job's estimated start (``starts``:
    (namespace, Job name) -> seconds; what the scheduler wrote on the Job's Workload) as its
    START_TIME, in order of increasing start time as ``--sort=S`` gives (unknown, N/A, first,
    as Slurm's zero start time sorts), ties by job id."""
    out = [
        replace(r, start_time=starts.get((r.namespace, r.k8s_name))) for r in records if r.state == "PENDING"
    ]
    out.sort(key=lambda r: (r.start_time or 0.0, r.array_job_id or r.numeric_id, r.job_id))
    return out


def estimated_starts_of(workloads: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """(namespace, Job name) -> estimated start, from the Workloads the scheduler annotated."""
    out: dict[tuple[str, str], float] = {}
    for wl in workloads:
        meta = wl.get("metadata") or {}
        text = (meta.get("annotations") or {}).get(ESTIMATED_START_ANNOTATION)
        if not text:
            continue
        try:
            at = datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        for ref in meta.get("ownerReferences") or ():
            if ref.get("kind") == "Job":
                out[(str(meta.get("namespace") or "default"), str(ref.get("name")))] = at
    return out


def _time_left(r: SlurmJob, now: float) -> str:
    if r.time_limit_s is None:
        return "UNLIMITED"
    return format_elapsed(max(0.0, r.time_limit_s - r.elapsed(now)))


_STATE_ORDER = {"PENDING": 0, "RUNNING": 1, "COMPLETING": 2}


def squeue_order(records: Sequence[SlurmJob]) -> list[SlurmJob]:
    """squeue's default order (``-S P,t,-p``): partition, then pending before running before
    finished, then higher priority, then job id (an array's rows keep their order)."""
    return sorted(
        records,
        key=lambda r: (
            r.partition,
            _STATE_ORDER.get(r.state, 3),
            -r.priority,
            r.array_job_id or r.numeric_id,
        ),
    )


def squeue_text(
    records: Sequence[SlurmJob],
    now: float,
    fmt: str = SQUEUE_DEFAULT,
    long_format: str = "",
    header: bool = True,
    tz: int | None = None,
) -> str:
    cols = squeue_columns(now, tz)
    if long_format:
        fields = named_format(long_format, {k: cols[v] for k, v in _LONG_NAMES.items()}, "squeue")
    else:
        fields = percent_format(fmt, cols, "squeue")
    return render(fields, records, header)


def squeue_json(records: Sequence[SlurmJob], now: float) -> dict[str, Any]:
    """``squeue --json``, shaped as slurmrestd's job records (the fields kubehpc knows)."""
    return {
        "meta": {"plugin": {"type": "openapi/kubehpc", "name": "kubehpc"}},
        "errors": [],
        "jobs": [_json_job(r, now) for r in records],
    }


def _epoch(t: float | None) -> int:
    return int(t) if t is not None else 0


def _json_job(r: SlurmJob, now: float) -> dict[str, Any]:
    return {
        "account": r.account,
        "array_job_id": r.array_job_id or 0,
        "array_task_id": int(r.array_task) if r.array_task and r.array_task.isdigit() else None,
        "array_task_string": r.array_task if r.array_task and not r.array_task.isdigit() else "",
        "command": r.command,
        "current_working_directory": r.work_dir,
        "cpus": r.cpus,
        "dependency": r.dependency,
        "end_time": _epoch(r.end_time),
        "exit_code": r.exit_code,
        "job_id": r.numeric_id,
        "job_state": r.state,
        "name": r.name,
        "node_count": r.nodes,
        "nodes": r.nodelist,
        "partition": r.partition,
        "priority": r.priority,
        "qos": r.qos,
        "start_time": _epoch(r.start_time),
        "state_reason": r.reason if r.state == "PENDING" else "None",
        "submit_time": _epoch(r.submit_time),
        "time_limit": (r.time_limit_s // 60) if r.time_limit_s is not None else None,
        "user_name": r.user,
    }


# --- sacct ---------------------------------------------------------------------------------


def _exit_code(r: SlurmJob) -> str:
    return f"{r.exit_code}:{r.signal}"


def sacct_columns(now: float, tz: int | None = None) -> dict[str, tuple[Column[SlurmJob], int]]:
    def c(header: str, width: int, fn: Any) -> tuple[Column[SlurmJob], int]:
        return Column(header, fn), width

    return {
        "JobID": c("JobID", 12, lambda r: r.job_id),
        "JobIDRaw": c("JobIDRaw", 12, lambda r: str(r.numeric_id)),
        "JobName": c("JobName", 10, lambda r: r.name),
        "Partition": c("Partition", 10, lambda r: r.partition),
        "Account": c("Account", 10, lambda r: r.account),
        "User": c("User", 9, lambda r: r.user),
        "AllocCPUS": c("AllocCPUS", 10, lambda r: str(r.cpus if r.start_time is not None else 0)),
        "ReqCPUS": c("ReqCPUS", 8, lambda r: str(r.cpus)),
        "NNodes": c("NNodes", 8, lambda r: str(r.nodes)),
        "ReqNodes": c("ReqNodes", 8, lambda r: str(r.nodes)),
        "State": c("State", 10, lambda r: r.state),
        "ExitCode": c("ExitCode", 8, _exit_code),
        "Elapsed": c("Elapsed", 10, lambda r: format_sacct_elapsed(r.elapsed(now))),
        "ElapsedRaw": c("ElapsedRaw", 10, lambda r: str(int(r.elapsed(now)))),
        "Timelimit": c("Timelimit", 10, lambda r: format_time_limit(r.time_limit_s)),
        "TimelimitRaw": c(
            "TimelimitRaw", 12, lambda r: str(r.time_limit_s // 60) if r.time_limit_s else "UNLIMITED"
        ),
        "Submit": c("Submit", 19, lambda r: timestamp(r.submit_time, tz)),
        "Start": c("Start", 19, lambda r: timestamp(r.start_time, tz) if r.start_time else "Unknown"),
        "End": c("End", 19, lambda r: timestamp(r.end_time, tz) if r.end_time else "Unknown"),
        "NodeList": c("NodeList", 15, lambda r: r.nodelist or "None assigned"),
        "QOS": c("QOS", 10, lambda r: r.qos or "normal"),
        "WorkDir": c("WorkDir", 20, lambda r: r.work_dir),
        "AllocTRES": c("AllocTRES", 20, _tres),
        "ArrayJobID": c("ArrayJobID", 12, lambda r: str(r.array_job_id or "")),
        "ArrayTaskID": c("ArrayTaskID", 12, lambda r: r.array_task or ""),
    }


def _tres(r: SlurmJob) -> str:
    parts = [f"cpu={r.cpus}", f"node={r.nodes}"]
    if r.gpus:
        parts.append(f"gres/gpu={r.gpus * r.nodes}")
    return ",".join(parts)


def sacct_text(
    records: Sequence[SlurmJob],
    now: float,
    fmt: str = SACCT_DEFAULT,
    parsable: str = "",
    header: bool = True,
    tz: int | None = None,
) -> str:
    return sacct_table(fmt, sacct_columns(now, tz), records, parsable, header)


def sacct_json(records: Sequence[SlurmJob], now: float) -> dict[str, Any]:
    """``sacct --json``: slurmdbd's job records (the fields kubehpc knows)."""
    jobs = []
    for r in records:
        jobs.append(
            {
                "job_id": r.numeric_id,
                "name": r.name,
                "user": r.user,
                "account": r.account,
                "partition": r.partition,
                "qos": r.qos,
                "array": {
                    "job_id": r.array_job_id or 0,
                    "task_id": int(r.array_task) if r.array_task and r.array_task.isdigit() else None,
                },
                "state": {"current": [r.state], "reason": r.reason if r.state == "PENDING" else "None"},
                "exit_code": {"return_code": r.exit_code, "signal": {"id": r.signal}},
                "time": {
                    "elapsed": int(r.elapsed(now)),
                    "submission": _epoch(r.submit_time),
                    "start": _epoch(r.start_time),
                    "end": _epoch(r.end_time),
                    "limit": (r.time_limit_s // 60) if r.time_limit_s is not None else None,
                },
                "allocation_nodes": r.nodes,
                "nodes": r.nodelist,
                "required": {"CPUs": r.cpus},
                "tres": {"allocated": _tres_list(r)},
                "working_directory": r.work_dir,
            }
        )
    return {"meta": {"plugin": {"type": "openapi/kubehpc"}}, "errors": [], "jobs": jobs}


def _tres_list(r: SlurmJob) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "cpu", "count": r.cpus}, {"type": "node", "count": r.nodes}]
    if r.gpus:
        out.append({"type": "gres", "name": "gpu", "count": r.gpus * r.nodes})
    return out


# --- scontrol show job ---------------------------------------------------------------------


def scontrol_job(r: SlurmJob, now: float, tz: int | None = None) -> str:
    lines = [
        [f"JobId={r.numeric_id}", f"JobName={r.name}"]
        + ([f"ArrayJobId={r.array_job_id}", f"ArrayTaskId={r.array_task}"] if r.array_job_id else []),
        [f"UserId={r.user}", f"Account={r.account or '(null)'}", f"QOS={r.qos or 'normal'}"],
        [f"Priority={r.priority}", f"Nice={r.nice}"],
        [
            f"JobState={r.state}",
            f"Reason={r.reason if r.state == 'PENDING' else 'None'}",
            f"Dependency={r.dependency or '(null)'}",
        ],
        [f"ExitCode={_exit_code(r)}"],
        [
            f"RunTime={format_scontrol_time(r.elapsed(now))}",
            f"TimeLimit={format_scontrol_time(r.time_limit_s)}",
        ],
        [f"SubmitTime={timestamp(r.submit_time, tz)}"],
        [
            f"StartTime={timestamp(r.start_time, tz) if r.start_time else 'Unknown'}",
            f"EndTime={timestamp(r.end_time, tz) if r.end_time else 'Unknown'}",
        ],
        [f"Partition={r.partition or '(null)'}"],
        [f"NodeList={r.nodelist or '(null)'}"],
        [f"NumNodes={r.nodes}", f"NumCPUs={r.cpus}", f"TRES={_tres(r)}"],
        [f"Command={r.command}"],
        [f"WorkDir={r.work_dir}"],
        [f"KubernetesJob={r.namespace}/{r.k8s_name}"],
    ]
    return "".join(("   " if i else "") + " ".join(parts) + "\n" for i, parts in enumerate(lines)) + "\n"
