"""The scheduler loop's record of planned pods (``controllers/scheduling/planned.py``): which
waiting pods get pinned, to which node, and what happens when a pin fails."""

from __future__ import annotations

from typing import Any

from kubehpc.controllers.scheduling.cache import Waiting
from kubehpc.controllers.scheduling.planned import PlannedNodes
from kubehpc.sched.model import PodShape
from kubehpc.sched.planned import PLANNED_NODES_ANNOTATION, POD_SET_ANNOTATION, WORKLOAD_ANNOTATION

Obj = dict[str, Any]
SHAPE = PodShape(requests=(("cpu", 1000), ("pods", 1)))


def pod(name: str, plan: str | None = "n1=1,n2=1", node: str | None = None, phase: str = "Pending") -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "uid": name}
    if plan is not None:
        meta["annotations"] = {
            PLANNED_NODES_ANNOTATION: plan,
            WORKLOAD_ANNOTATION: "w",
            POD_SET_ANNOTATION: "main",
        }
    spec: Obj = {"nodeName": node} if node else {}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def waiting(p: Obj, arrival: int) -> Waiting:
    return Waiting(f"default/{p['metadata']['name']}", p["metadata"]["uid"], SHAPE, 0, 0.0, p, arrival)


def pinned_to(ws: list[Waiting]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for w in ws:
        terms = w.shape.required_terms
        out[w.key] = terms[0].match_fields[0].values[0] if terms else None
    return out


def test_waiting_pods_of_a_plan_are_pinned_in_arrival_order() -> None:
    planned = PlannedNodes()
    a, b = pod("a"), pod("b")
    planned.observe("default/a", a)
    planned.observe("default/b", b)
    out = planned.pin([waiting(b, 2), waiting(a, 1)])
    assert pinned_to(out) == {"default/b": "n2", "default/a": "n1"}


def test_a_bound_pod_of_the_plan_uses_up_its_node() -> None:
    planned = PlannedNodes()
    planned.observe("default/a", pod("a", node="n1", phase="Running"))
    b = pod("b")
    planned.observe("default/b", b)
    assert pinned_to(planned.pin([waiting(b, 2)])) == {"default/b": "n2"}


def test_a_finished_pod_gives_its_node_slot_back() -> None:
    planned = PlannedNodes()
    planned.observe("default/a", pod("a", plan="n1=1", node="n1", phase="Succeeded"))
    b = pod("b", plan="n1=1")
    planned.observe("default/b", b)
    assert pinned_to(planned.pin([waiting(b, 2)])) == {"default/b": "n1"}


def test_pods_without_a_plan_and_gang_members_are_left_alone() -> None:
    planned = PlannedNodes()
    plain, member = pod("plain", plan=None), pod("member")
    planned.observe("default/plain", plain)
    planned.observe("default/member", member)
    out = planned.pin([waiting(plain, 1), waiting(member, 2)], lambda p: p is member)
    assert pinned_to(out) == {"default/plain": None, "default/member": None}
    assert planned.fall_back(["default/plain", "default/member"]) == {}


def test_a_pinned_pod_left_pending_falls_back_and_is_never_pinned_again() -> None:
    planned = PlannedNodes()
    a = pod("a")
    planned.observe("default/a", a)
    planned.pin([waiting(a, 1)])
    assert planned.fall_back(["default/a"]) == {"default/a": "n1"}
    assert pinned_to(planned.pin([waiting(a, 1)])) == {"default/a": None}


def test_an_unreadable_plan_is_ignored() -> None:
    planned = PlannedNodes()
    bad = pod("bad", plan="n1")
    planned.observe("default/bad", bad)
    assert pinned_to(planned.pin([waiting(bad, 1)])) == {"default/bad": None}


def test_pods_of_one_shape_pinned_to_one_node_share_one_pinned_shape() -> None:
    # The core places runs of one shape object in one step: two pods planned on one node must
    # come out with the same object, and a pod on another node with its own.
    planned = PlannedNodes()
    pods = [pod("a", plan="n1=2,n2=1"), pod("b", plan="n1=2,n2=1"), pod("c", plan="n1=2,n2=1")]
    for p in pods:
        planned.observe(f"default/{p['metadata']['name']}", p)
    first = planned.pin([waiting(p, i) for i, p in enumerate(pods)])
    again = planned.pin([waiting(p, i) for i, p in enumerate(pods)])
    assert pinned_to(first) == {"default/a": "n1", "default/b": "n1", "default/c": "n2"}
    assert first[0].shape is first[1].shape is again[0].shape
    assert first[2].shape is again[2].shape is not first[0].shape
    assert [w.key for w in again] == [w.key for w in first] and again[2].obj is pods[2]
