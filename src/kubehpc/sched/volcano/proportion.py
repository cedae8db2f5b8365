"""Each Volcano Queue's deserved share of the cluster, as the proportion plugin computes it.

Siblings split what their parent has (the cluster, for top-level queues) by weight, in rounds:
each round hands every queue not yet satisfied its weight's part of what is left, capped by its
capability and by what its PodGroups ask for, and raised to its guarantee; a queue whose asks
are met drops out and what it did not take goes round again. Guarantees come off the top
first, so a queue always deserves at least its guarantee. A queue with an explicit
``spec.deserved`` (the capacity plugin's form) deserves exactly that (within its capability)
and leaves the rest to its siblings. Hierarchical queues (``spec.parent``) split their
parent's deserved share among themselves the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from kubehpc.sched.volcano import resources as R
from kubehpc.sched.volcano.resources import Amount, Resources

ROOT = "root"


@dataclass(frozen=True)
class QueueInfo:
    """What the share computation and admission need to know about one Queue."""

    name: str
    weight: int = 1
    capability: Mapping[str, Amount] | None = None
    guarantee: Mapping[str, Amount] = field(default_factory=dict)
    deserved: Mapping[str, Amount] | None = None
    """``spec.deserved`` when the queue states it; None to share by weight."""
    reclaimable: bool = True
    state: str = "Open"
    parent: str = ROOT


def _scaled(r: Resources, factor: Fraction) -> dict[str, Amount]:
    return {k: v * factor for k, v in r.items() if v * factor}


def _capped_by_request(r: Resources, request: Resources) -> dict[str, Amount]:
    """No queue deserves more of a resource than its PodGroups ask for (zero if none)."""
    return {k: min(v, request.get(k, 0)) for k, v in r.items() if min(v, request.get(k, 0))}


def split(
    available: Resources, queues: Sequence[QueueInfo], requests: Mapping[str, Resources]
) -> dict[str, dict[str, Amount]]:
    """Deserved shares of sibling ``queues`` out of ``available`` (one level of the tree)."""
    deserved: dict[str, dict[str, Amount]] = {}
    fixed = [q for q in queues if q.deserved is not None]
    for q in fixed:
        share = dict(q.deserved or {})
        if q.capability is not None:
            share = R.minimum(share, q.capability)
        deserved[q.name] = share
    shared = sorted((q for q in queues if q.deserved is None), key=lambda q: q.name)
    remaining = R.sub(available, R.total([*deserved.values(), *(q.guarantee for q in shared)]))
    for q in shared:
        deserved[q.name] = {}
    met: set[str] = set()
    # Each round either satisfies a queue or hands out everything left, so this ends within
    # len(shared) + 1 rounds; the bound guards against rounding surprises all the same.
    for _ in range(len(shared) + 2):
        active = [q for q in shared if q.name not in met]
        weight = sum(q.weight for q in active)
        if not weight or not remaining:
            break
        before = remaining
        increased: dict[str, Amount] = {}
        decreased: dict[str, Amount] = {}
        for q in active:
            old = deserved[q.name]
            new = R.add(old, _scaled(remaining, Fraction(q.weight, weight)))
            if q.capability is not None:
                new = R.minimum(new, q.capability)
            request = requests.get(q.name, {})
            new = _capped_by_request(new, request)
            new = {k: v for k, v in R.maximum(new, q.guarantee).items() if v}
            if R.fits(request, new) or new == old:
                met.add(q.name)
            increased = R.add(increased, R.sub(new, old))
            decreased = R.add(decreased, R.sub(old, new))
            deserved[q.name] = new
        remaining = R.sub(R.add(remaining, decreased), increased)
        if remaining == before:
            break
    return deserved


def deserved_shares(
    cluster: Resources, queues: Sequence[QueueInfo], requests: Mapping[str, Resources]
) -> dict[str, dict[str, Amount]]:
    """Every queue's deserved share. ``requests``: per queue, what its own PodGroups ask for;
    a parent's ask is its own plus its children's."""
    names = {q.name for q in queues}
    children: dict[str, list[QueueInfo]] = {}
    for q in queues:
        parent = q.parent if q.parent in names and q.parent != q.name else ROOT
        children.setdefault(parent, []).append(q)
    subtree = _subtree_requests(ROOT, children, requests, set())
    out: dict[str, dict[str, Amount]] = {}
    pending = [(ROOT, dict(cluster))]
    seen: set[str] = set()
    while pending:
        parent, available = pending.pop()
        if parent in seen:  # a cycle of parents: each queue is shared out once
            continue
        seen.add(parent)
        kids = children.get(parent, [])
        shares = split(available, kids, subtree)
        for q in kids:
            out[q.name] = shares[q.name]
            if q.name in children:
                pending.append((q.name, shares[q.name]))
    for q in queues:  # queues caught in a cycle of parents deserve nothing
        out.setdefault(q.name, {})
    return out


def _subtree_requests(
    name: str,
    children: Mapping[str, Sequence[QueueInfo]],
    requests: Mapping[str, Resources],
    seen: set[str],
) -> dict[str, dict[str, Amount]]:
    out: dict[str, dict[str, Amount]] = {}
    if name in seen:
        return out
    seen.add(name)
    for q in children.get(name, ()):
        below = _subtree_requests(q.name, children, requests, seen)
        out.update(below)
        own = dict(requests.get(q.name, {}))
        for kid in children.get(q.name, ()):
            own = R.add(own, below.get(kid.name, {}))
        out[q.name] = own
    return out


def with_hierarchy(
    queues: Sequence[QueueInfo], paths: Mapping[str, str], weights: Mapping[str, str]
) -> list[QueueInfo]:
    """Queues placed in the tree their ``volcano.sh/hierarchy`` annotations draw
    (``root/eng/prod`` with ``volcano.sh/hierarchy-weights`` ``1/2/8``): every inner path is a
    queue of its own that holds nothing itself (``root/eng``, weight 2) and shares what it
    deserves among the queues below it; the queue itself is the last step (weight 8). The
    first queue (by name) to name an inner path sets its weight. A path whose weights do not
    match its steps one for one is left out (the queue keeps its own place)."""
    out = list(queues)
    known = {q.name for q in queues}
    inner: dict[str, QueueInfo] = {}
    for i, q in enumerate(queues):
        path = paths.get(q.name)
        if not path:
            continue
        steps = path.strip("/").split("/")
        try:
            step_weights = [int(w) for w in weights.get(q.name, "").strip("/").split("/")]
        except ValueError:
            continue
        if len(steps) != len(step_weights) or steps[0] != ROOT or len(steps) < 2:
            continue
        parent = ROOT
        for depth in range(1, len(steps) - 1):
            name = "/".join(steps[: depth + 1])
            if name not in inner and name not in known:
                inner[name] = QueueInfo(name, weight=max(step_weights[depth], 1), parent=parent)
            parent = name
        out[i] = QueueInfo(
            q.name,
            weight=max(step_weights[-1], 1),
            capability=q.capability,
            guarantee=q.guarantee,
            deserved=q.deserved,
            reclaimable=q.reclaimable,
            state=q.state,
            parent=parent,
        )
    return out + [inner[name] for name in sorted(inner)]
