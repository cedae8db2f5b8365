"""Required inter-pod affinity and anti-affinity: kube-scheduler's InterPodAffinity filter.

A pod's ``podAffinity`` / ``podAntiAffinity`` terms name other pods (a label selector, over
namespaces) and a topology key (a node label: ``kubernetes.io/hostname`` for "the same node",
``topology.kubernetes.io/zone`` for "the same zone", any label in general). A node passes when:

1. no pod already placed has an anti-affinity term that matches the incoming pod and whose
   topology domain (its node's value of the term's key) contains the node — the symmetric rule
   that keeps new pods away from, say, an ``sbatch --exclusive`` job's nodes;
2. for each of the pod's own anti-affinity terms, no matching pod sits in the node's domain
   (a node without the key is not in any domain, so it passes);
3. for each of the pod's own affinity terms, the node has the key and a pod matching *all* the
   terms sits in its domain — except for the first pod of a group that attracts itself: when no
   placed pod matches the terms anywhere and the pod matches them itself, any node with all the
   keys passes.

The checks are applied in that order and a node is charged to the first that rejects it, with
kube-scheduler's reasons. Everything is pure: :class:`InterPodState` starts from the pods the
snapshot names per node and learns each pod the core places during the cycle, so pods decided
together see each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubehpc.api import fields as F

if TYPE_CHECKING:  # nodetable imports model, which imports this module's data types
    from kubehpc.sched.nodetable import BoolArray, IntArray, NodeTable

EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# Per-node outcome codes, in the order the filter checks them.
PASS, EXISTING_ANTI, OWN_ANTI, OWN_AFFINITY = 0, 1, 2, 3

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SelectorRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        return False  # an operator the API would have refused matches nothing


@dataclass(frozen=True)
class LabelSelector:
    """A ``metav1.LabelSelector``: the empty selector matches every set of labels."""

    match_labels: Labels = ()
    match_expressions: tuple[SelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.match_expressions
        )


@dataclass(frozen=True)
class PodAffinityTerm:
    """One required term. ``selector`` None (the field left out) matches no pod.

    The namespaces a term looks at are ``namespaces`` plus those ``namespace_selector``
    matches; with neither given, the pod's own namespace (filled in when parsing)."""

    selector: LabelSelector | None
    topology_key: str
    namespaces: frozenset[str] = frozenset()
    namespace_selector: LabelSelector | None = None

    def matches(self, pod: PodIdentity, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        if self.selector is None:
            return False
        in_scope = pod.namespace in self.namespaces or (
            self.namespace_selector is not None
            and self.namespace_selector.matches(labels_of_namespace(pod.namespace, namespace_labels))
        )
        return in_scope and self.selector.matches(dict(pod.labels))


@dataclass(frozen=True)
class PodIdentity:
    """What other pods' terms look at, plus the pod's own required terms."""

    namespace: str
    labels: Labels = ()
    affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()

    @property
    def has_terms(self) -> bool:
        return bool(self.affinity or self.anti_affinity)


def labels_of_namespace(namespace: str, known: Mapping[str, Mapping[str, str]]) -> Mapping[str, str]:
    """A namespace's labels; the API server always sets ``kubernetes.io/metadata.name``, so a
    namespace the caller did not describe still has that one."""
    labels = known.get(namespace)
    if labels is None:
        return {NAMESPACE_NAME_LABEL: namespace}
    return {NAMESPACE_NAME_LABEL: namespace, **labels}


# ----------------------------------------------------------------------- parsing


def _selector(raw: Any) -> LabelSelector | None:
    if raw is None:
        return None
    return LabelSelector(
        match_labels=tuple(sorted((str(k), str(v)) for k, v in F.obj_field(raw, "matchLabels").items())),
        match_expressions=tuple(
            SelectorRequirement(
                str(e.get("key", "")),
                str(e.get("operator", "")),
                tuple(str(v) for v in e.get("values") or ()),
            )
            for e in raw.get("matchExpressions") or ()
        ),
    )


def _term(raw: dict[str, Any], namespace: str, labels: Mapping[str, str]) -> PodAffinityTerm:
    selector = _selector(raw.get("labelSelector"))
    # matchLabelKeys / mismatchLabelKeys: the incoming pod's own values join the selector.
    extra = [
        SelectorRequirement(k, "In", (labels[k],)) for k in raw.get("matchLabelKeys") or () if k in labels
    ]
    extra += [
        SelectorRequirement(k, "NotIn", (labels[k],))
        for k in raw.get("mismatchLabelKeys") or ()
        if k in labels
    ]
    if selector is not None and extra:
        selector = LabelSelector(selector.match_labels, selector.match_expressions + tuple(extra))
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or ())
    ns_selector = _selector(raw.get("namespaceSelector"))
    if not namespaces and ns_selector is None:
        namespaces = frozenset((namespace,))
    return PodAffinityTerm(selector, str(raw.get("topologyKey", "")), namespaces, ns_selector)


def identity_of(pod: dict[str, Any]) -> PodIdentity:
    """A pod object's namespace, labels and required inter-pod terms."""
    meta = F.metadata(pod)
    namespace = str(meta.get("namespace") or "default")
    labels = {str(k): str(v) for k, v in F.obj_field(meta, "labels").items()}
    affinity = F.obj_field(F.spec(pod), "affinity")

    def terms(kind: str) -> tuple[PodAffinityTerm, ...]:
        required = (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        return tuple(_term(t, namespace, labels) for t in required)

    return PodIdentity(
        namespace=namespace,
        labels=tuple(sorted(labels.items())),
        affinity=terms("podAffinity"),
        anti_affinity=terms("podAntiAffinity"),
    )


# ----------------------------------------------------------------------- the filter


class InterPodState:
    """The pods on each node as the filter sees them, for one decision cycle.

    Built from the snapshot's pods per node; :meth:`add` records each pod the cycle places.
    """

    def __init__(
        self,
        table: NodeTable,
        pods: Mapping[str, Sequence[PodIdentity]],
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.table = table
        self.namespace_labels = namespace_labels or {}
        self.placed: list[tuple[int, PodIdentity]] = []
        self.anti: list[tuple[int, PodIdentity]] = []
        for name, node_pods in pods.items():
            row = table.index.get(name)
            if row is not None:
                for pod in node_pods:
                    self.add(row, pod)

    def add(self, node_id: int, pod: PodIdentity | None) -> None:
        if pod is None:
            return
        self.placed.append((node_id, pod))
        if pod.anti_affinity:
            self.anti.append((node_id, pod))

    def add_all(self, node_ids: Iterable[int], pod: PodIdentity | None) -> None:
        for node_id in node_ids:
            self.add(int(node_id), pod)

    def concerns(self, pod: PodIdentity) -> bool:
        """Whether the filter can reject any node for this pod (else skip it entirely)."""
        return pod.has_terms or any(
            term.matches(pod, self.namespace_labels) for _, other in self.anti for term in other.anti_affinity
        )

    def _domain(self, key: str, node_id: int) -> int:
        """The code of the node's value of ``key`` (-1: the node lacks the label)."""
        return int(self.table.label_column(key).codes[node_id])

    def _in_domains(self, key: str, codes: Iterable[int]) -> BoolArray:
        wanted = [c for c in set(codes) if c >= 0]
        column = self.table.label_column(key).codes
        if not wanted:
            return np.zeros(len(self.table), dtype=np.bool_)
        inside: BoolArray = np.isin(column, wanted)
        return inside

    def outcome(self, pod: PodIdentity) -> IntArray:
        """Per node: PASS, or the first check that rejects it (EXISTING_ANTI, OWN_ANTI,
        OWN_AFFINITY)."""
        n = len(self.table)
        result = np.zeros(n, dtype=np.int64)
        ns_labels = self.namespace_labels
        # 1. Existing pods' anti-affinity that matches this pod blocks their domains.
        blocked: dict[str, list[int]] = {}
        for node_id, other in self.anti:
            for term in other.anti_affinity:
                if term.matches(pod, ns_labels):
                    blocked.setdefault(term.topology_key, []).append(self._domain(term.topology_key, node_id))
        for key, codes in blocked.items():
            result[(result == PASS) & self._in_domains(key, codes)] = EXISTING_ANTI
        # 2. The pod's own anti-affinity: no matching pod in the node's domain.
        for term in pod.anti_affinity:
            codes = [
                self._domain(term.topology_key, nid)
                for nid, other in self.placed
                if term.matches(other, ns_labels)
            ]
            result[(result == PASS) & self._in_domains(term.topology_key, codes)] = OWN_ANTI
        # 3. The pod's own affinity: a pod matching every term in the node's domain, per term.
        if pod.affinity:
            holders = [
                nid for nid, other in self.placed if all(t.matches(other, ns_labels) for t in pod.affinity)
            ]
            ok = np.ones(n, dtype=np.bool_)
            has_keys = np.ones(n, dtype=np.bool_)
            counted = False  # a holder on a node with one of the keys (kube-scheduler's counts)
            for term in pod.affinity:
                column = self.table.label_column(term.topology_key).codes
                has_keys &= column >= 0
                domains = [int(column[h]) for h in holders]
                counted = counted or any(c >= 0 for c in domains)
                ok &= self._in_domains(term.topology_key, domains)
            if not counted and all(t.matches(pod, ns_labels) for t in pod.affinity):
                ok = has_keys  # the first pod of a group that attracts itself
            result[(result == PASS) & ~ok] = OWN_AFFINITY
        return result

    def allowed(self, pod: PodIdentity) -> BoolArray:
        passed: BoolArray = self.outcome(pod) == PASS
        return passed


def rejection_counts(outcome: IntArray, candidates: BoolArray) -> tuple[int, int, int]:
    """Among ``candidates`` (nodes every earlier filter passed), how many each check rejects:
    existing pods' anti-affinity, own anti-affinity, own affinity."""
    picked = outcome[candidates]
    return (
        int((picked == EXISTING_ANTI).sum()),
        int((picked == OWN_ANTI).sum()),
        int((picked == OWN_AFFINITY).sum()),
    )
