"""A gang is placed whole or not at all (Volcano's Statement): tentative charges are taken back."""

from __future__ import annotations

from gangkit import cluster, gang, gpu_node, gpu_shape, nodes_of, pod_set
from sched_builders import pod

from kubehpc.api.devices import Device, NodeDevices, allocate_pod
from kubehpc.sched import DeviceState, NodeTable, Snapshot
from kubehpc.sched.gang import GangPodSet, decide_gangs, decide_with_gangs


def four_nodes() -> NodeTable:
    return NodeTable.build([gpu_node(f"n{i}") for i in range(4)])


def test_two_gangs_that_fit_alone_but_not_together_exactly_one_runs_whole() -> None:
    table = four_nodes()
    first = gang("a", pod_set("a", 3), created=1.0)
    second = gang("b", pod_set("b", 3), created=2.0)
    decisions = decide_gangs(table, [second, first], now=0.0)
    assert [p.gang for p in decisions.placed] == ["a"]
    assert len(decisions.placed[0].bindings) == 3
    assert [p.gang for p in decisions.pending] == ["b"]
    assert "3 x (8 nvidia.com/gpu), 1 fit" in decisions.pending[0].message


def test_the_higher_priority_gang_wins_the_contention() -> None:
    decisions = decide_gangs(
        four_nodes(), [gang("a", pod_set("a", 3)), gang("b", pod_set("b", 3), priority=10)], now=0.0
    )
    assert [p.gang for p in decisions.placed] == ["b"]


def test_a_gang_whose_last_pod_set_does_not_fit_takes_nothing() -> None:
    # Launcher fits, workers do not: the launcher's room is given back, so the next gang gets it.
    table = four_nodes()
    big = gang("big", pod_set("launcher", 1), pod_set("workers", 4), created=1.0)
    small = gang("small", pod_set("s", 4), created=2.0)
    decisions = decide_gangs(table, [big, small], now=0.0)
    assert [p.gang for p in decisions.placed] == ["small"]
    assert nodes_of(decisions.placed[0]) == ["n0", "n1", "n2", "n3"]
    assert int(decisions.usage.used[:, table.resource_index["nvidia.com/gpu"]].sum()) == 32


def test_min_member_lets_a_gang_start_with_fewer_pods() -> None:
    decisions = decide_gangs(four_nodes(), [gang("g", pod_set("w", 6), min_member=4)], now=0.0)
    assert len(decisions.placed[0].bindings) == 4


def test_the_pods_a_started_gang_left_behind_wait_saying_why_and_preempt_nothing() -> None:
    decisions = decide_gangs(four_nodes(), [gang("g", pod_set("w", 6), min_member=4)], now=0.0)
    (left,) = decisions.pending
    assert left.pods == ("w-4", "w-5")
    assert left.held  # surplus pods never preempt
    assert left.message == (
        "gang g: started without 2 of its pods, which wait for room: "
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    )


def test_min_member_above_what_fits_places_nothing() -> None:
    decisions = decide_gangs(four_nodes(), [gang("g", pod_set("w", 6), min_member=5)], now=0.0)
    assert decisions.placed == ()
    assert decisions.pending[0].message == (
        "gang g: 4 of the 5 pods the gang needs together fit; "
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    )


def test_min_count_of_a_pod_set_allows_a_partial_start() -> None:
    decisions = decide_gangs(four_nodes(), [gang("g", pod_set("w", 6, min_count=3))], now=0.0)
    assert len(decisions.placed[0].bindings) == 4


def test_a_pod_sets_minimum_is_placed_before_another_set_takes_the_room() -> None:
    # Volcano minTaskMember: the gang may start short of workers, never without its launcher.
    workers, launcher = pod_set("workers", 4), pod_set("launcher", 1, min_count=1)
    decisions = decide_gangs(four_nodes(), [gang("g", workers, launcher, min_member=2)], now=0.0)
    names = sorted(b.pod for b in decisions.placed[0].bindings)
    assert names == ["launcher-0", "workers-0", "workers-1", "workers-2"]


def test_a_lower_gang_that_fits_still_goes_when_a_higher_one_cannot() -> None:
    decisions = decide_gangs(
        four_nodes(), [gang("huge", pod_set("h", 5), priority=9), gang("small", pod_set("s", 2))], now=0.0
    )
    assert [p.gang for p in decisions.placed] == ["small"]
    assert [p.gang for p in decisions.pending] == ["huge"]


def test_an_incomplete_gang_holds_room_for_its_pods_until_its_timeout() -> None:
    table = four_nodes()
    # 3 of its 4 members exist: it cannot start, but keeps their room from the lower gang.
    waiting = gang("early", pod_set("e", 3), priority=5, min_member=4, timeout_s=60.0, waiting_since=100.0)
    later = gang("later", pod_set("l", 2))
    held = decide_gangs(table, [waiting, later], now=130.0)
    assert held.placed == ()
    assert [r.gang for r in held.reserved] == ["early"]
    assert "waiting for 1 more pods (minMember 4, 3 exist)" in held.pending[0].message
    released = decide_gangs(table, [waiting, later], now=160.0)
    assert released.reserved == ()
    assert [p.gang for p in released.placed] == ["later"]
    assert "waited past 60s: reservation released" in released.pending[0].message


def inventory(name: str) -> NodeDevices:
    return NodeDevices(
        name, tuple(Device(f"GPU-{name}-{i}", "nvidia.com/gpu", i, i // 4, 0, 81920) for i in range(8))
    )


def test_devices_of_a_rolled_back_gang_are_free_for_the_next() -> None:
    table = NodeTable.build([gpu_node("n0")])
    state = DeviceState(allocate=allocate_pod, inventories={"n0": inventory("n0")})
    # 4 GPUs fit, then the second pod set does not: its devices must come back.
    failing = gang("f", pod_set("a", 1, gpus=4), pod_set("b", 1, gpus=8), created=1.0)
    next_gang = gang("n", pod_set("c", 2, gpus=4), created=2.0)
    decisions = decide_gangs(table, [failing, next_gang], now=0.0, devices=state)
    devices = [dict(b.devices)["main"] for b in decisions.placed[0].bindings]
    assert decisions.placed[0].gang == "n"
    assert sorted(d for ids in devices for d in ids) == sorted(f"GPU-n0-{i}" for i in range(8))


def test_single_pods_get_what_the_gangs_leave() -> None:
    table = four_nodes()
    snapshot = Snapshot(table, (pod("solo", limits={"nvidia.com/gpu": 8}, count=2),))
    gangs, rest = decide_with_gangs(snapshot, [gang("g", pod_set("w", 3))], now=0.0)
    assert len(gangs.placed[0].bindings) == 3
    assert len(rest.bindings) == 1
    assert rest.pending[0].count == 1


def test_a_gang_spans_nodes_as_it_must_without_topology() -> None:
    table = cluster(1, 1, 4, used={"b0-r0-n0": 4})
    decisions = decide_gangs(
        table, [gang("g", GangPodSet("w", gpu_shape(4), 3, pod_ids=("x", "y", "z")))], 0.0
    )
    # Binpack: the half-full node first, then the next node twice.
    assert nodes_of(decisions.placed[0]) == ["b0-r0-n0", "b0-r0-n1", "b0-r0-n1"]
