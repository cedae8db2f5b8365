"""Queue fair share (the pure core): deserved shares by weight, capability and guarantee, and
which PodGroups a queue admits or reclaims for."""

from __future__ import annotations

from fractions import Fraction

from kubehpc.sched.volcano import GroupInfo, QueueInfo, Snapshot, decide, deserved_shares, with_hierarchy

F = Fraction


def cpu(n: float) -> dict[str, Fraction]:
    return {"cpu": F(int(n * 1000))}


def group(
    key: str, queue: str, need: float, phase: str = "Pending", priority: int = 0, created: str = ""
) -> GroupInfo:
    held = cpu(need) if phase in ("Running", "Unknown") else {}
    return GroupInfo(key, queue, phase, cpu(need), cpu(need), held, priority, created or key)


# --- deserved shares --------------------------------------------------------------------------


def test_queues_share_the_cluster_by_weight_when_all_want_everything() -> None:
    shares = deserved_shares(cpu(8), (QueueInfo("a", 1), QueueInfo("b", 3)), {"a": cpu(8), "b": cpu(8)})
    assert shares == {"a": cpu(2), "b": cpu(6)}


def test_a_queue_asking_less_than_its_share_leaves_the_rest_to_the_others() -> None:
    shares = deserved_shares(cpu(8), (QueueInfo("a", 1), QueueInfo("b", 3)), {"a": cpu(8), "b": cpu(1)})
    assert shares == {"a": cpu(7), "b": cpu(1)}


def test_capability_caps_the_share_and_the_surplus_goes_to_the_others() -> None:
    queues = (QueueInfo("a", 1, capability=cpu(1)), QueueInfo("b", 1))
    assert deserved_shares(cpu(8), queues, {"a": cpu(8), "b": cpu(8)}) == {"a": cpu(1), "b": cpu(7)}


def test_a_guarantee_is_deserved_even_against_heavier_weights() -> None:
    queues = (QueueInfo("a", 1, guarantee=cpu(3)), QueueInfo("b", 9))
    shares = deserved_shares(cpu(8), queues, {"a": cpu(8), "b": cpu(8)})
    assert shares["a"] == cpu(3)
    assert shares["b"] == cpu(4.5)


def test_an_explicit_deserved_is_kept_and_the_rest_is_shared_by_weight() -> None:
    queues = (QueueInfo("a", 1, deserved=cpu(2)), QueueInfo("b", 1), QueueInfo("c", 1))
    shares = deserved_shares(cpu(8), queues, {"a": cpu(8), "b": cpu(8), "c": cpu(8)})
    assert shares == {"a": cpu(2), "b": cpu(3), "c": cpu(3)}


def test_child_queues_split_their_parents_share() -> None:
    queues = (
        QueueInfo("eng", 1),
        QueueInfo("sci", 1),
        QueueInfo("eng-prod", 3, parent="eng"),
        QueueInfo("eng-dev", 1, parent="eng"),
    )
    shares = deserved_shares(cpu(8), queues, {"sci": cpu(8), "eng-prod": cpu(8), "eng-dev": cpu(8)})
    assert shares["eng"] == cpu(4)
    assert shares["sci"] == cpu(4)
    assert shares["eng-prod"] == cpu(3)
    assert shares["eng-dev"] == cpu(1)


# --- admission ---------------------------------------------------------------------------------


def test_a_closed_queue_admits_nothing() -> None:
    snap = Snapshot(cpu(8), (QueueInfo("a", state="Closed"),), (group("ns/g", "a", 1),))
    d = decide(snap)
    assert d.admit == ()
    assert [(h.key, h.reason) for h in d.held] == [("ns/g", "QueueClosed")]
    assert "it admits no new PodGroups" in d.held[0].message


def test_a_podgroup_of_a_missing_queue_waits_saying_so() -> None:
    d = decide(Snapshot(cpu(8), (), (group("ns/g", "nope", 1),)))
    assert [(h.reason, h.message) for h in d.held] == [("QueueNotFound", 'queue "nope" does not exist')]


def test_capability_holds_what_would_exceed_it() -> None:
    snap = Snapshot(
        cpu(8),
        (QueueInfo("a", capability=cpu(2)),),
        (group("ns/running", "a", 1, "Running"), group("ns/next", "a", 2)),
    )
    d = decide(snap)
    assert d.admit == ()
    assert d.held[0].reason == "QueueCapabilityExceeded"
    assert d.held[0].message == 'queue "a" would hold cpu 3 with this PodGroup; its capability is cpu 2'


def test_the_cluster_must_have_room_for_the_whole_gang() -> None:
    snap = Snapshot(cpu(4), (QueueInfo("a"),), (group("ns/g1", "a", 3), group("ns/g2", "a", 3)))
    d = decide(snap)
    assert d.admit == ("ns/g1",)
    assert d.held[0].reason == "NotEnoughResources"
    assert d.held[0].message == "needs cpu 3; the cluster has cpu 1 idle (cpu 2 short)"


def test_traverse_lets_a_smaller_gang_past_a_big_one_and_fifo_does_not() -> None:
    groups = (group("ns/big", "a", 6, created="1"), group("ns/small", "a", 1, created="2"))
    assert decide(Snapshot(cpu(4), (QueueInfo("a"),), groups)).admit == ("ns/small",)
    d = decide(Snapshot(cpu(4), (QueueInfo("a"),), groups, fifo_queues=frozenset({"a"})))
    assert d.admit == ()
    assert [h.reason for h in d.held] == ["NotEnoughResources", "WaitingInQueue"]


def test_the_queue_furthest_below_its_share_goes_first() -> None:
    snap = Snapshot(
        cpu(4),
        (QueueInfo("a"), QueueInfo("b")),
        (group("ns/a-running", "a", 2, "Running"), group("ns/a-next", "a", 2), group("ns/b-next", "b", 2)),
    )
    assert decide(snap).admit == ("ns/b-next",)


def test_higher_priority_first_inside_a_queue() -> None:
    groups = (
        group("ns/low", "a", 3, priority=1, created="1"),
        group("ns/high", "a", 3, priority=9, created="2"),
    )
    assert decide(Snapshot(cpu(4), (QueueInfo("a"),), groups)).admit == ("ns/high",)


# --- reclaim -----------------------------------------------------------------------------------


def test_a_queue_below_its_share_reclaims_whole_gangs_from_a_queue_above_its_own() -> None:
    snap = Snapshot(
        cpu(8),
        (QueueInfo("a"), QueueInfo("b")),
        (
            group("ns/b1", "b", 4, "Running", created="1"),
            group("ns/b2", "b", 2, "Running", created="2"),
            group("ns/b3", "b", 2, "Running", created="3"),
            group("ns/a1", "a", 2),
        ),
    )
    d = decide(snap)
    assert d.admit == ("ns/a1",)
    assert [r.victim for r in d.reclaim] == ["ns/b3"]  # one gang is enough; the newest goes
    assert d.reclaim[0].beneficiary == "ns/a1"
    assert 'queue "a" is below its deserved share' in d.reclaim[0].message


def test_reclaim_stops_at_the_victim_queues_deserved_share() -> None:
    snap = Snapshot(
        cpu(8),
        (QueueInfo("a"), QueueInfo("b")),
        (
            group("ns/b-big", "b", 4, "Running", created="1"),
            group("ns/b-small", "b", 1, "Running", created="2"),
            group("ns/b-tiny", "b", 1, "Running", created="3"),
            group("ns/a1", "a", 4),
        ),
    )
    d = decide(snap)
    assert d.admit == ("ns/a1",)
    # b deserves 4: giving up its two newest gangs leaves it exactly that, not below.
    assert sorted(r.victim for r in d.reclaim) == ["ns/b-small", "ns/b-tiny"]
    assert d.queues["b"].allocated == cpu(4)


def test_victims_that_turn_out_unnecessary_are_spared() -> None:
    snap = Snapshot(
        cpu(8),
        (QueueInfo("a"), QueueInfo("b")),
        (
            group("ns/b-old", "b", 3, "Running", created="1"),
            group("ns/b-big", "b", 4, "Running", created="2"),
            group("ns/b-tiny", "b", 1, "Running", created="3"),
            group("ns/a1", "a", 4),
        ),
    )
    d = decide(snap)
    assert d.admit == ("ns/a1",)
    assert [r.victim for r in d.reclaim] == ["ns/b-big"]  # b-tiny was looked at first, then spared


def test_no_reclaim_from_a_queue_that_is_not_reclaimable() -> None:
    snap = Snapshot(
        cpu(8),
        (QueueInfo("a"), QueueInfo("b", reclaimable=False)),
        (group("ns/b1", "b", 8, "Running"), group("ns/a1", "a", 2)),
    )
    d = decide(snap)
    assert d.reclaim == ()
    assert d.held[0].reason == "NotEnoughResources"


def test_no_reclaim_for_a_gang_that_would_take_its_queue_past_its_share() -> None:
    snap = Snapshot(
        cpu(8),
        (QueueInfo("a"), QueueInfo("b")),
        (group("ns/b1", "b", 8, "Running"), group("ns/a1", "a", 6)),
    )
    d = decide(snap)
    assert d.reclaim == ()
    assert d.admit == ()


def test_nothing_is_evicted_when_even_all_victims_would_not_make_room() -> None:
    snap = Snapshot(
        cpu(8),
        (QueueInfo("a", weight=3), QueueInfo("b"), QueueInfo("c", reclaimable=False)),
        (group("ns/b1", "b", 3, "Running"), group("ns/c1", "c", 5, "Running"), group("ns/a1", "a", 5)),
    )
    d = decide(snap)
    assert d.reclaim == ()
    assert d.held[0].reason == "NotEnoughResources"


def test_hierarchy_annotations_share_as_a_tree_of_weights() -> None:
    # The hierarchical-queues sample: root/eng (2) and root/sci (8), each with prod and dev.
    paths = {
        "root-eng-prod": "root/eng/prod",
        "root-eng-dev": "root/eng/dev",
        "root-sci-prod": "root/sci/prod",
        "root-sci-dev": "root/sci/dev",
    }
    weights = {
        "root-eng-prod": "1/2/8",
        "root-eng-dev": "1/2/2",
        "root-sci-prod": "1/8/8",
        "root-sci-dev": "1/8/2",
    }
    queues = with_hierarchy([QueueInfo(name) for name in sorted(paths)], paths, weights)
    wants = {name: cpu(100) for name in paths}
    shares = deserved_shares(cpu(100), queues, wants)
    assert shares["root/eng"] == cpu(20)
    assert shares["root/sci"] == cpu(80)
    assert shares["root-eng-prod"] == cpu(16)
    assert shares["root-eng-dev"] == cpu(4)
    assert shares["root-sci-prod"] == cpu(64)
    assert shares["root-sci-dev"] == cpu(16)


def test_a_hierarchy_whose_weights_do_not_match_its_steps_is_ignored() -> None:
    (q,) = with_hierarchy([QueueInfo("x")], {"x": "root/a/x"}, {"x": "1/2"})
    assert q == QueueInfo("x")


def test_what_other_queues_are_guaranteed_is_not_admitted_into_this_one() -> None:
    snap = Snapshot(
        cpu(8),
        (QueueInfo("a"), QueueInfo("b", guarantee=cpu(6))),
        (group("ns/a1", "a", 3),),
    )
    d = decide(snap)
    assert d.admit == ()
    assert d.held[0].reason == "GuaranteedToOtherQueues"
    assert d.held[0].message == (
        'queue "a" would hold cpu 3 with this PodGroup; '
        "only cpu 2 of the cluster is not guaranteed to other queues"
    )
