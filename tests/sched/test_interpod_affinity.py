"""Required inter-pod affinity and anti-affinity in the pure core, as kube-scheduler's
InterPodAffinity filter decides it (own terms, existing pods' anti-affinity, the first pod of
a self-attracting group, namespaces, any topology key) and words it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sched_builders import node, placed, pod_spec

from kubehpc.sched import NodeTable, PodSet, SchedulerConfig, Snapshot, decide
from kubehpc.sched.interpod import PodIdentity, identity_of
from kubehpc.sched.podspec import shape_of

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def term(
    selector: dict[str, Any] | None, key: str = HOST, namespaces: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": key, **extra}
    if selector is not None:
        out["labelSelector"] = selector
    if namespaces is not None:
        out["namespaces"] = namespaces
    return out


def pod_obj(
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    affinity: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
    cpu: str = "1",
) -> dict[str, Any]:
    spec_affinity: dict[str, Any] = {}
    if affinity:
        spec_affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
    if anti:
        spec_affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    spec = pod_spec(cpu=cpu)
    if spec_affinity:
        spec["affinity"] = spec_affinity
    return {"metadata": {"namespace": namespace, "labels": labels or {}}, "spec": spec}


def waiting(name: str, obj: dict[str, Any], count: int = 1, created: float = 0.0) -> PodSet:
    shape = replace(shape_of(obj["spec"]), interpod=identity_of(obj))
    ids = (name,) if count == 1 else tuple(f"{name}-{i}" for i in range(count))
    return PodSet(uid=name, shape=shape, created=created, count=count, pod_ids=ids)


def hosts(n: int, zones: int = 0) -> list[Any]:
    out = []
    for i in range(n):
        labels = {HOST: f"n{i}"}
        if zones:
            labels[ZONE] = f"z{i % zones}"
        out.append(node(f"n{i}", labels=labels))
    return out


def run(nodes: list[Any], pods: list[PodSet], existing: dict[str, list[dict[str, Any]]] | None = None) -> Any:
    on_nodes: dict[str, tuple[PodIdentity, ...]] = {
        name: tuple(identity_of(o) for o in objs) for name, objs in (existing or {}).items()
    }
    return decide(Snapshot(NodeTable.build(nodes), tuple(pods), SchedulerConfig(), pods=on_nodes))


EVERYTHING: dict[str, Any] = {}
EXCLUSIVE = [term(EVERYTHING, namespaceSelector={})]


def test_anti_affinity_keeps_a_pod_off_the_node_of_a_matching_pod() -> None:
    existing = {"n0": [pod_obj({"app": "db"})]}
    got = run(hosts(2), [waiting("web", pod_obj(anti=[term({"matchLabels": {"app": "db"}})]))], existing)
    assert placed(got) == {"web": "n1"}


def test_anti_affinity_ignores_pods_the_selector_does_not_match() -> None:
    existing = {"n0": [pod_obj({"app": "cache"})], "n1": [pod_obj({"app": "db"})]}
    got = run(hosts(2), [waiting("web", pod_obj(anti=[term({"matchLabels": {"app": "db"}})]))], existing)
    assert placed(got) == {"web": "n0"}


def test_anti_affinity_is_symmetric_an_existing_pods_terms_repel_new_pods() -> None:
    # The existing pod holds the anti-affinity; the new pod has no terms of its own.
    existing = {"n0": [pod_obj({"app": "db"}, anti=[term({"matchLabels": {"app": "web"}})])]}
    got = run(hosts(2), [waiting("web", pod_obj({"app": "web"}))], existing)
    assert placed(got) == {"web": "n1"}


def test_pods_of_one_exclusive_run_repel_each_other_within_a_cycle() -> None:
    got = run(hosts(3), [waiting("job", pod_obj({"job": "x"}, anti=EXCLUSIVE), count=3)])
    assert sorted(placed(got).values()) == ["n0", "n1", "n2"]


def test_an_exclusive_pod_takes_no_node_that_already_runs_a_pod() -> None:
    existing = {"n0": [pod_obj({"app": "other"}, namespace="team-b")]}
    got = run(hosts(2), [waiting("ex", pod_obj(anti=EXCLUSIVE))], existing)
    assert placed(got) == {"ex": "n1"}


def test_a_pod_queued_after_an_exclusive_pod_in_the_same_cycle_stays_off_its_node() -> None:
    pods = [waiting("ex", pod_obj(anti=EXCLUSIVE), created=1), waiting("plain", pod_obj(), created=2)]
    got = run(hosts(1), pods)
    assert placed(got) == {"ex": "n0"}
    assert [p.pod_set for p in got.pending] == ["plain"]
    assert "1 node(s) didn't satisfy existing pods anti-affinity rules" in got.pending[0].message


def test_the_pending_message_counts_nodes_as_kube_scheduler_words_it() -> None:
    existing = {"n0": [pod_obj({"app": "db"})], "n1": [pod_obj({"app": "db"})]}
    got = run(hosts(2), [waiting("web", pod_obj(anti=[term({"matchLabels": {"app": "db"}})]))], existing)
    assert got.pending[0].message == (
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    )


def test_a_node_short_of_resources_is_charged_to_resources_first() -> None:
    nodes = [node("n0", cpu="1", labels={HOST: "n0"}), node("n1", labels={HOST: "n1"})]
    existing = {"n1": [pod_obj({"app": "db"})]}
    got = run(
        nodes, [waiting("web", pod_obj(anti=[term({"matchLabels": {"app": "db"}})], cpu="2"))], existing
    )
    assert got.pending[0].message == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod anti-affinity rules."
    )


def test_affinity_puts_a_pod_in_the_domain_of_a_matching_pod() -> None:
    existing = {"n2": [pod_obj({"app": "db"})]}
    got = run(hosts(4), [waiting("web", pod_obj(affinity=[term({"matchLabels": {"app": "db"}})]))], existing)
    assert placed(got) == {"web": "n2"}


def test_affinity_by_zone_allows_every_node_of_the_zone() -> None:
    # n1 and n3 are zone z1, where the db pod runs; n0 and n2 are in z0.
    existing = {"n3": [pod_obj({"app": "db"}, cpu="8")]}
    pods = [waiting("web", pod_obj(affinity=[term({"matchLabels": {"app": "db"}}, key=ZONE)]))]
    got = run(hosts(4, zones=2), pods, existing)
    assert placed(got) == {"web": "n1"}


def test_unmet_affinity_pends_with_kube_schedulers_reason() -> None:
    got = run(hosts(2), [waiting("web", pod_obj(affinity=[term({"matchLabels": {"app": "db"}})]))])
    assert got.pending[0].message == (
        "0/2 nodes are available: 2 node(s) didn't match pod affinity rules. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_the_first_pod_of_a_self_attracting_group_may_go_anywhere_and_the_rest_follow() -> None:
    group = pod_obj({"app": "ring"}, affinity=[term({"matchLabels": {"app": "ring"}}, key=ZONE)])
    got = run(hosts(4, zones=2), [waiting("ring", group, count=3)])
    zones = {name: f"z{int(name[1:]) % 2}" for name in ("n0", "n1", "n2", "n3")}
    assert len({zones[n] for n in placed(got).values()}) == 1
    assert len(placed(got)) == 3


def test_affinity_requires_the_topology_key_on_the_node() -> None:
    nodes = [node("n0", labels={HOST: "n0"}), node("n1", labels={HOST: "n1", ZONE: "z0"})]
    group = pod_obj({"app": "ring"}, affinity=[term({"matchLabels": {"app": "ring"}}, key=ZONE)])
    got = run(nodes, [waiting("ring", group)])
    assert placed(got) == {"ring": "n1"}


def test_a_node_without_the_anti_affinity_topology_key_is_in_no_domain() -> None:
    nodes = [node("n0", labels={ZONE: "z0"}), node("n1")]
    existing = {"n0": [pod_obj({"app": "db"}, cpu="8")]}
    pods = [waiting("web", pod_obj(anti=[term({"matchLabels": {"app": "db"}}, key=ZONE)]))]
    got = run(nodes, pods, existing)
    assert placed(got) == {"web": "n1"}


def test_terms_look_only_at_the_pods_own_namespace_by_default() -> None:
    existing = {"n0": [pod_obj({"app": "db"}, namespace="other")]}
    pods = [waiting("web", pod_obj(anti=[term({"matchLabels": {"app": "db"}})], cpu="8"))]
    assert placed(run(hosts(1, zones=0), pods, existing)) == {"web": "n0"}


def test_listed_namespaces_and_namespace_selectors_widen_the_scope() -> None:
    existing = {"n0": [pod_obj({"app": "db"}, namespace="other")]}
    listed = [term({"matchLabels": {"app": "db"}}, namespaces=["other"])]
    by_name = [
        term(
            {"matchLabels": {"app": "db"}},
            namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "other"}},
        )
    ]
    for terms in (listed, by_name):
        got = run(hosts(1), [waiting("web", pod_obj(anti=terms))], existing)
        assert not placed(got), terms


def test_a_term_without_a_label_selector_matches_no_pod() -> None:
    existing = {"n0": [pod_obj({"app": "db"})]}
    got = run(hosts(1), [waiting("web", pod_obj(anti=[term(None)]))], existing)
    assert placed(got) == {"web": "n0"}


def test_match_expressions_select_pods() -> None:
    existing = {"n0": [pod_obj({"tier": "gold"})], "n1": [pod_obj({"tier": "bronze"})]}
    selector = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]}]}
    got = run(hosts(2), [waiting("web", pod_obj(anti=[term(selector)]))], existing)
    assert placed(got) == {"web": "n1"}


def test_pods_without_identity_are_not_checked_when_the_snapshot_names_no_pods() -> None:
    # The filter is off (``pods`` None): a plain decision, as before inter-pod rules existed.
    shape = replace(shape_of(pod_obj(anti=EXCLUSIVE)["spec"]), interpod=None)
    snap = Snapshot(NodeTable.build(hosts(1)), (PodSet("a", shape, count=2, pod_ids=("a-0", "a-1")),))
    assert len(decide(snap).bindings) == 2


def test_match_label_keys_take_the_incoming_pods_own_values() -> None:
    # Anti-affinity to pods of the same "run" as this one (matchLabelKeys), not to every run.
    existing = {"n0": [pod_obj({"app": "train", "run": "1"})], "n1": [pod_obj({"app": "train", "run": "2"})]}
    terms = [term({"matchLabels": {"app": "train"}}, matchLabelKeys=["run"])]
    got = run(hosts(2), [waiting("web", pod_obj({"app": "train", "run": "2"}, anti=terms))], existing)
    assert placed(got) == {"web": "n0"}
