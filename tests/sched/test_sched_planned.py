"""The pure rules of binding pods where admission placed them (``sched.planned``)."""

from __future__ import annotations

import pytest

from kubehpc.sched.model import NodeSelectorTerm, PodShape, Requirement
from kubehpc.sched.planned import assign, decode, encode, pin

SHAPE = PodShape(requests=(("cpu", 1000), ("pods", 1)))


def test_the_plan_round_trips_through_its_annotation_text() -> None:
    plan = (("n1", 3), ("n2", 1))
    assert encode(plan) == "n1=3,n2=1"
    assert decode(encode(plan)) == plan


@pytest.mark.parametrize("text", ["", "n1", "n1=x", "=2", "n1=2,,n2=1", "n1=-1"])
def test_an_unreadable_plan_is_refused_naming_the_annotation(text: str) -> None:
    with pytest.raises(ValueError, match=r"kubehpc\.io/planned-nodes"):
        decode(text)


def test_waiting_pods_fill_the_planned_nodes_in_order() -> None:
    assert assign((("n1", 2), ("n2", 1)), {}, ["a", "b", "c"]) == {"a": "n1", "b": "n1", "c": "n2"}


def test_pods_already_placed_use_up_their_nodes_slots() -> None:
    assert assign((("n1", 2), ("n2", 2)), {"n1": 2, "n2": 1}, ["a", "b"]) == {"a": "n2"}


def test_pods_beyond_the_plan_get_no_node() -> None:
    assert assign((("n1", 1),), {}, ["a", "b"]) == {"a": "n1"}


def test_a_pinned_shape_allows_only_its_node() -> None:
    pinned = pin(SHAPE, "n1")
    assert pinned.required_terms == (
        NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n1",)),)),
    )
    assert pinned.requests == SHAPE.requests


def test_pinning_keeps_every_required_affinity_term() -> None:
    zone = Requirement("zone", "In", ("a",))
    shape = PodShape(requests=SHAPE.requests, required_terms=(NodeSelectorTerm(match_expressions=(zone,)),))
    (term,) = pin(shape, "n2").required_terms or ()
    assert term.match_expressions == (zone,)
    assert term.match_fields == (Requirement("metadata.name", "In", ("n2",)),)
