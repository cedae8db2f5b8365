"""Filters and scores that depend only on a node's labels, taints and cordon, never on usage.

Each function answers for every node at once and is memoised on the table per distinct
argument, so a thousand pods with the same selector cost one evaluation. The rules are
kube-scheduler's default plugins:

* NodeUnschedulable: a cordoned node takes only pods tolerating
  ``node.kubernetes.io/unschedulable:NoSchedule``.
* TaintToleration: the first NoSchedule/NoExecute taint (in the node's order) no toleration
  matches rejects the node and names the reason; untolerated PreferNoSchedule taints lower the
  score.
* NodeAffinity: ``nodeSelector`` (every pair must match) AND required node affinity (terms
  ORed, requirements within a term ANDed); preferred terms add their weight to the score.

InterPodAffinity is not here: it depends on which pods sit where, which changes as a cycle
places pods, so it cannot be memoised per table; see ``sched.interpod`` (applied by ``decide``).
"""

from __future__ import annotations

import numpy as np

from kubehpc.sched.model import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    UNSCHEDULABLE_TAINT_KEY,
    NodeSelectorTerm,
    PreferredTerm,
    Requirement,
    Taint,
    Toleration,
)
from kubehpc.sched.nodetable import BoolArray, IntArray, NodeTable

_CORDON_TAINT = Taint(UNSCHEDULABLE_TAINT_KEY, "", NO_SCHEDULE)


def cordoned(table: NodeTable, tolerations: tuple[Toleration, ...]) -> BoolArray:
    """Nodes the pod may not use because they are cordoned (``spec.unschedulable``)."""

    def compute() -> BoolArray:
        if any(t.tolerates(_CORDON_TAINT) for t in tolerations):
            return np.zeros(len(table), dtype=np.bool_)
        return table.unschedulable.copy()

    result: BoolArray = table.memo(("cordoned", tolerations), compute)
    return result


def _untolerated(table: NodeTable, tolerations: tuple[Toleration, ...], effects: frozenset[str]) -> BoolArray:
    """``[nodes x taint slots]``: the slot holds a taint of ``effects`` no toleration matches."""
    lookup = np.array(
        [t.effect in effects and not any(tol.tolerates(t) for tol in tolerations) for t in table.taints]
        + [False],  # id -1 (an empty slot) indexes this last entry
        dtype=np.bool_,
    )
    untolerated: BoolArray = lookup[table.taint_matrix]
    return untolerated


def first_untolerated_taint(table: NodeTable, tolerations: tuple[Toleration, ...]) -> IntArray:
    """Per node, the id (into ``table.taints``) of the first NoSchedule or NoExecute taint the
    pod does not tolerate, or -1 when it tolerates them all."""

    def compute() -> IntArray:
        result = np.full(len(table), -1, dtype=np.int64)
        if table.taint_matrix.shape[1] == 0:
            return result
        bad = _untolerated(table, tolerations, frozenset((NO_SCHEDULE, NO_EXECUTE)))
        rows = np.flatnonzero(bad.any(axis=1))
        cols = bad[rows].argmax(axis=1)
        result[rows] = table.taint_matrix[rows, cols]
        return result

    result: IntArray = table.memo(("taint", tolerations), compute)
    return result


def prefer_no_schedule_count(table: NodeTable, tolerations: tuple[Toleration, ...]) -> IntArray:
    """Per node, how many PreferNoSchedule taints the pod does not tolerate."""

    def compute() -> IntArray:
        if table.taint_matrix.shape[1] == 0:
            return np.zeros(len(table), dtype=np.int64)
        bad = _untolerated(table, tolerations, frozenset((PREFER_NO_SCHEDULE,)))
        counts: IntArray = bad.sum(axis=1, dtype=np.int64)
        return counts

    result: IntArray = table.memo(("prefer-taint", tolerations), compute)
    return result


def _requirement(table: NodeTable, req: Requirement) -> BoolArray:
    column = table.label_column(req.key)
    op = req.operator
    if op in ("In", "NotIn"):
        wanted = [column.index[v] for v in req.values if v in column.index]
        matched: BoolArray = np.isin(column.codes, wanted) if wanted else np.zeros(len(table), dtype=np.bool_)
        return matched if op == "In" else ~matched
    if op == "Exists":
        exists: BoolArray = column.codes >= 0
        return exists
    if op == "DoesNotExist":
        absent: BoolArray = column.codes < 0
        return absent
    if op in ("Gt", "Lt") and len(req.values) == 1:
        try:
            bound = int(req.values[0])
        except ValueError:
            return np.zeros(len(table), dtype=np.bool_)
        numbers, valid = column.numbers()
        compared: BoolArray = valid & ((numbers > bound) if op == "Gt" else (numbers < bound))
        return compared
    # An operator the API would have rejected matches nothing rather than everything.
    return np.zeros(len(table), dtype=np.bool_)


def _field(table: NodeTable, req: Requirement) -> BoolArray:
    # matchFields supports metadata.name with In / NotIn only (as Kubernetes validates).
    if req.key != "metadata.name" or req.operator not in ("In", "NotIn"):
        return np.zeros(len(table), dtype=np.bool_)
    matched = np.zeros(len(table), dtype=np.bool_)
    rows = [table.index[name] for name in req.values if name in table.index]
    matched[rows] = True
    return matched if req.operator == "In" else ~matched


def _term(table: NodeTable, term: NodeSelectorTerm) -> BoolArray:
    if not term.match_expressions and not term.match_fields:
        return np.zeros(len(table), dtype=np.bool_)  # an empty term selects no node
    mask = np.ones(len(table), dtype=np.bool_)
    for req in term.match_expressions:
        mask &= _requirement(table, req)
    for req in term.match_fields:
        mask &= _field(table, req)
    return mask


def affinity_match(
    table: NodeTable,
    node_selector: tuple[tuple[str, str], ...],
    required_terms: tuple[NodeSelectorTerm, ...] | None,
) -> BoolArray:
    """Nodes matching the pod's ``nodeSelector`` and required node affinity."""

    def compute() -> BoolArray:
        mask = np.ones(len(table), dtype=np.bool_)
        for key, value in node_selector:
            mask &= _requirement(table, Requirement(key, "In", (value,)))
        if required_terms is not None:
            any_term = np.zeros(len(table), dtype=np.bool_)
            for term in required_terms:
                any_term |= _term(table, term)
            mask &= any_term
        return mask

    result: BoolArray = table.memo(("affinity", node_selector, required_terms), compute)
    return result


def preferred_weight(table: NodeTable, preferred: tuple[PreferredTerm, ...]) -> IntArray:
    """Per node, the summed weight of the preferred node-affinity terms it matches."""

    def compute() -> IntArray:
        total = np.zeros(len(table), dtype=np.int64)
        for p in preferred:
            total += np.where(_term(table, p.preference), p.weight, 0)
        return total

    result: IntArray = table.memo(("preferred", preferred), compute)
    return result
