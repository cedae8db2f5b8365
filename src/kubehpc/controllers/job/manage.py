"""Bring the number of running pods to what the Job wants (``manageJob``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubehpc.controllers.job import pods as P
from kubehpc.controllers.job.actions import JobPlan, PodDeletion
from kubehpc.controllers.job.backoff import BackoffPolicy, BackoffRecord
from kubehpc.controllers.job.indexes import (
    IndexState,
    absolute_failure_count,
    first_pending_indexes,
    replacement_failure_counts,
)
from kubehpc.controllers.job.spec import JobSpec

Obj = dict[str, Any]


@dataclass
class ManageContext:
    spec: JobSpec
    pods: list[Obj]
    active: list[Obj]
    ready: int
    terminating: int
    succeeded: int = 0
    indexes: IndexState | None = None
    backoff_record: BackoffRecord = field(default_factory=BackoffRecord)

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per Job per reconcile).
    def __init__(
        self,
        spec: JobSpec,
        pods: list[Obj],
        active: list[Obj],
        ready: int,
        terminating: int,
        succeeded: int = 0,
        indexes: IndexState | None = None,
        backoff_record: BackoffRecord | None = None,
    ) -> None:
        self.spec = spec
        self.pods = pods
        self.active = active
        self.ready = ready
        self.terminating = terminating
        self.succeeded = succeeded
        self.indexes = indexes
        self.backoff_record = BackoffRecord() if backoff_record is None else backoff_record


def pods_for_removal(spec: JobSpec, active: list[Obj], at_least: int) -> list[Obj]:
    """Active pods to delete: for Indexed Jobs every pod without a valid index and all but
    one pod of a repeated index first; then pods earliest in their life."""
    remove: list[Obj] = []
    left: list[Obj] = list(active)
    if spec.indexed:
        left = []
        by_index: dict[int, list[Obj]] = {}
        for pod in active:
            ix = P.valid_index(pod, spec.completions)
            if ix == P.UNKNOWN_INDEX:
                remove.append(pod)
            else:
                by_index.setdefault(ix, []).append(pod)
        for ix in sorted(by_index):
            same = sorted(by_index[ix], key=P.removal_rank)
            remove.extend(same[:-1])
            left.append(same[-1])
    if len(remove) < at_least:
        left.sort(key=P.removal_rank)
        remove.extend(left[: at_least - len(remove)])
    return remove


def manage_pods(
    ctx: ManageContext, out: JobPlan, now: datetime, backoff: BackoffPolicy, max_per_sync: int
) -> int:
    """Add pod creations and deletions to ``out``; returns the resulting active count."""
    spec = ctx.spec
    active = len(ctx.active)

    def delete(victims: list[Obj]) -> int:
        for pod in victims:
            out.delete.append(PodDeletion(P.name(pod), P.uid(pod), remove_finalizer=True))
        ctx.terminating += len(victims)
        ctx.ready -= sum(1 for p in victims if P.is_ready(p))
        return active - len(victims)

    if spec.suspend:
        return delete(pods_for_removal(spec, ctx.active, active))

    if spec.completions is None:
        want = active if ctx.succeeded > 0 else spec.parallelism
    else:
        want = max(0, min(spec.completions - ctx.succeeded, spec.parallelism))

    victims = pods_for_removal(spec, ctx.active, max(active - want, 0))[:max_per_sync]
    if victims:
        # Deletions and creations are never mixed in one pass; deletions go first.
        return delete(victims)

    waiting_replacement = ctx.terminating if spec.replace_only_failed else 0
    diff = want - waiting_replacement - active
    if diff <= 0:
        return active
    if spec.backoff_limit_per_index is None:
        left = backoff.remaining(ctx.backoff_record.failures, ctx.backoff_record.last_failure, now)
        if left > 0:
            out.requeue(left)
            return active
    diff = min(diff, max_per_sync)

    if not spec.indexed:
        out.create.extend(P.build_pod(spec, None) for _ in range(diff))
        return active + diff

    indexes = first_pending_indexes(ctx, diff)
    assert ctx.indexes is not None
    held = ctx.indexes.delayed
    if spec.backoff_limit_per_index is not None:
        ready_now: list[int] = []
        soonest: float | None = None
        for ix in indexes:
            last = held.get(ix)
            left = 0.0
            if last is not None:
                left = backoff.remaining(absolute_failure_count(last) + 1, P.finished_time(last), now)
            if left <= 0:
                ready_now.append(ix)
            elif soonest is None or left < soonest:
                soonest = left
        if not ready_now and soonest is not None:
            out.requeue(soonest)
            return active
        indexes = ready_now
    for ix in indexes:
        counts = (
            replacement_failure_counts(spec, held.get(ix))
            if spec.backoff_limit_per_index is not None
            else None
        )
        out.create.append(P.build_pod(spec, ix, counts))
    return active + len(indexes)
