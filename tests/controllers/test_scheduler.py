"""The live scheduling loop on the embedded store (memory mode), through the Client only."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubehpc.api.devices import NODE_INVENTORY_ANNOTATION, POD_DEVICES_ANNOTATION, Device, NodeDevices
from kubehpc.api.kinds import build_registry
from kubehpc.controllers.scheduler import Scheduler, SchedulerOptions
from kubehpc.controllers.scheduling.apply import Binder
from kubehpc.store.store import Store

Obj = dict[str, Any]


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


@pytest.fixture
def scheduler(store: Store) -> Iterator[Scheduler]:
    sched = Scheduler(store, SchedulerOptions(record_events=True))
    sched.start(run_loop=False)  # the test drives the loop with step()
    yield sched
    sched.stop()


def make_node(store: Store, name: str, cpu: str = "4", gpus: int = 0, **extra: Any) -> Obj:
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    meta: Obj = {"name": name}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
        devices = tuple(Device(f"GPU-{name}-{i}", "nvidia.com/gpu", i, 0, 0, 81920) for i in range(gpus))
        meta["annotations"] = {NODE_INVENTORY_ANNOTATION: NodeDevices(name, devices).to_json()}
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": extra}
    node = store.create(obj)
    node["status"] = {"allocatable": allocatable, "capacity": allocatable}
    return store.update_status(node)


def make_pod(store: Store, name: str, cpu: str = "1", gpus: int = 0, **spec: Any) -> Obj:
    resources: Obj = {"requests": {"cpu": cpu}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}], **spec},
    }
    return store.create(obj)


def get_pod(store: Store, name: str) -> Obj:
    return store.get("v1", "Pod", name, "default")


def node_of(store: Store, name: str) -> str | None:
    node: str | None = (get_pod(store, name).get("spec") or {}).get("nodeName")
    return node


def condition(store: Store, name: str) -> Obj | None:
    for cond in (get_pod(store, name).get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


def run_until(scheduler: Scheduler, done: Callable[[], bool], steps: int = 200) -> None:
    """Feed the loop its events until ``done`` holds (each step waits at most 50 ms for one)."""
    for _ in range(steps):
        scheduler.step(0.05)
        if done():
            return
    raise AssertionError("the scheduler never got there")


def settle(scheduler: Scheduler) -> None:
    """Run the loop until no event is left and no pod is ready for another cycle."""
    idle = 0
    while idle < 3:
        handled = scheduler.drain(0.05)
        report = scheduler.step(0)
        idle = idle + 1 if handled == 0 and report is None else 0


def test_a_pending_pod_is_bound_to_a_node_that_fits(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "small", cpu="1")
    make_node(store, "big", cpu="8")
    make_pod(store, "p", cpu="2")
    run_until(scheduler, lambda: node_of(store, "p") is not None)
    assert node_of(store, "p") == "big"


def test_a_pod_for_another_scheduler_is_left_alone(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n")
    make_pod(store, "p", schedulerName="volcano")
    settle(scheduler)
    assert node_of(store, "p") is None
    assert condition(store, "p") is None


def test_the_accepted_scheduler_names_are_configurable(store: Store) -> None:
    make_node(store, "n")
    make_pod(store, "mine", schedulerName="kubehpc")
    make_pod(store, "default")
    sched = Scheduler(store, SchedulerOptions(scheduler_names=("kubehpc",)))
    sched.sync()
    sched.run_cycle()
    assert node_of(store, "mine") == "n"
    assert node_of(store, "default") is None


def test_an_unschedulable_pod_says_why_in_its_condition(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n", cpu="1")
    make_pod(store, "p", cpu="2")
    expected = "0/1 nodes are available: 1 Insufficient cpu."
    run_until(scheduler, lambda: (condition(store, "p") or {}).get("message") == expected)
    cond = condition(store, "p")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert node_of(store, "p") is None


def test_the_unschedulable_condition_is_written_only_when_it_changes(
    store: Store, scheduler: Scheduler
) -> None:
    make_node(store, "n", cpu="1")
    make_pod(store, "p", cpu="2")
    run_until(scheduler, lambda: condition(store, "p") is not None)
    settle(scheduler)
    version = get_pod(store, "p")["metadata"]["resourceVersion"]
    scheduler.cache.unpark_all()  # another look, with nothing changed
    scheduler.step(0)
    settle(scheduler)
    assert get_pod(store, "p")["metadata"]["resourceVersion"] == version


def test_an_unschedulable_pod_is_not_retried_while_nothing_changes(
    store: Store, scheduler: Scheduler
) -> None:
    make_node(store, "n", cpu="1")
    make_pod(store, "p", cpu="2")
    run_until(scheduler, lambda: condition(store, "p") is not None)
    settle(scheduler)
    assert scheduler.step(0) is None  # parked: no cycle runs for it


def test_a_waiting_pod_is_bound_when_a_node_that_fits_appears(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "small", cpu="1")
    make_pod(store, "p", cpu="2")
    run_until(scheduler, lambda: condition(store, "p") is not None)
    make_node(store, "big", cpu="4")
    run_until(scheduler, lambda: node_of(store, "p") is not None)
    assert node_of(store, "p") == "big"


def test_a_waiting_pod_is_bound_when_a_running_pod_finishes(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n", cpu="2")
    make_pod(store, "first", cpu="2")
    run_until(scheduler, lambda: node_of(store, "first") == "n")
    make_pod(store, "second", cpu="2")
    run_until(scheduler, lambda: condition(store, "second") is not None)
    finished = get_pod(store, "first")
    finished["status"] = {"phase": "Succeeded"}
    store.update_status(finished)
    run_until(scheduler, lambda: node_of(store, "second") == "n")


def test_bound_pods_never_exceed_a_node_and_each_is_bound_once(store: Store, scheduler: Scheduler) -> None:
    for i in range(3):
        make_node(store, f"n{i}", cpu="4")
    for i in range(20):
        make_pod(store, f"p{i:02d}", cpu="1")
    run_until(scheduler, lambda: sum(node_of(store, f"p{i:02d}") is not None for i in range(20)) == 12)
    settle(scheduler)
    per_node: dict[str, int] = {}
    for i in range(20):
        node = node_of(store, f"p{i:02d}")
        if node:
            per_node[node] = per_node.get(node, 0) + 1
    assert per_node == {"n0": 4, "n1": 4, "n2": 4}
    scheduled = [e for e in store.list("v1", "Event").items if e["reason"] == "Scheduled"]
    assert sorted(e["involvedObject"]["name"] for e in scheduled) == [
        f"p{i:02d}" for i in range(20) if node_of(store, f"p{i:02d}")
    ]


def test_a_pod_bound_by_someone_else_meanwhile_is_not_bound_again(store: Store) -> None:
    make_node(store, "a", cpu="4")
    make_node(store, "b", cpu="4")
    make_pod(store, "p")
    sched = Scheduler(store, SchedulerOptions(record_events=False))
    sched.sync()
    Binder(store).bind(get_pod(store, "p"), "b", ())  # another scheduler won the race
    report = sched.run_cycle()
    assert (report.bound, report.failed) == (0, 1)
    assert node_of(store, "p") == "b"
    assert sched.cache.charges["default/p"].node == "b"


def test_a_cycle_binds_its_pods_in_one_commit(tmp_path: Path) -> None:
    with Store(build_registry(), tmp_path / "store.db") as store:
        make_node(store, "n", cpu="8")
        for name in ("p1", "p2", "p3"):
            make_pod(store, name)
        sched = Scheduler(store, SchedulerOptions(record_events=True))
        sched.sync()
        before = store.resource_version
        statements: list[str] = []
        store._log._db.set_trace_callback(statements.append)  # type: ignore[union-attr]
        assert sched.run_cycle().bound == 3
        assert statements.count("COMMIT") == 1
        assert store.resource_version == before + 6  # three bindings and their three Scheduled events


def test_pods_whose_binding_commit_failed_wait_and_are_bound_again(tmp_path: Path) -> None:
    with Store(build_registry(), tmp_path / "store.db") as store:
        make_node(store, "n", cpu="1")
        make_pod(store, "p")
        sched = Scheduler(store, SchedulerOptions(record_events=False, backoff_initial_s=0.05))
        sched.start(run_loop=False)
        db = store._log._db  # type: ignore[union-attr]
        db.execute("PRAGMA query_only=ON")  # the next commit fails, as on a full disk
        with pytest.raises(sqlite3.OperationalError):
            sched.run_cycle()
        db.execute("PRAGMA query_only=OFF")
        assert node_of(store, "p") is None
        assert "default/p" in sched.cache.waiting  # its room is free again: the node has 1 CPU
        run_until(sched, lambda: node_of(store, "p") == "n")
        sched.stop()


def test_priority_class_decides_who_gets_the_last_room(store: Store) -> None:
    store.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    make_node(store, "n", cpu="2")
    sched = Scheduler(store)
    make_pod(store, "early-low", cpu="2")
    make_pod(store, "late-high", cpu="2", priorityClassName="high")
    sched.sync()
    sched.run_cycle()
    assert node_of(store, "late-high") == "n"
    assert node_of(store, "early-low") is None


def test_gpu_pods_get_distinct_devices_recorded_on_the_pod(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "gpu-node", gpus=2)
    make_pod(store, "a", gpus=1)
    make_pod(store, "b", gpus=1)
    make_pod(store, "c", gpus=1)
    run_until(scheduler, lambda: node_of(store, "a") is not None and node_of(store, "b") is not None)
    held = [
        json.loads(get_pod(store, p)["metadata"]["annotations"][POD_DEVICES_ANNOTATION]) for p in ("a", "b")
    ]
    assert sorted(h["main"][0] for h in held) == ["GPU-gpu-node-0", "GPU-gpu-node-1"]
    run_until(scheduler, lambda: condition(store, "c") is not None)
    assert node_of(store, "c") is None
