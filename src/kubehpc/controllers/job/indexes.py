"""Indexed Jobs: which indexes succeeded or failed, and per-index failure bookkeeping
(backoffLimitPerIndex)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubehpc.controllers.job import failure_policy as fp
from kubehpc.controllers.job import pods as P
from kubehpc.controllers.job.intervals import Intervals
from kubehpc.controllers.job.spec import JobSpec

if TYPE_CHECKING:
    from kubehpc.controllers.job.manage import ManageContext

Obj = dict[str, Any]


@dataclass
class IndexState:
    previous_succeeded: Intervals = field(default_factory=Intervals)
    """``status.completedIndexes`` as stored (counted already)."""
    succeeded: Intervals = field(default_factory=Intervals)
    failed: Intervals = field(default_factory=Intervals)
    delayed: dict[int, Obj] = field(default_factory=dict)
    """Per index, the last failed pod kept (finalizer held) until its replacement exists."""


def index_failed(spec: JobSpec, pod: Obj) -> bool:
    """Whether this pod's failure fails its whole index (FailIndex, or out of per-index retries)."""
    if spec.backoff_limit_per_index is None or not P.is_failed(pod, spec):
        return False
    match = fp.match(spec.pod_failure_policy, pod)
    if match.action == fp.FAIL_INDEX:
        return True
    return match.counts and P.index_failure_count(pod) >= spec.backoff_limit_per_index


def absolute_failure_count(pod: Obj) -> int:
    return P.index_failure_count(pod) + P.index_ignored_failure_count(pod)


def pods_with_delayed_deletion(spec: JobSpec, ctx: ManageContext, state: IndexState) -> dict[int, Obj]:
    active_indexes = {P.completion_index(p) for p in ctx.active}
    held: dict[int, Obj] = {}
    for pod in ctx.pods:
        if not P.has_tracking_finalizer(pod) or not P.is_failed(pod, spec):
            continue
        ix = P.valid_index(pod, spec.completions)
        if ix == P.UNKNOWN_INDEX or ix in state.succeeded or ix in state.failed or ix in active_indexes:
            continue
        last = held.get(ix)
        if last is None or (
            absolute_failure_count(last) <= absolute_failure_count(pod)
            and P.finished_time(pod) >= P.finished_time(last)
        ):
            held[ix] = pod
    return held


def replacement_failure_counts(spec: JobSpec, replaced: Obj | None) -> tuple[int, int]:
    """The failure-count annotations of the pod that replaces ``replaced`` in its index."""
    if replaced is None:
        return 0, 0
    failed = P.index_failure_count(replaced)
    ignored = P.index_ignored_failure_count(replaced)
    if fp.match(spec.pod_failure_policy, replaced).counts:
        failed += 1
    else:
        ignored += 1
    return failed, ignored


def first_pending_indexes(ctx: ManageContext, count: int) -> list[int]:
    """The lowest ``count`` indexes that no active (or, when only failed pods are replaced,
    terminating) pod holds and that have neither succeeded nor failed."""
    spec = ctx.spec
    assert spec.completions is not None and ctx.indexes is not None
    busy = {P.completion_index(p) for p in ctx.active}
    if spec.replace_only_failed:
        busy |= {P.completion_index(p) for p in ctx.pods if P.is_terminating(p)}
    taken = ctx.indexes.succeeded.merge(ctx.indexes.failed).with_indexes(i for i in busy if i >= 0)
    out: list[int] = []
    for ix in range(spec.completions):
        if len(out) >= count:
            break
        if ix not in taken:
            out.append(ix)
    return out
