"""The admission cache keeps its node table from events (pods bound, workloads admitted with a
node choice): after any sequence of events it equals the table built from scratch out of the
same objects by the pure ``build.node_table``."""

from __future__ import annotations

import random
from typing import Any

from kubehpc.controllers.kueue.cache import NODE, POD, WORKLOAD, AdmissionCache
from kubehpc.sched.admission.build import node_table
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.planned import HOSTNAME_LEVEL, POD_SET_ANNOTATION, WORKLOAD_ANNOTATION

Obj = dict[str, Any]
NODES = ("n1", "n2", "n3")


def node(name: str) -> Obj:
    return {
        "kind": "Node",
        "metadata": {"name": name, "uid": name, "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def workload(name: str, rv: int, plan: dict[str, int] | None, finished: bool = False) -> Obj:
    status: Obj = {}
    if plan is not None:
        domains = [{"values": [n], "count": c} for n, c in plan.items()]
        status = {
            "conditions": [{"type": "QuotaReserved", "status": "True"}]
            + ([{"type": "Finished", "status": "True"}] if finished else []),
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": sum(plan.values()),
                        "topologyAssignment": {"levels": [HOSTNAME_LEVEL], "domains": domains},
                    }
                ],
            },
        }
    return {
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default", "uid": name, "resourceVersion": str(rv)},
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 4,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
                    },
                }
            ]
        },
        "status": status,
    }


def pod(name: str, rv: int, node: str | None, workload: str | None, phase: str = "Running") -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "uid": name, "resourceVersion": str(rv)}
    if workload:
        meta["annotations"] = {WORKLOAD_ANNOTATION: workload, POD_SET_ANNOTATION: "main"}
    spec: Obj = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def rows(table: NodeTable | None) -> dict[str, Any]:
    assert table is not None
    return {table.node_info(i).name: dict(table.node_info(i).used) for i in range(len(table))}


def from_scratch(cache: AdmissionCache) -> dict[str, Any]:
    return rows(node_table(cache.values(NODE), cache.values(POD), cache.values(WORKLOAD)))


def test_promised_room_appears_on_admission_and_turns_into_pods_as_they_bind() -> None:
    cache = AdmissionCache()
    cache.replace(NODE, [node(n) for n in NODES])
    cache.put(WORKLOAD, workload("w", 2, {"n1": 2, "n2": 1}))
    assert rows(cache.node_table())["n1"] == {"cpu": 2000, "pods": 2}
    cache.put(POD, pod("p1", 3, "n1", "w"))
    assert rows(cache.node_table())["n1"] == {"cpu": 2000, "pods": 2}  # once, not twice
    cache.put(POD, pod("p2", 4, "n3", "w"))  # off its plan: uses up one pod of it
    table = rows(cache.node_table())
    # n1: p1 plus one pod still promised; n2's pod is the one that went to n3 instead.
    assert table == {"n1": {"cpu": 2000, "pods": 2}, "n2": {}, "n3": {"cpu": 1000, "pods": 1}}
    assert table == from_scratch(cache)


def test_the_kept_table_equals_the_one_built_from_scratch_after_any_events() -> None:
    rng = random.Random(7)
    cache = AdmissionCache()
    cache.replace(NODE, [node(n) for n in NODES])
    rv = 10
    for _ in range(400):
        rv += 1
        i = rng.randrange(6)
        choice = rng.random()
        if choice < 0.4:
            plan = None if rng.random() < 0.3 else {n: rng.randrange(0, 3) for n in NODES}
            plan = {n: c for n, c in (plan or {}).items() if c} or None
            cache.put(WORKLOAD, workload(f"w{i}", rv, plan, finished=rng.random() < 0.1))
        elif choice < 0.5:
            cache.delete(WORKLOAD, workload(f"w{i}", rv, None))
        elif choice < 0.9:
            cache.put(
                POD,
                pod(
                    f"p{rng.randrange(12)}",
                    rv,
                    rng.choice((*NODES, None)),
                    f"w{i}" if rng.random() < 0.8 else None,
                    rng.choice(("Running", "Running", "Succeeded")),
                ),
            )
        else:
            cache.delete(POD, pod(f"p{rng.randrange(12)}", rv, None, None))
        assert rows(cache.node_table()) == from_scratch(cache)
