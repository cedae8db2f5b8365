"""ClusterQueue and LocalQueue status as Kueue writes it, from one admission decision.

Counts (pendingWorkloads, reservingWorkloads, admittedWorkloads), quota per flavor and
resource (flavorsReservation, flavorsUsage; ``borrowed`` on ClusterQueues) in the order the
ClusterQueue lists them, and the Active condition with Kueue's reasons.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any

import orjson

from kubehpc.api import fields as F
from kubehpc.api.quantity import BINARY_SI, DECIMAL_SI, Quantity, canonical, resource_units
from kubehpc.controllers.kueue import constants as k
from kubehpc.controllers.kueue.conditions import is_true, set_condition
from kubehpc.sched.admission.decisions import ClusterQueueState

Obj = dict[str, Any]
_BINARY = ("memory", "ephemeral-storage", "storage")


@functools.lru_cache(maxsize=8192)
def quantity_text(resource: str, units: int) -> str:
    """Units of ``resource_units`` (millicores for cpu) back to a canonical quantity. Cached:
    every admission spells the same few requests again."""
    if resource == "cpu":
        return canonical(Quantity(Fraction(units, 1000), DECIMAL_SI))
    binary = resource in _BINARY or resource.startswith("hugepages-")
    return canonical(Quantity(Fraction(units), BINARY_SI if binary else DECIMAL_SI))


def base_units(resource: str, units: int) -> float:
    """For metrics: cores for cpu, the unit itself otherwise."""
    return units / 1000 if resource == "cpu" else float(units)


def quota_cells(cq: Obj) -> list[tuple[str, str, Any]]:
    """(flavor, resource, nominalQuota) in the order the ClusterQueue lists them."""
    cells = []
    for group in F.spec(cq).get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for res in flavor.get("resources") or ():
                cells.append((str(flavor["name"]), str(res["name"]), res.get("nominalQuota", 0)))
    return cells


def _flavor_list(
    cells: list[tuple[str, str, Any]],
    totals: dict[tuple[str, str], int],
    borrowed: dict[tuple[str, str], int] | None,
) -> list[Obj]:
    by_flavor: dict[str, list[Obj]] = {}
    for flavor, resource, _ in cells:
        entry: Obj = {"name": resource, "total": quantity_text(resource, totals.get((flavor, resource), 0))}
        if borrowed is not None:
            entry["borrowed"] = quantity_text(resource, borrowed.get((flavor, resource), 0))
        by_flavor.setdefault(flavor, []).append(entry)
    return [{"name": flavor, "resources": resources} for flavor, resources in by_flavor.items()]


# The status fields both queue kinds' status writers set afresh on every cycle.
_REPLACED = frozenset(
    {"pendingWorkloads", "reservingWorkloads", "admittedWorkloads", "flavorsReservation", "flavorsUsage"}
)


def _kept_copy(status: Obj) -> Obj:
    """A private copy of what a queue's new status keeps from the old one (its conditions):
    one JSON round trip, where ``copy.deepcopy`` ran interpreted through the usage lists that
    are replaced anyway, for every queue on every admission cycle."""
    kept: Obj = orjson.loads(
        orjson.dumps({key: value for key, value in status.items() if key not in _REPLACED})
    )
    return kept


def cluster_queue_status(cq: Obj, state: ClusterQueueState, admitted: int, now: datetime) -> Obj:
    """The status to write; ``admitted`` counts workloads with Admitted=True."""
    cells = quota_cells(cq)
    usage = {(f, r): a for f, r, a in state.usage}
    borrowed = {(f, r): a for f, r, a in state.borrowed}
    status = _kept_copy(F.status(cq))
    status.update(
        {
            "pendingWorkloads": state.pending,
            "reservingWorkloads": state.admitted,
            "admittedWorkloads": admitted,
            "flavorsReservation": _flavor_list(cells, usage, borrowed),
            "flavorsUsage": _flavor_list(cells, usage, borrowed),
        }
    )
    if state.active:
        set_condition(status, k.ACTIVE, "True", k.REASON_READY, k.CQ_READY_MESSAGE, now, _gen(cq))
    else:
        set_condition(status, k.ACTIVE, "False", state.reason, state.message, now, _gen(cq))
    return status


def _gen(obj: Obj) -> int | None:
    value = F.metadata(obj).get("generation")
    return int(value) if isinstance(value, int) else None


@dataclass(frozen=True)
class Holding:
    """What one workload adds to the queue counters: the LocalQueue ("namespace/name") and
    ClusterQueue it counts in, whether it holds quota (QuotaReserved=True, not finished), is
    admitted, and the quota it holds as (flavor, resource, units)."""

    queue: str
    cluster_queue: str
    reserving: bool
    admitted: bool
    running: bool  # Admitted=True and not finished: the metrics' admitted_active_workloads
    cells: tuple[tuple[str, str, int], ...]

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per workload a queue's status counts).
    def __init__(
        self,
        queue: str,
        cluster_queue: str,
        reserving: bool,
        admitted: bool,
        running: bool,
        cells: tuple[tuple[str, str, int], ...],
    ) -> None:
        object.__setattr__(self, "queue", queue)
        object.__setattr__(self, "cluster_queue", cluster_queue)
        object.__setattr__(self, "reserving", reserving)
        object.__setattr__(self, "admitted", admitted)
        object.__setattr__(self, "running", running)
        object.__setattr__(self, "cells", cells)


def holding_of(workload: Obj) -> Holding | None:
    """None for a workload that counts nowhere (waiting, finished)."""
    finished = is_true(workload, k.FINISHED)
    admitted = is_true(workload, k.ADMITTED)
    reserving = not finished and is_true(workload, k.QUOTA_RESERVED)
    running = admitted and not finished
    if not reserving and not running:
        return None
    admission = F.obj_field(F.status(workload), "admission")
    cells: list[tuple[str, str, int]] = []
    if reserving:
        for psa in F.object_list(admission, "podSetAssignments"):
            flavors = F.obj_field(psa, "flavors")
            for resource, amount in F.obj_field(psa, "resourceUsage").items():
                flavor = flavors.get(resource)
                if flavor is not None:
                    cells.append((str(flavor), str(resource), resource_units(str(resource), amount)))
    cluster_queue = str(admission.get("clusterQueue") or "")
    return Holding(_queue_key(workload), cluster_queue, reserving, admitted, running, tuple(cells))


class LocalQueueTally:
    """Per LocalQueue ("namespace/name"): pending, reserving and admitted workloads and the
    quota they hold per (flavor, resource); per ClusterQueue: admitted workloads, and admitted
    ones not finished (for the metrics).

    Kept as workloads change (:meth:`set`), so a cycle's queue status costs a pass over the
    queues, not over every Workload; ``pending`` is the one part each decision refills."""

    def __init__(self) -> None:
        self.pending: Counter[str] = Counter()
        self.reserving: Counter[str] = Counter()
        self.admitted: Counter[str] = Counter()
        self.reserved: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
        self.used: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
        self.admitted_in: Counter[str] = Counter()  # ClusterQueue -> holders with Admitted=True
        self.running_in: Counter[str] = Counter()  # ClusterQueue -> admitted, not finished
        self._holdings: dict[str, Holding] = {}  # workload key -> what it adds

    def add_holder(self, workload: Obj) -> None:
        """Count a workload once, with no key to replace it by later (one-off tallies)."""
        holding = holding_of(workload)
        if holding is not None:
            self._count(holding, 1)

    def set(self, key: str, workload: Obj | None) -> None:
        """``workload`` (None: gone) is now what the workload ``key`` looks like."""
        holding = holding_of(workload) if workload is not None else None
        before = self._holdings.get(key)
        if before == holding:
            return
        if before is not None:
            self._count(before, -1)
            del self._holdings[key]
        if holding is not None:
            self._count(holding, 1)
            self._holdings[key] = holding

    def _count(self, h: Holding, sign: int) -> None:
        if h.running:
            self.running_in[h.cluster_queue] += sign
        if not h.reserving:
            return
        self.reserving[h.queue] += sign
        if h.admitted:
            self.admitted[h.queue] += sign
            self.admitted_in[h.cluster_queue] += sign
        for flavor, resource, units in h.cells:
            cell = (flavor, resource)
            for into in (self.reserved[h.queue],) + ((self.used[h.queue],) if h.admitted else ()):
                into[cell] = into.get(cell, 0) + sign * units


def _queue_key(workload: Obj) -> str:
    meta = F.metadata(workload)
    return f"{meta.get('namespace') or 'default'}/{(workload.get('spec') or {}).get('queueName') or ''}"


def local_queue_status(
    lq: Obj, cq: Obj | None, cq_active: bool, tally: LocalQueueTally, now: datetime
) -> Obj:
    meta = F.metadata(lq)
    key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    cells = quota_cells(cq) if cq is not None else []
    status = _kept_copy(F.status(lq))
    status.update(
        {
            "pendingWorkloads": tally.pending[key],
            "reservingWorkloads": tally.reserving[key],
            "admittedWorkloads": tally.admitted[key],
            "flavorsReservation": _flavor_list(cells, tally.reserved.get(key, {}), None),
            "flavorsUsage": _flavor_list(cells, tally.used.get(key, {}), None),
        }
    )
    gen = _gen(lq)
    stop = str(F.spec(lq).get("stopPolicy") or "None")
    if stop != "None":
        set_condition(status, k.ACTIVE, "False", k.LQ_STOPPED_REASON, k.LQ_STOPPED_MESSAGE, now, gen)
    elif cq is None:
        set_condition(status, k.ACTIVE, "False", k.LQ_CQ_MISSING_REASON, k.LQ_CQ_UNUSABLE_MESSAGE, now, gen)
    elif not cq_active:
        set_condition(status, k.ACTIVE, "False", k.LQ_CQ_INACTIVE_REASON, k.LQ_CQ_UNUSABLE_MESSAGE, now, gen)
    else:
        set_condition(status, k.ACTIVE, "True", k.REASON_READY, k.LQ_READY_MESSAGE, now, gen)
    return status
