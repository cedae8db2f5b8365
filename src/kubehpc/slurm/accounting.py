"""Slurm accounting (``sacct -P`` or ``sacct --json``) -> the simulator's workload file
(``kind: SimWorkload``), so a site can replay its own history on kubehpc's scheduler.

One simulated job per Slurm job (array tasks are jobs; steps such as ``123.batch`` are
skipped): submitted at its Submit time (seconds after the first submission), running for its
Elapsed time, with its Timelimit as the requested time, its partition's queue (through the
SlurmMapping), its user, and one pod set of NNodes pods, each asking for its share of the
job's CPUs, memory and GPUs (from AllocTRES, else ReqTRES / AllocCPUS / ReqMem). Jobs that
never ran (no Start, or no Elapsed) cannot be replayed; they are counted in the report.

``sacct -P`` needs at least ``JobID,Submit,Elapsed,NNodes``; useful too: ``Start,Timelimit,
Partition,User,AllocCPUS,AllocTRES,ReqMem,State``. For example: ``sacct -a -P -S 2026-01-01
-o JobID,Submit,Start,Elapsed,Timelimit,Partition,User,NNodes,AllocCPUS,AllocTRES,State``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubehpc.slurm.mapping import SlurmMapping
from kubehpc.slurm.specs import mb_quantity
from kubehpc.slurm.timefmt import TimeFormatError, parse_time_limit

Obj = dict[str, Any]
REQUIRED = ("JobID", "Submit", "Elapsed", "NNodes")


class AccountingError(ValueError):
    pass


@dataclass
class _Job:
    job_id: str
    submit: float
    elapsed: float
    limit_s: int | None
    partition: str
    user: str
    nodes: int
    cpus: int
    mem_mb: int
    gpus: int


def _elapsed(text: str) -> float:
    """``[D-]HH:MM:SS`` (sacct's Elapsed) in seconds."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d+):(\d+)", text.strip())
    if not m:
        raise ValueError(f'bad Elapsed "{text}"')
    d, h, mi, s = (int(g or 0) for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def _tres(text: str) -> dict[str, str]:
    out = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key:
            out[key.strip()] = value.strip()
    return out


def _mem_mb(text: str) -> int:
    """A TRES or ReqMem memory value (``4G``, ``4000M``, ``4Gn``, ``2Gc``) in MiB per job."""
    m = re.fullmatch(r"([\d.]+)([KMGT]?)([nc]?)", text.strip())
    if not m:
        return 0
    factor = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[m.group(2)]
    return int(float(m.group(1)) * factor)


def _ts(text: str) -> float | None:
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    return datetime.fromisoformat(text).timestamp()


def parse_sacct_parsable(text: str, source: str) -> tuple[list[_Job], list[str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return [], []
    header = [h.strip() for h in lines[0].rstrip("|").split("|")]
    missing = [f for f in REQUIRED if f not in header]
    if missing:
        raise AccountingError(f"{source}: line 1: the header lacks {', '.join(missing)} (sacct -P -o ...)")
    jobs: list[_Job] = []
    skipped: list[str] = []
    for number, line in enumerate(lines[1:], start=2):
        cells = (
            line.rstrip("|").split("|")
            if line.endswith("|") and len(header) < line.count("|") + 1
            else line.split("|")
        )
        row = dict(zip(header, cells, strict=False))
        job_id = row["JobID"]
        if "." in job_id:
            continue  # a step (123.batch, 123.0): part of its job
        try:
            submit = _ts(row["Submit"])
            elapsed = _elapsed(row["Elapsed"])
        except ValueError as exc:
            raise AccountingError(f"{source}: line {number}: {exc}") from None
        never_started = "Start" in row and _ts(row["Start"]) is None
        if submit is None or elapsed <= 0 or never_started:
            skipped.append(job_id)
            continue
        tres = _tres(row.get("AllocTRES") or row.get("ReqTRES") or "")
        nodes = int(row.get("NNodes") or tres.get("node") or 1)
        cpus = int(row.get("AllocCPUS") or tres.get("cpu") or nodes)
        mem = _mem_mb(tres.get("mem", "")) or _req_mem(row.get("ReqMem", ""), cpus, nodes)
        gpus = int(tres.get("gres/gpu", "0") or 0)
        try:
            limit = parse_time_limit(row["Timelimit"]) if row.get("Timelimit") else None
        except TimeFormatError:
            limit = None
        jobs.append(
            _Job(
                job_id,
                submit,
                elapsed,
                limit,
                row.get("Partition", ""),
                row.get("User", ""),
                nodes,
                cpus,
                mem,
                gpus,
            )
        )
    return jobs, skipped


def _req_mem(text: str, cpus: int, nodes: int) -> int:
    mb = _mem_mb(text)
    if text.endswith("c"):
        return mb * cpus
    if text.endswith("n"):
        return mb * nodes
    return mb


def parse_sacct_json(text: str, source: str) -> tuple[list[_Job], list[str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AccountingError(f"{source}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    jobs: list[_Job] = []
    skipped: list[str] = []
    for rec in data.get("jobs") or []:
        array = rec.get("array") or {}
        task = _number(array.get("task_id"))
        job_id = (
            f"{_number(array.get('job_id'))}_{task}"
            if task is not None and _number(array.get("job_id"))
            else str(rec.get("job_id"))
        )
        t = rec.get("time") or {}
        submit, start, elapsed = (
            _number(t.get("submission")),
            _number(t.get("start")),
            _number(t.get("elapsed")),
        )
        if not submit or not start or not elapsed:
            skipped.append(job_id)
            continue
        counts = {
            (x.get("type"), x.get("name") or ""): int(x.get("count") or 0)
            for x in (rec.get("tres") or {}).get("allocated") or []
        }
        nodes = int(rec.get("allocation_nodes") or counts.get(("node", ""), 1) or 1)
        limit = _number(t.get("limit"))
        jobs.append(
            _Job(
                job_id=job_id,
                submit=float(submit),
                elapsed=float(elapsed),
                limit_s=int(limit) * 60 if limit else None,
                partition=str(rec.get("partition") or ""),
                user=str(rec.get("user") or ""),
                nodes=nodes,
                cpus=counts.get(("cpu", ""), nodes),
                mem_mb=counts.get(("mem", ""), 0),
                gpus=counts.get(("gres", "gpu"), 0),
            )
        )
    return jobs, skipped


def _number(value: Any) -> int | None:
    """slurmrestd numbers are plain, or ``{"set": true, "number": N}`` in newer versions."""
    if isinstance(value, dict):
        return int(value["number"]) if value.get("set") and value.get("number") is not None else None
    return int(value) if isinstance(value, (int, float)) else None


def to_workload(jobs: list[_Job], mapping: SlurmMapping | None = None, name: str = "slurm-history") -> Obj:
    mapping = mapping or SlurmMapping()
    first = min((j.submit for j in jobs), default=0.0)
    out = []
    for j in sorted(jobs, key=lambda j: (j.submit, j.job_id)):
        per_node: dict[str, str | int] = {"cpu": str(max(1, -(-j.cpus // j.nodes)))}
        if j.mem_mb:
            per_node["memory"] = mb_quantity(-(-j.mem_mb // j.nodes))
        if j.gpus:
            per_node[mapping.gpu_resource] = -(-j.gpus // j.nodes)
        job: Obj = {
            "name": f"job-{j.job_id}",
            "submit": j.submit - first,
            "runtime": j.elapsed,
            "queue": mapping.queue_for(j.partition) if j.partition else "default",
            "user": j.user or "unknown",
            "podSets": [{"name": "nodes", "count": j.nodes, "requests": per_node}],
        }
        if j.limit_s:
            job["requestedTime"] = j.limit_s
        out.append(job)
    return {
        "apiVersion": "kubehpc.io/v1alpha1",
        "kind": "SimWorkload",
        "metadata": {"name": name},
        "spec": {"jobs": out},
    }


def convert_sacct(text: str, source: str, mapping: SlurmMapping | None = None) -> tuple[Obj, list[str]]:
    """``sacct -P`` text or ``sacct --json`` -> (SimWorkload document, report lines)."""
    jobs, skipped = (
        parse_sacct_json(text, source)
        if text.lstrip().startswith("{")
        else parse_sacct_parsable(text, source)
    )
    report = []
    if skipped:
        report.append(f"{len(skipped)} jobs never ran (no start or no elapsed time) and are left out")
    return to_workload(jobs, mapping), report
