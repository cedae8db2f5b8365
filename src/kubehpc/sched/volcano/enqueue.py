"""Which PodGroups a Volcano Queue admits (Pending -> Inqueue) and which running gangs give
their resources back to a queue below its deserved share (reclaim). Pure: a snapshot in,
decisions out.

Admission, in the spirit of Volcano's enqueue action with the proportion plugin:

* queues take turns, the one with the smallest dominant share (what it holds over what it
  deserves) first; inside a queue, higher priority first, then older first;
* a Closed (or Closing) queue admits nothing, and a queue that does not exist admits nothing;
* a PodGroup is admitted when its ``minResources`` fit both the queue's capability (with what
  the queue already holds or has admitted) and the cluster's idle resources (allocatable less
  what running pods hold and admitted gangs have reserved);
* ``dequeueStrategy: fifo`` stops a queue at its first PodGroup that cannot be admitted;
  ``traverse`` (the default) lets the next ones try.

Reclaim: when a PodGroup fits its queue's capability and, admitted, would keep its queue within
its deserved share, but the cluster has no room, whole running gangs of reclaimable queues
that hold more than their deserved share are evicted — lowest priority, then newest, first —
until the PodGroup fits; a victim queue is never taken below its deserved share by more than
the last gang it gives. Nothing is evicted unless the PodGroup then fits, and victims that turn
out unnecessary are spared (a minimal set, whole gangs only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubehpc.sched.volcano import resources as R
from kubehpc.sched.volcano.proportion import QueueInfo, deserved_shares
from kubehpc.sched.volcano.resources import Amount

PENDING, INQUEUE, RUNNING, UNKNOWN, COMPLETED = "Pending", "Inqueue", "Running", "Unknown", "Completed"


@dataclass(frozen=True)
class GroupInfo:
    """One PodGroup: what its gang needs and what its pods hold now."""

    key: str
    """``namespace/name``."""
    queue: str
    phase: str = PENDING
    min_resources: Mapping[str, Amount] = field(default_factory=dict)
    request: Mapping[str, Amount] = field(default_factory=dict)
    """Requests of all its unfinished pods (at least ``min_resources``): what its queue asks for."""
    allocated: Mapping[str, Amount] = field(default_factory=dict)
    """Requests of its pods bound to nodes and not finished."""
    priority: int = 0
    created: str = ""
    """Creation time (RFC 3339, so it sorts), for first-come-first-served inside a priority."""


@dataclass(frozen=True)
class Snapshot:
    cluster: Mapping[str, Amount]
    """Allocatable resources of every schedulable node, summed."""
    queues: tuple[QueueInfo, ...]
    groups: tuple[GroupInfo, ...]
    fifo_queues: frozenset[str] = frozenset()
    """Queues with ``dequeueStrategy: fifo``."""


@dataclass(frozen=True)
class Held:
    key: str
    reason: str
    message: str


@dataclass(frozen=True)
class Reclaim:
    victim: str
    victim_queue: str
    beneficiary: str
    message: str


@dataclass(frozen=True)
class QueueFigures:
    deserved: dict[str, Amount]
    allocated: dict[str, Amount]
    reserved: dict[str, Amount]


@dataclass(frozen=True)
class Decisions:
    admit: tuple[str, ...]
    held: tuple[Held, ...]
    reclaim: tuple[Reclaim, ...]
    queues: dict[str, QueueFigures]


def _order(g: GroupInfo) -> tuple[int, str, str]:
    return (-g.priority, g.created, g.key)


def _victim_order(g: GroupInfo) -> tuple[int, str, str]:
    # Lowest priority first; among equals the newest first (it has lost the least work).
    return (g.priority, _negated(g.created), g.key)


def _negated(text: str) -> str:
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


class _State:
    """Running totals while one decision is made."""

    def __init__(self, snap: Snapshot) -> None:
        self.queues = {q.name: q for q in snap.queues}
        live = [g for g in snap.groups if g.phase != COMPLETED]
        requests: dict[str, dict[str, Amount]] = {}
        for g in live:
            requests[g.queue] = R.add(requests.get(g.queue, {}), R.maximum(g.request, g.min_resources))
        self.deserved = deserved_shares(snap.cluster, snap.queues, requests)
        self.allocated: dict[str, dict[str, Amount]] = {name: {} for name in self.queues}
        self.reserved: dict[str, dict[str, Amount]] = {name: {} for name in self.queues}
        for g in live:
            self.allocated[g.queue] = R.add(self.allocated.get(g.queue, {}), g.allocated)
            if g.phase == INQUEUE:
                # Admitted but not (all) bound yet: the gang's minimum stays reserved.
                held = R.sub(g.min_resources, g.allocated)
                self.reserved[g.queue] = R.add(self.reserved.get(g.queue, {}), held)
        used = R.total([*self.allocated.values(), *self.reserved.values()])
        self.idle = R.sub(snap.cluster, used)
        self.cluster = dict(snap.cluster)
        guarantees = R.total(q.guarantee for q in snap.queues)
        self.capability: dict[str, dict[str, Amount]] = {}
        self.beyond_guarantees: dict[str, dict[str, Amount]] = {}
        for q in snap.queues:
            if q.capability is not None:
                self.capability[q.name] = dict(q.capability)
            # What other queues are guaranteed is never this queue's to hold.
            others = R.sub(guarantees, q.guarantee)
            if others:
                self.beyond_guarantees[q.name] = R.sub(self.cluster, others)
        self.running = sorted(
            (g for g in live if g.phase in (RUNNING, UNKNOWN) and g.allocated), key=_victim_order
        )

        self._shares: dict[str, float] = {}
        self._holding: dict[str, dict[str, Amount]] = {}
        self._over: set[str] | None = None

    def holding(self, queue: str) -> dict[str, Amount]:
        """What the queue's gangs hold or have reserved (do not change the result)."""
        if queue not in self._holding:
            self._holding[queue] = R.add(self.allocated.get(queue, {}), self.reserved.get(queue, {}))
        return self._holding[queue]

    def share(self, queue: str) -> float:
        """The queue's dominant share, as a float: only ever compared, for turns."""
        if queue not in self._shares:
            self._shares[queue] = float(R.share(self.holding(queue), self.deserved.get(queue, {})))
        return self._shares[queue]

    def over_share(self) -> set[str]:
        """Reclaimable queues whose running gangs hold more than they deserve."""
        if self._over is None:
            self._over = {
                name
                for name, q in self.queues.items()
                if q.reclaimable and R.exceeds(self.allocated.get(name, {}), self.deserved.get(name, {}))
            }
        return self._over

    def reserve(self, queue: str, amount: Mapping[str, Amount]) -> None:
        self.reserved[queue] = R.add(self.reserved.get(queue, {}), amount)
        self.idle = R.sub(self.idle, amount)
        self._shares.pop(queue, None)
        self._holding.pop(queue, None)

    def release(self, victim: GroupInfo) -> None:
        self.allocated[victim.queue] = R.sub(self.allocated[victim.queue], victim.allocated)
        self.idle = R.add(self.idle, victim.allocated)
        self.running.remove(victim)
        self._shares.pop(victim.queue, None)
        self._holding.pop(victim.queue, None)
        self._over = None


def decide(snap: Snapshot) -> Decisions:
    st = _State(snap)
    pending: dict[str, list[GroupInfo]] = {}
    held: list[Held] = []
    for g in sorted((g for g in snap.groups if g.phase == PENDING), key=_order):
        if g.queue not in st.queues:
            held.append(Held(g.key, "QueueNotFound", f'queue "{g.queue}" does not exist'))
        elif st.queues[g.queue].state != "Open":
            state = st.queues[g.queue].state
            held.append(
                Held(g.key, "QueueClosed", f'queue "{g.queue}" is {state}: it admits no new PodGroups')
            )
        else:
            pending.setdefault(g.queue, []).append(g)
    admit: list[str] = []
    reclaims: list[Reclaim] = []
    while pending:
        queue = min(pending, key=lambda name: (st.share(name), name))
        g = pending[queue].pop(0)
        outcome = _admit_one(st, g, reclaims)
        if outcome is None:
            admit.append(g.key)
        else:
            held.append(outcome)
            if queue in snap.fifo_queues:
                for rest in pending[queue]:
                    held.append(
                        Held(rest.key, "WaitingInQueue", f'queue "{queue}" is fifo: waiting behind {g.key}')
                    )
                pending[queue].clear()
        if not pending[queue]:
            del pending[queue]
    figures = {
        name: QueueFigures(st.deserved.get(name, {}), st.allocated.get(name, {}), st.reserved.get(name, {}))
        for name in st.queues
    }
    return Decisions(tuple(admit), tuple(held), tuple(reclaims), figures)


def _admit_one(st: _State, g: GroupInfo, reclaims: list[Reclaim]) -> Held | None:
    """Admit ``g`` (reserving its minimum) and return None, or say why it waits."""
    need = dict(g.min_resources)
    after = R.add(st.holding(g.queue), need)
    capability = st.capability.get(g.queue)
    if capability is not None and not R.fits_named(after, capability):
        over = {k: v for k, v in after.items() if k in capability and v > capability[k]}
        return Held(
            g.key,
            "QueueCapabilityExceeded",
            f'queue "{g.queue}" would hold {R.show(over)} with this PodGroup; '
            f"its capability is {R.show({k: capability[k] for k in over})}",
        )
    limit = st.beyond_guarantees.get(g.queue)
    if limit is not None and not R.fits(after, limit):
        return Held(
            g.key,
            "GuaranteedToOtherQueues",
            f'queue "{g.queue}" would hold {R.show(after)} with this PodGroup; only {R.show(limit)} '
            "of the cluster is not guaranteed to other queues",
        )
    if not R.fits(need, st.idle):
        victims = _victims(st, g, need)
        if victims is None:
            missing = {k: v - st.idle.get(k, 0) for k, v in need.items() if v > st.idle.get(k, 0)}
            return Held(
                g.key,
                "NotEnoughResources",
                f"needs {R.show(need)}; the cluster has {R.show(st.idle)} idle ({R.show(missing)} short)",
            )
        for v in victims:
            st.release(v)
            reclaims.append(
                Reclaim(
                    v.key,
                    v.queue,
                    g.key,
                    f'reclaimed for {g.key}: queue "{g.queue}" is below its deserved share '
                    f'and queue "{v.queue}" holds more than its own',
                )
            )
    st.reserve(g.queue, need)
    return None


def _victims(st: _State, g: GroupInfo, need: dict[str, Amount]) -> list[GroupInfo] | None:
    """A minimal set of whole running gangs whose eviction makes room for ``g``, or None."""
    within = st.deserved.get(g.queue, {})
    if R.exceeds(R.add(st.holding(g.queue), need), within):
        return None  # the queue would go beyond its deserved share: no right to reclaim
    if not st.over_share() - {g.queue}:
        return None  # no queue holds more than it deserves: nothing to take back
    allocated = {name: dict(v) for name, v in st.allocated.items()}
    free = dict(st.idle)
    taken: list[GroupInfo] = []
    for v in st.running:
        queue = st.queues.get(v.queue)
        if v.queue == g.queue or queue is None or not queue.reclaimable:
            continue
        if not R.exceeds(allocated[v.queue], st.deserved.get(v.queue, {})):
            continue  # that queue holds no more than it deserves
        allocated[v.queue] = R.sub(allocated[v.queue], v.allocated)
        free = R.add(free, v.allocated)
        taken.append(v)
        if R.fits(need, free):
            break
    if not R.fits(need, free):
        return None
    # Spare victims that turned out unnecessary (latest taken first: they came last in order).
    for v in reversed(list(taken)):
        without = R.sub(free, v.allocated)
        if R.fits(need, without):
            taken.remove(v)
            free = without
    return taken
