"""Placing a run of identical pods on nodes, all nodes at once.

For ``k`` identical pods the core computes, per feasible node, its capacity in units of the pod
(``min over resources of free // request``) and the score each further pod would get there.
It then takes, in one step, the same nodes that placing the pods one by one — each on the
best-scoring node, ties to the lowest node id — would take:

* LeastAllocated (spread): a node's score only falls as pods land on it, so the one-by-one
  result is the ``k`` best (score, node) slots over all nodes: a top-k over a
  ``[nodes x slots]`` matrix of integer keys.
* MostAllocated (binpack): a node's score only rises, so the best node keeps winning until it
  is full: sort nodes once, fill them in order.

Scores follow kube-scheduler's default profile, in integers: NodeResourcesFit
(``(free after) * 100 // allocatable`` per resource for LeastAllocated, ``(used after) * 100 //
allocatable`` for MostAllocated, weighted mean over the scored resources), TaintToleration
(fewer untolerated PreferNoSchedule taints score higher) and NodeAffinity (preferred terms'
weights), each normalised to 0..100 and weighted 1 / 3 / 2. Scoring counts a pod without a
cpu or memory request as 100m and 200Mi (kube-scheduler's non-zero defaults), so empty pods
still spread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubehpc.sched.filters import (
    affinity_match,
    cordoned,
    first_untolerated_taint,
    prefer_no_schedule_count,
    preferred_weight,
)
from kubehpc.sched.model import CPU, MEMORY, PodShape, SchedulerConfig, Scoring
from kubehpc.sched.nodetable import BoolArray, IntArray, NodeTable

MAX_SCORE = 100
NON_ZERO_DEFAULTS = {CPU: 100, MEMORY: 200 * 1024 * 1024}
# Slots scored per round: bounds memory when nodes could take very many pods each.
_SLOT_BUDGET = 2_000_000


def static_fit(table: NodeTable, shape: PodShape) -> BoolArray:
    """Nodes that pass every filter except resources: cordon, taints, selector and affinity."""

    def compute() -> BoolArray:
        ok = ~cordoned(table, shape.tolerations)
        ok &= first_untolerated_taint(table, shape.tolerations) < 0
        ok &= affinity_match(table, shape.node_selector, shape.required_terms)
        return ok

    key = ("static", shape.tolerations, shape.node_selector, shape.required_terms)
    result: BoolArray = table.memo(key, compute)
    return result


@dataclass(frozen=True)
class Usage:
    """What is taken on each node: ``used`` for fitting, ``scored`` (non-zero defaults applied
    to pods without cpu/memory requests) for scoring. Both ``[nodes x resources]``."""

    used: IntArray
    scored: IntArray
    divisors: dict[int, tuple[IntArray, BoolArray, bool]] = field(default_factory=dict)
    """Per scored column: allocatable with zeros made 1, where it is non-zero, whether it
    always is (derived once per decision, reused by every pod)."""

    @classmethod
    def of(cls, table: NodeTable) -> Usage:
        return cls(table.used.copy(order="F"), table.scored.copy(order="F"))

    def divisor(self, table: NodeTable, col: int) -> tuple[IntArray, BoolArray, bool]:
        got = self.divisors.get(col)
        if got is None:
            alloc = table.allocatable[:, col]
            has = alloc > 0
            got = self.divisors[col] = (np.where(has, alloc, 1), has, bool(has.all()))
        return got


@dataclass(frozen=True)
class Request:
    """A shape's requests as matrix columns (only the resources it asks a positive amount of)."""

    columns: IntArray
    amounts: IntArray
    missing: tuple[str, ...]
    """Requested resources no node has at all."""
    score_columns: IntArray
    score_amounts: IntArray
    """What one pod adds to ``Usage.scored``."""


def scored_requests(shape: PodShape) -> dict[str, int]:
    """The pod's requests as scoring counts them (kube-scheduler's non-zero defaults)."""
    out = {name: amount for name, amount in shape.requests if amount > 0}
    for name, default in NON_ZERO_DEFAULTS.items():
        if out.get(name, 0) <= 0:
            out[name] = default
    return out


def request_vector(table: NodeTable, shape: PodShape) -> Request:
    result: Request = table.memo(("request", shape), lambda: _request_vector(table, shape))
    return result


def _request_vector(table: NodeTable, shape: PodShape) -> Request:
    cols: list[int] = []
    amounts: list[int] = []
    missing: list[str] = []
    for name, amount in shape.requests:
        if amount <= 0:
            continue
        col = table.resource_index.get(name)
        if col is None:
            missing.append(name)
        else:
            cols.append(col)
            amounts.append(amount)
    scored = [
        (table.resource_index[n], a) for n, a in scored_requests(shape).items() if n in table.resource_index
    ]
    return Request(
        np.array(cols, dtype=np.int64),
        np.array(amounts, dtype=np.int64),
        tuple(missing),
        np.array([c for c, _ in scored], dtype=np.int64),
        np.array([a for _, a in scored], dtype=np.int64),
    )


def charge(table: NodeTable, usage: Usage, shape: PodShape, node_ids: IntArray, sign: int = 1) -> None:
    """Add (or, with ``sign=-1``, remove) one pod of ``shape`` per entry of ``node_ids``."""
    req = request_vector(table, shape)
    if len(node_ids) == 1:
        node = int(node_ids[0])
        for col, amount in zip(req.columns.tolist(), req.amounts.tolist(), strict=True):
            usage.used[node, col] += sign * amount
        for col, amount in zip(req.score_columns.tolist(), req.score_amounts.tolist(), strict=True):
            usage.scored[node, col] += sign * amount
        return
    counts = np.bincount(node_ids, minlength=len(table))
    touched = np.flatnonzero(counts)
    per_node = sign * counts[touched]
    for col, amount in zip(req.columns.tolist(), req.amounts.tolist(), strict=True):
        usage.used[touched, col] += per_node * amount
    for col, amount in zip(req.score_columns.tolist(), req.score_amounts.tolist(), strict=True):
        usage.scored[touched, col] += per_node * amount


def capacity(table: NodeTable, used: IntArray, rows: IntArray, req: Request) -> IntArray:
    """How many more pods of the request each node in ``rows`` can take."""
    cap = np.full(len(rows), np.iinfo(np.int64).max, dtype=np.int64)
    if req.missing:
        return np.zeros(len(rows), dtype=np.int64)
    for col, amount in zip(req.columns.tolist(), req.amounts.tolist(), strict=True):
        # Column by column: the matrices are column-major, so each column is one contiguous read.
        free = table.allocatable[:, col][rows] - used[:, col][rows]
        np.minimum(cap, free // amount, out=cap)
    result: IntArray = np.maximum(cap, 0)
    return result


def _room_on(table: NodeTable, used: IntArray, node: int, req: Request) -> int:
    """``capacity`` of one node, without building arrays for it."""
    room = -1  # no positive request: unbounded, as capacity's int64 maximum
    for col, amount in zip(req.columns.tolist(), req.amounts.tolist(), strict=True):
        free = int(table.allocatable[node, col]) - int(used[node, col])
        fits = max(free // amount, 0)
        room = fits if room < 0 else min(room, fits)
    return int(np.iinfo(np.int64).max) if room < 0 else room


def fits_one(table: NodeTable, used: IntArray, ok: BoolArray, req: Request) -> BoolArray:
    """Of the nodes in ``ok``, those with room for one more pod of the request."""
    fits = ok.copy()
    if req.missing:
        fits[:] = False
        return fits
    for col, amount in zip(req.columns.tolist(), req.amounts.tolist(), strict=True):
        fits &= table.allocatable[:, col] - used[:, col] >= amount
    return fits


def _normalised(values: IntArray, reverse: bool) -> IntArray:
    """kube-scheduler's DefaultNormalizeScore: scale to 0..100 by the maximum, optionally reversed."""
    top = int(values.max()) if len(values) else 0
    if top == 0:
        return np.full(len(values), MAX_SCORE if reverse else 0, dtype=np.int64)
    scaled: IntArray = values * MAX_SCORE // top
    return MAX_SCORE - scaled if reverse else scaled


def constant_scores(table: NodeTable, shape: PodShape, config: SchedulerConfig) -> IntArray:
    """Per node, the part of the score that does not move as pods land: taints and preferences.

    Normalised over the nodes passing the static filters (not only those with room left), so
    the value stays the same while a run of pods fills nodes up."""

    def compute() -> IntArray:
        static = np.flatnonzero(static_fit(table, shape))
        total = np.zeros(len(table), dtype=np.int64)
        if config.taint_weight:
            counts = prefer_no_schedule_count(table, shape.tolerations)[static]
            total[static] += config.taint_weight * _normalised(counts, reverse=True)
        if config.affinity_weight and shape.preferred_terms:
            weights = preferred_weight(table, shape.preferred_terms)[static]
            total[static] += config.affinity_weight * _normalised(weights, reverse=False)
        return total

    key = (
        "bonus",
        shape.tolerations,
        shape.node_selector,
        shape.required_terms,
        shape.preferred_terms,
        config.taint_weight,
        config.affinity_weight,
    )
    result: IntArray = table.memo(key, compute)
    return result


def _fit_scores(
    table: NodeTable,
    usage: Usage,
    rows: IntArray | None,
    shape: PodShape,
    config: SchedulerConfig,
    first: int,
    count: int,
) -> IntArray:
    """``[len(rows) x count]``: the fit score of the pod placed as slot ``first + j`` on each node
    (``rows`` None: every node)."""
    scored = [(table.resource_index[r], w, r) for r, w in config.score_resources if r in table.resource_index]
    requests = scored_requests(shape)
    size = len(table) if rows is None else len(rows)
    total = np.zeros((size, count), dtype=np.int64)
    weights = np.zeros(size, dtype=np.int64)
    step = np.arange(first + 1, first + count + 1, dtype=np.int64)
    for col, weight, name in scored:
        alloc = table.allocatable[:, col]
        base = usage.scored[:, col]
        if rows is not None:
            alloc, base = alloc[rows], base[rows]
        after = base[:, None] + step[None, :] * requests.get(name, 0)
        has = alloc > 0
        safe = np.where(has, alloc, 1)[:, None]
        if config.scoring is Scoring.LEAST_ALLOCATED:
            score = np.clip((safe - after) * MAX_SCORE // safe, 0, MAX_SCORE)
        else:
            score = np.clip(after * MAX_SCORE // safe, 0, MAX_SCORE)
        total += np.where(has[:, None], score * weight, 0)
        weights += np.where(has, weight, 0)
    mean: IntArray = total // np.maximum(weights, 1)[:, None]
    return mean


def place(
    table: NodeTable,
    usage: Usage,
    shape: PodShape,
    k: int,
    config: SchedulerConfig,
    allowed: BoolArray | None = None,
) -> IntArray:
    """Node ids for up to ``k`` pods of ``shape``, in the order pods should take them.

    ``usage`` is not changed; the caller charges the placed pods (``charge``). Fewer than ``k`` ids come
    back when the nodes are full. ``allowed``: a further filter (inter-pod affinity) the
    caller computed for this pod.
    """
    req = request_vector(table, shape)
    n = len(table)
    if req.missing or n == 0:
        return np.zeros(0, dtype=np.int64)
    ok = static_fit(table, shape)
    if allowed is not None:
        ok = ok & allowed
    rows = np.flatnonzero(ok)
    if len(rows) <= 1:
        # The filters left one node at most (a pod pinned by nodeName, a hostname selector or
        # the node its admission planned): nothing to score, only its room to check.
        room = _room_on(table, usage.used, int(rows[0]), req) if len(rows) else 0
        return np.full(min(k, room), rows[0] if len(rows) else 0, dtype=np.int64)
    # Keys order (score desc, node id asc) as one integer: score * n + (n - 1 - id).
    if k == 1:
        # One pod: score every node in place (contiguous columns beat gathering the fitting rows).
        fits = fits_one(table, usage.used, ok, req)
        first = _score_one(table, usage, shape, config)
        keys = (config.fit_weight * first + constant_scores(table, shape, config)) * n + _descending(n)
        keys[~fits] = -1
        best = int(keys.argmax())
        return np.array([best] if keys[best] >= 0 else [], dtype=np.int64)
    cap = capacity(table, usage.used, rows, req)
    has_room = cap > 0
    rows, cap = rows[has_room], cap[has_room]
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    bonus = constant_scores(table, shape, config)[rows]
    tiebreak = (n - 1) - rows
    if config.scoring is Scoring.MOST_ALLOCATED:
        first = _fit_scores(table, usage, rows, shape, config, 0, 1)[:, 0]
        keys = (config.fit_weight * first + bonus) * n + tiebreak
        order = np.argsort(-keys, kind="stable")
        return np.repeat(rows[order], cap[order])[:k]
    return _spread(table, usage, rows, cap, shape, k, config, bonus, tiebreak)


def _score_one(table: NodeTable, usage: Usage, shape: PodShape, config: SchedulerConfig) -> IntArray:
    """Every node's fit score for one more pod: ``_fit_scores`` for a single slot, in 1-D."""
    requests = scored_requests(shape)
    n = len(table)
    total = np.zeros(n, dtype=np.int64)
    weight_sum: IntArray | int = 0
    for name, weight in config.score_resources:
        col = table.resource_index.get(name)
        if col is None:
            continue
        safe, has, everywhere = usage.divisor(table, col)
        after = usage.scored[:, col] + requests.get(name, 0)
        # Usage is never negative, so only one bound can be crossed in each strategy.
        if config.scoring is Scoring.LEAST_ALLOCATED:
            score = (safe - after) * MAX_SCORE // safe
            np.maximum(score, 0, out=score)
        else:
            score = after * MAX_SCORE // safe
            np.minimum(score, MAX_SCORE, out=score)
        if everywhere:
            total += score * weight
            weight_sum = weight_sum + weight
        else:
            total += np.where(has, score * weight, 0)
            weight_sum = weight_sum + np.where(has, weight, 0)
    mean: IntArray = total // np.maximum(weight_sum, 1)
    return mean


def _descending(n: int) -> IntArray:
    ids: IntArray = np.arange(n - 1, -1, -1, dtype=np.int64)
    return ids


def _spread(
    table: NodeTable,
    usage: Usage,
    rows: IntArray,
    cap: IntArray,
    shape: PodShape,
    k: int,
    config: SchedulerConfig,
    bonus: IntArray,
    tiebreak: IntArray,
) -> IntArray:
    n = len(table)
    placed: list[IntArray] = []
    taken = np.zeros(len(rows), dtype=np.int64)  # slots of each node already handed out
    remaining = k
    rounds = 0
    while remaining > 0:
        open_rows = np.flatnonzero(taken < cap)
        if len(open_rows) == 0:
            break
        # Look a little past an even share per node, twice as far each further round: few
        # rounds, and far fewer slots scored than every node's full capacity.
        share = (-(-remaining // len(open_rows)) + 1) << rounds
        rounds += 1
        width = int(
            min(remaining, (cap - taken)[open_rows].max(), max(1, _SLOT_BUDGET // len(open_rows)), share)
        )
        # Score slots taken..taken+width of each node, plus one more to know the best key left
        # unseen: a slot is safe to hand out only if no unseen slot could outrank it.
        keys = np.full((len(open_rows), width + 1), -1, dtype=np.int64)
        for i in np.unique(taken[open_rows]):
            group = open_rows[taken[open_rows] == i]
            where = np.searchsorted(open_rows, group)
            fit = _fit_scores(table, usage, rows[group], shape, config, int(i), width + 1)
            keys[where] = (config.fit_weight * fit + bonus[group, None]) * n + tiebreak[group, None]
        slot = np.arange(width + 1)[None, :]
        keys[slot >= (cap - taken)[open_rows][:, None]] = -1
        unseen_best = int(keys[:, width].max())
        seen = keys[:, :width].ravel()
        safe = seen[seen >= max(unseen_best, 0)]
        take = min(remaining, len(safe))
        if take < len(safe):
            safe = np.partition(safe, len(safe) - take)[len(safe) - take :]
        best = np.sort(safe)[::-1]
        node_ids = (n - 1) - best % n
        placed.append(node_ids)
        remaining -= take
        local = np.searchsorted(rows, np.unique(node_ids))
        taken[local] += np.bincount(node_ids, minlength=n)[rows[local]]
    return np.concatenate(placed) if placed else np.zeros(0, dtype=np.int64)
