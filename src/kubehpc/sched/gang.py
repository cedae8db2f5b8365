"""Gang placement: every pod set of a gang is placed, or none is.

A gang is what Volcano's PodGroup, the scheduler-plugins coscheduling PodGroup and a Kueue
workload have in common: several pod sets (tasks) that are useless half-started. Each gang is
tried as a *statement* (Volcano's ``Statement``): its pods are charged to the decision's usage
and given devices one pod set after another; if the gang is not ready at the end — a pod set
short of its minimum, fewer pods than ``min_member`` — every charge and device is taken back.
Two gangs that each fit alone but not together: the first in queue order runs whole, the other
waits whole.

A gang with fewer pods than its ``min_member`` (its pods are still being created) cannot start;
until ``timeout_s`` has passed since it began waiting it holds room for the pods it has (a
reservation, so lower gangs cannot take it); after that it gives the reservation up.

A gang that does not fit may evict lower-priority gangs (:mod:`kubehpc.sched.gang_preemption`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from kubehpc.sched.decide import Binding, Decisions, Snapshot, decide
from kubehpc.sched.devices import DeviceBook, DeviceState
from kubehpc.sched.model import PODS, PodShape, SchedulerConfig, Scoring
from kubehpc.sched.nodetable import IntArray, NodeTable
from kubehpc.sched.placement import Usage, capacity, charge, place, request_vector, static_fit
from kubehpc.sched.reasons import explain, message
from kubehpc.sched.topology import Assignment, Miss, Mode, Packing, TopologyRequest, TopologyTree, assign

Devices = tuple[tuple[str, tuple[str, ...]], ...]
Misses = dict[tuple[PodShape, TopologyRequest, str], Miss]
"""Per shape and topology request, the fewest pods found not to fit in this decision."""


@dataclass(frozen=True)
class GangPodSet:
    """``count`` identical pods of one role (Volcano task, Kueue pod set)."""

    name: str
    shape: PodShape
    count: int
    min_count: int | None = None
    """Fewest pods of this set the gang may start with (Kueue ``minCount``, Volcano
    ``minTaskMember``); None: every pod, unless the gang's ``min_member`` allows fewer."""
    topology: TopologyRequest | None = None
    pod_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"pod set {self.name}: count must be at least 1, got {self.count}")
        if self.pod_ids and len(self.pod_ids) != self.count:
            raise ValueError(f"pod set {self.name}: {len(self.pod_ids)} pod_ids for count {self.count}")


@dataclass(frozen=True)
class Gang:
    uid: str
    pod_sets: tuple[GangPodSet, ...]
    priority: int = 0
    created: float = 0.0
    min_member: int | None = None
    """Pods that must start together (Volcano / coscheduling ``minMember``); None: all of them."""
    topology: str = ""
    """Which tree of the snapshot's ``trees`` the pod sets' topology requests refer to."""
    timeout_s: float | None = None
    """How long an incomplete gang may hold a reservation (coscheduling ``scheduleTimeoutSeconds``)."""
    waiting_since: float = 0.0

    @property
    def size(self) -> int:
        return sum(ps.count for ps in self.pod_sets)

    @property
    def needed(self) -> int:
        """Pods that must start together: ``min_member``, else every pod set's minimum."""
        if self.min_member is None:
            return sum(self.minimum(ps) for ps in self.pod_sets)
        return self.min_member

    def minimum(self, ps: GangPodSet) -> int:
        if ps.min_count is not None:
            return min(ps.min_count, ps.count)
        return ps.count if self.min_member is None else 0


def gang_key(gang: Gang) -> tuple[int, float, str]:
    return (-gang.priority, gang.created, gang.uid)


@dataclass(frozen=True)
class GangOptions:
    packing: Packing = Packing.BINPACK
    trees: tuple[tuple[str, TopologyTree], ...] = ()
    """Topology name -> tree over the snapshot's nodes."""

    def tree(self, name: str) -> TopologyTree | None:
        for key, tree in self.trees:
            if key == name:
                return tree
        return self.trees[0][1] if self.trees and not name else None


@dataclass(frozen=True)
class GangPlacement:
    gang: str
    bindings: tuple[Binding, ...]
    domains: tuple[tuple[str, str], ...] = ()
    """Pod set -> the single topology domain holding it (when it has a topology request)."""


@dataclass(frozen=True)
class GangPending:
    gang: str
    pods: tuple[str, ...]
    position: int
    message: str
    held: bool = False
    """Preemption will not help: bad input (a level no node carries, fewer pods than minMember
    for good), which waits until the objects change, or the surplus pods of a gang that started
    without them (beyond minMember), which wait for room freed by others."""


@dataclass(frozen=True)
class GangDecisions:
    placed: tuple[GangPlacement, ...]
    reserved: tuple[GangPlacement, ...]
    """Incomplete gangs holding room for the pods they have; not to be bound."""
    pending: tuple[GangPending, ...]
    usage: Usage = field(repr=False, compare=False)
    """Usage after every placement and reservation (where the rest of the decision starts)."""
    device_holders: dict[str, dict[str, int]] = field(default_factory=dict, repr=False, compare=False)

    def bindings(self) -> tuple[Binding, ...]:
        return tuple(b for p in self.placed for b in p.bindings)


# ----------------------------------------------------------------- the statement


class Statement:
    """Tentative charges and devices of one gang; ``discard`` takes every one of them back."""

    def __init__(self, table: NodeTable, usage: Usage, book: DeviceBook) -> None:
        self.table = table
        self.usage = usage
        self.book = book
        self._charges: list[tuple[PodShape, IntArray]] = []
        self._devices: list[tuple[str, PodShape, Devices]] = []

    def allocate(self, shape: PodShape, node_ids: IntArray) -> None:
        charge(self.table, self.usage, shape, node_ids)
        self._charges.append((shape, node_ids))

    def devices(self, node: str, shape: PodShape) -> Devices:
        chosen = self.book.choose(node, shape)
        if chosen:
            self._devices.append((node, shape, chosen))
        return chosen

    def discard(self) -> None:
        for shape, node_ids in reversed(self._charges):
            charge(self.table, self.usage, shape, node_ids, sign=-1)
        for node, shape, chosen in reversed(self._devices):
            self.book.release(node, shape, chosen)
        self._charges.clear()
        self._devices.clear()

    def commit(self) -> None:
        self._charges.clear()
        self._devices.clear()


# ----------------------------------------------------------------- one gang


def describe_shape(shape: PodShape) -> str:
    """A pod's requests as people read them: ``(8 nvidia.com/gpu)``, ``(2 cpu, 4Gi memory)``."""
    parts: list[str] = []
    extended = [(r, a) for r, a in shape.requests if r not in (PODS, "cpu", "memory") and a > 0]
    for name, amount in extended or [(r, a) for r, a in shape.requests if r in ("cpu", "memory") and a > 0]:
        if name == "cpu":
            parts.append(f"{amount // 1000} cpu" if amount % 1000 == 0 else f"{amount}m cpu")
        elif name == "memory":
            gib, mib = amount / 2**30, amount // 2**20
            parts.append(f"{gib:g}Gi memory" if amount % 2**30 == 0 else f"{mib}Mi memory")
        else:
            parts.append(f"{amount} {name}")
    return "(" + ", ".join(parts) + ")" if parts else "(no requests)"


def _config_for(config: SchedulerConfig, packing: Packing, shape: PodShape) -> SchedulerConfig:
    """The scoring that packs (or spreads) the gang, counting the devices it asks for too:
    binpacking GPU gangs by cpu and memory alone would not keep whole GPU nodes free."""
    scoring = Scoring.MOST_ALLOCATED if packing is Packing.BINPACK else Scoring.LEAST_ALLOCATED
    scored = {r for r, _ in config.score_resources}
    extra = tuple(
        (r, 1) for r, a in shape.requests if a > 0 and r not in scored and r not in (PODS, "cpu", "memory")
    )
    if config.scoring is scoring and not extra:
        return config
    return replace(config, scoring=scoring, score_resources=config.score_resources + extra)


def node_capacity(table: NodeTable, usage: Usage, shape: PodShape) -> IntArray:
    """Per node, how many more pods of ``shape`` it can take (0 where a filter rejects it)."""
    cap = np.zeros(len(table), dtype=np.int64)
    rows = np.flatnonzero(static_fit(table, shape))
    if len(rows):
        cap[rows] = capacity(table, usage.used, rows, request_vector(table, shape))
    return cap


@dataclass(frozen=True)
class _SetOutcome:
    node_ids: IntArray
    domain: str = ""
    why: str = ""
    held: bool = False
    short: str = ""
    """Why fewer than all the set's pods were placed, when a partial start took what fits."""


def _place_set(
    table: NodeTable,
    usage: Usage,
    config: SchedulerConfig,
    options: GangOptions,
    gang: Gang,
    ps: GangPodSet,
    wanted: int,
    minimum: int,
    misses: Misses | None = None,
) -> _SetOutcome:
    """Nodes for up to ``wanted`` pods of the set (at least ``minimum``, or a reason)."""
    what = describe_shape(ps.shape)
    request = ps.topology
    if request is None:
        ids = place(table, usage, ps.shape, wanted, _config_for(config, options.packing, ps.shape))
        if len(ids) >= max(minimum, 1) or (minimum == 0 and len(ids) == 0):
            return _SetOutcome(ids)
        rejections = explain(table, usage.used, ps.shape)
        text = f"pod set {ps.name} needs {max(minimum, 1)} x {what}, {len(ids)} fit: "
        return _SetOutcome(ids[:0], why=text + message(rejections, ps.shape.preempt_never))
    tree = options.tree(gang.topology)
    if tree is None:
        name = gang.topology or "(none)"
        return _SetOutcome(
            np.zeros(0, dtype=np.int64), why=f"pod set {ps.name}: no topology {name} is defined", held=True
        )
    key = (ps.shape, request, gang.topology)
    known = misses.get(key) if misses is not None and minimum >= wanted else None
    if known is not None and wanted >= known.wanted:
        # Fewer pods of this shape already found no room in this decision, and room only
        # shrinks while it lasts: the same answer, without counting again.
        return _SetOutcome(
            np.zeros(0, dtype=np.int64),
            why=f"pod set {ps.name} {replace(known, wanted=wanted).describe(what)}",
        )
    cap = node_capacity(table, usage, ps.shape)
    got = assign(tree, cap, wanted, request, options.packing)
    short = ""
    if isinstance(got, Miss) and not got.missing_level and minimum < wanted and got.best >= max(minimum, 1):
        # A partial start is allowed: as many as the best single domain holds.
        short = f"pod set {ps.name} {got.describe(what)}"
        got = assign(tree, cap, got.best, request, options.packing)
    if isinstance(got, Miss):
        if misses is not None and minimum >= wanted and not got.missing_level:
            misses[key] = got if key not in misses or wanted < misses[key].wanted else misses[key]
        return _SetOutcome(
            np.zeros(0, dtype=np.int64), why=f"pod set {ps.name} {got.describe(what)}", held=got.missing_level
        )
    domain = got.domain if request.mode is not Mode.UNCONSTRAINED else ""
    return _SetOutcome(_node_ids(got), domain=domain, short=short)


def _node_ids(got: Assignment) -> IntArray:
    nodes = np.flatnonzero(got.counts)
    ids: IntArray = np.repeat(nodes, got.counts[nodes])
    return ids


@dataclass(frozen=True)
class _GangOutcome:
    placement: GangPlacement | None
    why: str = ""
    held: bool = False


def _steps(gang: Gang) -> list[tuple[int, int, int]]:
    """The order the gang's pod sets are placed in: (set index, pods wanted, pods required).

    Every set's required pods go first, so a set the gang may start short of (minMember,
    a task's minTaskMember below its replicas) never takes the room another set needs for its
    own minimum; then each set is topped up. A set with a topology request is placed in one
    step, as its pods must share a domain."""
    first: list[tuple[int, int, int]] = []
    then: list[tuple[int, int, int]] = []
    for i, ps in enumerate(gang.pod_sets):
        minimum = gang.minimum(ps)
        if minimum == 0:
            then.append((i, ps.count, 0))
        elif minimum < ps.count and ps.topology is None:
            first.append((i, minimum, minimum))
            then.append((i, ps.count - minimum, 0))
        else:
            first.append((i, ps.count, minimum))
    return first + then


def try_gang(
    table: NodeTable,
    usage: Usage,
    book: DeviceBook,
    config: SchedulerConfig,
    options: GangOptions,
    gang: Gang,
    misses: Misses | None = None,
) -> _GangOutcome:
    """Place ``gang`` on ``usage`` whole (charges and devices kept) or not at all (nothing kept)."""
    statement = Statement(table, usage, book)
    bindings: list[Binding] = []
    domains: list[tuple[str, str]] = []
    placed = 0
    placed_by_set = [0] * len(gang.pod_sets)
    shorts: dict[int, str] = {}
    for i, wanted, minimum in _steps(gang):
        ps = gang.pod_sets[i]
        outcome = _place_set(table, usage, config, options, gang, ps, wanted, minimum, misses)
        if outcome.why:
            statement.discard()
            return _GangOutcome(None, outcome.why, outcome.held)
        statement.allocate(ps.shape, outcome.node_ids)
        uid = f"{gang.uid}/{ps.name}"
        for t, node_id in enumerate(outcome.node_ids.tolist(), start=placed_by_set[i]):
            node = table.names[node_id]
            try:
                devices = statement.devices(node, ps.shape)
            except ValueError as err:
                statement.discard()
                return _GangOutcome(None, f"pod set {ps.name}: devices on {node}: {err}")
            bindings.append(Binding(uid, ps.pod_ids[t] if ps.pod_ids else "", node, devices))
        placed += len(outcome.node_ids)
        placed_by_set[i] += len(outcome.node_ids)
        if outcome.short:
            shorts.setdefault(i, outcome.short)
        if outcome.domain:
            domains.append((ps.name, outcome.domain))
    if placed < gang.needed:
        text = f"{placed} of the {gang.needed} pods the gang needs together fit"
        short = next((i for i, ps in enumerate(gang.pod_sets) if placed_by_set[i] < ps.count), None)
        if short is not None and gang.pod_sets[short].topology is None:
            # Why the next pod of the set found no room, with the gang's own pods in place.
            shape = gang.pod_sets[short].shape
            text += "; " + message(explain(table, usage.used, shape), shape.preempt_never)
        elif short is not None and short in shorts:
            text += "; " + shorts[short]  # in terms of its shape and topology domain
        statement.discard()
        return _GangOutcome(None, text)
    statement.commit()
    return _GangOutcome(GangPlacement(gang.uid, tuple(bindings), tuple(domains)))


# ----------------------------------------------------------------- a decision


def _left_behind(gang: Gang, placement: GangPlacement) -> tuple[GangPodSet, tuple[str, ...]] | None:
    """The pods of a started gang that did not get a node, and the first set they belong to."""
    bound = {b.pod for b in placement.bindings}
    first: GangPodSet | None = None
    left: list[str] = []
    for ps in gang.pod_sets:
        missing = [p for p in ps.pod_ids if p not in bound]
        if missing and first is None:
            first = ps
        left.extend(missing)
    return (first, tuple(left)) if first is not None else None


SHORT_GANG_GRACE_S = 60.0
"""How long a gang left below its minimum by a refused binding waits for its missing members
before it gives up the running ones, when its group sets no timeout of its own."""


def gives_up_running_members(short_since: float, timeout_s: float | None, now: float) -> bool:
    """Whether a gang running below its minimum since ``short_since`` gives up its running pods.

    Bindings are written pod by pod, so the API may refuse one member after the others of its
    gang were bound. The missing pods then wait as a gang of what is missing, which usually
    binds within a cycle or two; one that does not within the group's timeout (the
    ``scheduleTimeoutSeconds`` that also ends a reservation), or :data:`SHORT_GANG_GRACE_S`
    without one, makes the whole gang start again, as a pod cannot be unbound."""
    return now - short_since >= (timeout_s if timeout_s is not None else SHORT_GANG_GRACE_S)


def incomplete_reason(gang: Gang) -> str:
    have = gang.size
    return f"waiting for {gang.needed - have} more pods (minMember {gang.needed}, {have} exist)"


def decide_gangs(
    table: NodeTable,
    gangs: Sequence[Gang],
    now: float,
    config: SchedulerConfig | None = None,
    options: GangOptions | None = None,
    devices: DeviceState | None = None,
    usage: Usage | None = None,
) -> GangDecisions:
    """Place the gangs in queue order (priority, creation, uid), each whole or not at all.

    ``usage`` (default: the table's) is charged with every placement and reservation, so a
    caller replaying a stream can keep one across decisions."""
    config = config or SchedulerConfig()
    options = options or GangOptions()
    if usage is None:
        usage = Usage.of(table)
    book = DeviceBook(devices)
    placed: list[GangPlacement] = []
    reserved: list[GangPlacement] = []
    pending: list[GangPending] = []
    misses: Misses = {}

    def wait(gang: Gang, text: str, held: bool = False) -> None:
        pods = tuple(p for ps in gang.pod_sets for p in ps.pod_ids)
        pending.append(GangPending(gang.uid, pods, len(pending), f"gang {gang.uid}: {text}", held))

    for gang in sorted(gangs, key=gang_key):
        if gang.size < gang.needed:
            timed_out = gang.timeout_s is not None and now - gang.waiting_since >= gang.timeout_s
            if timed_out:
                wait(
                    gang, f"{incomplete_reason(gang)}; waited past {gang.timeout_s:g}s: reservation released"
                )
                continue
            # Hold room for the pods it has: a complete gang of them, with every minimum waived.
            partial = replace(gang, min_member=gang.size)
            outcome = try_gang(table, usage, book, config, options, partial)
            if outcome.placement is not None:
                reserved.append(outcome.placement)
            wait(gang, incomplete_reason(gang) + ("" if outcome.placement else f"; {outcome.why}"))
            continue
        outcome = try_gang(table, usage, book, config, options, gang, misses)
        if outcome.placement is None:
            wait(gang, outcome.why, outcome.held)
            continue
        placed.append(outcome.placement)
        left = _left_behind(gang, outcome.placement)
        if left:
            # They wait like any unschedulable pod (parked until room frees), saying why.
            ps, pods = left
            text = (
                f"gang {gang.uid}: started without {len(pods)} of its pods, which wait for room: "
                + message(explain(table, usage.used, ps.shape), ps.shape.preempt_never)
            )
            pending.append(GangPending(gang.uid, pods, len(pending), text, held=True))
    return GangDecisions(tuple(placed), tuple(reserved), tuple(pending), usage, book.holders())


def table_with_usage(table: NodeTable, usage: Usage) -> NodeTable:
    """``table`` with usage replaced: same nodes, labels and taints, so masks stay cached."""
    rows = np.flatnonzero((table.used != usage.used).any(axis=1)).tolist()
    infos = []
    for i in rows:
        info = table.node_info(i)
        used = {r: int(usage.used[i, j]) for j, r in enumerate(table.resources) if usage.used[i, j]}
        scored = {r: int(usage.scored[i, j]) for j, r in enumerate(table.resources) if usage.scored[i, j]}
        infos.append(replace(info, used=used, scored_used=scored))
    return table.with_changes(infos) if infos else table


def decide_with_gangs(
    snapshot: Snapshot, gangs: Sequence[Gang], now: float, options: GangOptions | None = None
) -> tuple[GangDecisions, Decisions]:
    """Gangs first (they need room all at once), then the single pods of ``snapshot`` on what
    is left, as ``decide`` places them; devices handed out to gangs stay taken."""
    gang_decisions = decide_gangs(snapshot.nodes, gangs, now, snapshot.config, options, snapshot.devices)
    if not snapshot.pod_sets:
        return gang_decisions, Decisions((), ())
    table = table_with_usage(snapshot.nodes, gang_decisions.usage)
    devices = snapshot.devices
    if devices is not None:
        devices = replace(devices, holders=gang_decisions.device_holders)
    rest = replace(snapshot, nodes=table, devices=devices)
    return gang_decisions, decide(rest, now)
