"""Choosing jobs the way squeue, sacct and scancel options do (-j, -u, -p, -t, -n, -A, -q),
and what scancel does to a job (pure: objects in, patches out)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubehpc.slurm import translate as T
from kubehpc.slurm.jobs import ANN_CANCELLED, COMPACT, SlurmJob

Obj = dict[str, Any]
ACTIVE = frozenset({"PENDING", "RUNNING", "COMPLETING"})
_BY_COMPACT = {v: k for k, v in COMPACT.items()}


class SelectError(ValueError):
    pass


def parse_states(text: str) -> set[str] | None:
    """``-t PD,R`` / ``--state=pending,running`` -> state names; None for ``all``."""
    out: set[str] = set()
    for raw in (t.strip() for t in text.split(",")):
        if not raw:
            continue
        up = raw.upper()
        if up == "ALL":
            return None
        if up in _BY_COMPACT:
            out.add(_BY_COMPACT[up])
        elif up in COMPACT or up == "CANCELED":
            out.add("CANCELLED" if up == "CANCELED" else up)
        else:
            known = ", ".join(f"{k} ({v})" for k, v in COMPACT.items())
            raise SelectError(f'invalid state "{raw}"; use {known} or all')
    return out


@dataclass(frozen=True)
class JobRef:
    job_id: int
    task: int | None = None


def parse_job_ids(texts: Sequence[str]) -> list[JobRef]:
    """``12``, ``12_3``, ``12_[1-3,5]`` and comma lists."""
    refs: list[JobRef] = []
    for text in texts:
        for piece in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", text):
            piece = piece.strip().strip(",")
            if not piece:
                continue
            m = re.fullmatch(r"(\d+)(?:_(\d+|\[[\d,\-]+\]))?", piece)
            if not m:
                raise SelectError(f'invalid job id "{piece}"')
            job = int(m.group(1))
            task = m.group(2)
            if task is None:
                refs.append(JobRef(job))
            elif task.startswith("["):
                for part in task[1:-1].split(","):
                    lo, _, hi = part.partition("-")
                    refs += [JobRef(job, t) for t in range(int(lo), int(hi or lo) + 1)]
            else:
                refs.append(JobRef(job, int(task)))
    return refs


@dataclass
class Filter:
    refs: list[JobRef] = field(default_factory=list)
    users: set[str] = field(default_factory=set)
    partitions: set[str] = field(default_factory=set)
    states: set[str] | None = None
    names: set[str] = field(default_factory=set)
    accounts: set[str] = field(default_factory=set)
    qos: set[str] = field(default_factory=set)

    def matches(self, r: SlurmJob) -> bool:
        if self.refs and not any(_ref_matches(ref, r) for ref in self.refs):
            return False
        checks = (
            (self.users, r.user),
            (self.partitions, r.partition),
            (self.names, r.name),
            (self.accounts, r.account),
            (self.qos, r.qos),
        )
        if any(wanted and value not in wanted for wanted, value in checks):
            return False
        return self.states is None or r.state in self.states


def _ref_matches(ref: JobRef, r: SlurmJob) -> bool:
    if ref.task is None:
        return ref.job_id in (r.numeric_id, r.array_job_id)
    if r.array_job_id != ref.job_id or r.array_task is None:
        return False
    if r.array_task.isdigit():
        return int(r.array_task) == ref.task
    return ref.task in _pending_ids(r.array_task)


def _pending_ids(text: str) -> set[int]:
    """The task ids of a pending-tasks row (``2-5,7%2``: 2, 3, 4, 5 and 7)."""
    ids: set[int] = set()
    for piece in text.partition("%")[0].split(","):
        lo, _, hi = piece.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            ids.update(range(int(lo), int(hi or lo) + 1))
    return ids


def split_list(values: Sequence[str] | None) -> set[str]:
    return {v.strip() for text in values or () for v in text.split(",") if v.strip()}


def cancel_patch(now_iso: str) -> Obj:
    """scancel of a whole job: marked cancelled, out of its queue, and suspended (the Job
    controller then stops its pods); the Job stays for sacct."""
    return {
        "metadata": {
            "annotations": {ANN_CANCELLED: now_iso, T.ANN_HOLD: None},
            "labels": {T.QUEUE_LABEL: None},
        },
        "spec": {"suspend": True},
    }
