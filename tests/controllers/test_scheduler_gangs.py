"""The scheduler loop binds a gang's pods all together or not at all (PodGroups read from the store)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_scheduler import condition, make_node, make_pod, node_of, run_until, settle

from kubehpc.api.errors import InternalError, NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.controllers.scheduler import Scheduler, SchedulerOptions
from kubehpc.controllers.scheduling.apply import Binder
from kubehpc.store.client import DeleteOptions
from kubehpc.store.store import Store

Obj = dict[str, Any]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def scheduler(store: Store, clock: Clock) -> Iterator[Scheduler]:
    # Embedded, kubehpc is the only scheduler: it serves pods written for Volcano too.
    options = SchedulerOptions(scheduler_names=("default-scheduler", "volcano"), record_events=False)
    sched = Scheduler(store, options, clock=clock)
    sched.start(run_loop=False)
    yield sched
    sched.stop()


def coscheduling_group(store: Store, name: str, min_member: int, timeout: int | None = None) -> None:
    spec: Obj = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    store.create(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
    )


def volcano_group(store: Store, name: str, min_member: int, phase: str | None = "Inqueue") -> None:
    """``phase``: what the Volcano queue loop (not running here) would have written; None leaves
    the group bare, as it is right after ``kubectl apply``."""
    group: Obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member},
    }
    if phase is not None:
        group["status"] = {"phase": phase}
    store.create(group)


def gang_pod(store: Store, name: str, cpu: str = "3", **meta: Any) -> Obj:
    """A pod created with its gang's labels and annotations already on it (the scheduler must
    never see it without them)."""
    spec = meta.pop("spec", {})
    resources = {"requests": {"cpu": cpu}}
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", **meta},
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}], **spec},
    }
    return store.create(obj)


def member(store: Store, name: str, group: str, cpu: str = "3", **spec: Any) -> Obj:
    return gang_pod(store, name, cpu, labels={"scheduling.x-k8s.io/pod-group": group}, spec=spec)


def volcano_member(store: Store, name: str, group: str, cpu: str = "3") -> Obj:
    annotations = {"scheduling.k8s.io/group-name": group}
    return gang_pod(store, name, cpu, annotations=annotations, spec={"schedulerName": "volcano"})


def known_nodes(scheduler: Scheduler, *names: str) -> None:
    """Feed the loop its events until its cache holds these nodes. Nodes and pods reach it from
    informers on threads of their own: pods created right after the nodes may come first, and a
    cycle then finds no nodes at all."""
    for _ in range(200):
        scheduler.drain(0.05)
        if all(name in scheduler.cache.nodes for name in names):
            return
    raise AssertionError(f"the scheduler never saw nodes {names}")


def message(store: Store, pod: str) -> str:
    cond = condition(store, pod)
    return str(cond.get("message")) if cond else ""


def test_a_gang_that_does_not_fit_whole_binds_no_pod(store: Store, scheduler: Scheduler) -> None:
    for n in ("n0", "n1"):
        make_node(store, n)
    known_nodes(scheduler, "n0", "n1")  # the message below counts them
    coscheduling_group(store, "train", 3)
    for i in range(3):
        member(store, f"w{i}", "train")
    run_until(scheduler, lambda: bool(message(store, "w2")))
    assert [node_of(store, f"w{i}") for i in range(3)] == [None, None, None]
    assert "gang coscheduling:default/train:" in message(store, "w0")
    assert (
        "2 of the 3 pods the gang needs together fit; 0/2 nodes are available: 2 Insufficient cpu."
        in message(store, "w0")
    )
    make_node(store, "n2")
    run_until(scheduler, lambda: all(node_of(store, f"w{i}") for i in range(3)))
    assert sorted(str(node_of(store, f"w{i}")) for i in range(3)) == ["n0", "n1", "n2"]


def test_two_gangs_that_fit_alone_but_not_together_exactly_one_runs(
    store: Store, scheduler: Scheduler
) -> None:
    for n in ("n0", "n1", "n2"):
        make_node(store, n)
    for g in ("a", "b"):
        coscheduling_group(store, g, 2)
        for i in range(2):
            member(store, f"{g}{i}", g)
    pods = ("a0", "a1", "b0", "b1")
    # The informers deliver pods and PodGroups on their own threads, so the loop may first see
    # a member before its group (and say so on the pod): wait for a gang to be bound, then settle.
    run_until(scheduler, lambda: any(node_of(store, p) for p in pods))
    settle(scheduler)
    bound = {p: node_of(store, p) for p in pods}
    running = sorted({p[0] for p, n in bound.items() if n})
    assert len(running) == 1
    assert all(bound[f"{running[0]}{i}"] for i in range(2))


def test_volcano_pods_join_their_podgroup_and_start_together(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n0", cpu="8")
    volcano_group(store, "job", 2)
    volcano_member(store, "m0", "job")
    run_until(scheduler, lambda: bool(message(store, "m0")))
    assert node_of(store, "m0") is None
    assert "waiting for 1 more pods (minMember 2, 1 exist)" in message(store, "m0")
    volcano_member(store, "m1", "job")
    run_until(scheduler, lambda: bool(node_of(store, "m0") and node_of(store, "m1")))


def test_min_task_member_starts_the_gang_with_its_master_even_when_workers_came_first(
    store: Store, scheduler: Scheduler
) -> None:
    # Room for the master and one worker: minMember 2 alone would let two workers start
    # without their master; minTaskMember says the master must be among them.
    make_node(store, "n0", cpu="4")
    store.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "mw", "namespace": "default"},
            "spec": {"minMember": 2, "minTaskMember": {"master": 1, "worker": 1}},
            "status": {"phase": "Inqueue"},
        }
    )
    for name, task, cpu in (("w0", "worker", "1"), ("w1", "worker", "1"), ("m0", "master", "3")):
        annotations = {"scheduling.k8s.io/group-name": "mw", "volcano.sh/task-spec": task}
        gang_pod(store, name, cpu, annotations=annotations, spec={"schedulerName": "volcano"})
    run_until(scheduler, lambda: bool(node_of(store, "m0")))
    settle(scheduler)
    assert [p for p in ("m0", "w0", "w1") if node_of(store, p)] == ["m0", "w0"]
    assert "started without 1 of its pods, which wait for room" in message(store, "w1")


def test_a_volcano_gang_waits_while_a_task_has_fewer_pods_than_its_min_task_member(
    store: Store, scheduler: Scheduler
) -> None:
    make_node(store, "n0", cpu="8")
    store.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "mw", "namespace": "default"},
            "spec": {"minMember": 1, "minTaskMember": {"master": 1}},
            "status": {"phase": "Inqueue"},
        }
    )
    annotations = {"scheduling.k8s.io/group-name": "mw", "volcano.sh/task-spec": "worker"}
    gang_pod(store, "w0", "1", annotations=annotations, spec={"schedulerName": "volcano"})
    run_until(scheduler, lambda: bool(message(store, "w0")))
    assert node_of(store, "w0") is None
    assert "task master has 0 pods waiting; minTaskMember needs 1 more" in message(store, "w0")


def test_pods_of_a_volcano_podgroup_without_a_phase_wait_for_their_queue(
    store: Store, scheduler: Scheduler
) -> None:
    make_node(store, "n0", cpu="8")
    volcano_group(store, "bare", 1, phase=None)
    volcano_member(store, "m0", "bare")
    run_until(scheduler, lambda: bool(message(store, "m0")))
    assert node_of(store, "m0") is None
    assert "PodGroup default/bare is Pending: not yet let in by its queue" in message(store, "m0")


def test_pods_held_for_their_queue_start_as_soon_as_the_queue_lets_their_group_in(
    store: Store, clock: Clock
) -> None:
    # The clock never moves, so the periodic flush of parked pods cannot be what frees them.
    options = SchedulerOptions(
        scheduler_names=("default-scheduler", "volcano"), record_events=False, watch_pod_groups=True
    )
    sched = Scheduler(store, options, clock=clock)
    sched.start(run_loop=False)
    try:
        make_node(store, "n0", cpu="8")
        volcano_group(store, "late", 2, phase="Pending")
        volcano_member(store, "m0", "late")
        volcano_member(store, "m1", "late")
        run_until(sched, lambda: bool(message(store, "m0") and message(store, "m1")))
        settle(sched)  # both pods parked, nothing left to wake them but the group
        assert node_of(store, "m0") is None
        group = store.get("scheduling.volcano.sh/v1beta1", "PodGroup", "late", namespace="default")
        store.update({**group, "status": {"phase": "Inqueue"}})
        run_until(sched, lambda: bool(node_of(store, "m0") and node_of(store, "m1")), steps=40)
    finally:
        sched.stop()


def test_a_pod_of_a_missing_podgroup_is_held_with_the_reason(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n0")
    member(store, "lost", "nowhere", cpu="1")
    run_until(scheduler, lambda: bool(message(store, "lost")))
    assert node_of(store, "lost") is None
    assert "PodGroup default/nowhere (scheduling.x-k8s.io/v1alpha1) not found" in message(store, "lost")


def test_an_incomplete_gang_gives_up_its_reservation_after_its_timeout(
    store: Store, scheduler: Scheduler, clock: Clock
) -> None:
    make_node(store, "n0")
    coscheduling_group(store, "early", 2, timeout=30)
    member(store, "e0", "early")
    run_until(scheduler, lambda: "waiting for 1 more" in message(store, "e0"))
    clock.now += 31
    scheduler.cache.unpark_all()
    run_until(scheduler, lambda: "reservation released" in message(store, "e0"))
    assert node_of(store, "e0") is None


def test_an_incomplete_gang_keeps_its_room_from_other_pods_until_its_timeout(
    store: Store, scheduler: Scheduler, clock: Clock
) -> None:
    make_node(store, "n0")
    coscheduling_group(store, "early", 2, timeout=30)
    member(store, "e0", "early")
    run_until(scheduler, lambda: "waiting for 1 more" in message(store, "e0"))
    make_pod(store, "solo", cpu="3")  # arrives while the gang waits for its second pod
    run_until(scheduler, lambda: bool(message(store, "solo")))
    assert node_of(store, "solo") is None
    clock.now += 31
    scheduler.cache.unpark_all()
    run_until(scheduler, lambda: bool(node_of(store, "solo")))
    assert node_of(store, "e0") is None


def test_members_already_running_count_toward_min_member(store: Store, scheduler: Scheduler) -> None:
    for n in ("n0", "n1"):
        make_node(store, n)
    coscheduling_group(store, "g", 2)
    member(store, "g0", "g", cpu="1")
    member(store, "g1", "g", cpu="1")
    run_until(scheduler, lambda: bool(node_of(store, "g0") and node_of(store, "g1")))
    store.delete("v1", "Pod", "g1", "default")
    member(store, "g2", "g", cpu="1")  # a replacement: one running member plus this one make two
    run_until(scheduler, lambda: bool(node_of(store, "g2")))


def test_job_pods_asking_for_one_rack_land_in_one_rack(store: Store, scheduler: Scheduler) -> None:
    store.create(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {
                "levels": [
                    {"nodeLabel": "cloud.provider.com/topology-rack"},
                    {"nodeLabel": "kubernetes.io/hostname"},
                ]
            },
        }
    )
    for name, rack in (("a0", "ra"), ("b0", "rb"), ("b1", "rb"), ("b2", "rb")):
        node = make_node(store, name)
        node["metadata"]["labels"] = {
            "cloud.provider.com/topology-rack": rack,
            "kubernetes.io/hostname": name,
        }
        store.update(node)
    tas_job(store, "cloud.provider.com/topology-rack", 3)
    run_until(scheduler, lambda: all(node_of(store, f"tas-{i}") for i in range(3)))
    assert sorted(str(node_of(store, f"tas-{i}")) for i in range(3)) == ["b0", "b1", "b2"]


def test_a_high_priority_gang_evicts_a_whole_lower_gang_and_no_more(
    store: Store, scheduler: Scheduler
) -> None:
    store.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 100,
        }
    )
    for n in ("n0", "n1", "n2"):
        make_node(store, n)
    coscheduling_group(store, "low", 2)
    member(store, "low0", "low")
    member(store, "low1", "low")
    run_until(scheduler, lambda: bool(node_of(store, "low0") and node_of(store, "low1")))
    make_pod(store, "solo", cpu="3")  # the youngest: tried first, then spared
    run_until(scheduler, lambda: bool(node_of(store, "solo")))
    coscheduling_group(store, "high", 2)
    for i in range(2):
        member(store, f"high{i}", "high", priorityClassName="high")

    def deleting() -> set[str]:
        return {
            p["metadata"]["name"]
            for p in store.list("v1", "Pod").items
            if p["metadata"].get("deletionTimestamp")
        }

    run_until(scheduler, lambda: bool(deleting()))
    assert deleting() == {"low0", "low1"}  # both pods of the low gang, nothing else
    assert "preempting 2 pods of lower-priority gangs coscheduling:default/low" in message(store, "high0")
    scheduler.cache.unpark_all()
    scheduler.run_cycle()  # the victims still terminate: no second round of victims
    assert deleting() == {"low0", "low1"}
    assert "waiting for 2 preempted pods to terminate" in message(store, "high0")
    for name in ("low0", "low1"):  # the node agent's part: the evicted processes end
        store.delete("v1", "Pod", name, "default", DeleteOptions(grace_period_seconds=0))
    run_until(scheduler, lambda: bool(node_of(store, "high0") and node_of(store, "high1")))
    assert sorted(str(node_of(store, f"high{i}")) for i in range(2)) == ["n0", "n1"]


def kueue_member(store: Store, name: str, group: str, total: str) -> Obj:
    labels = {"kueue.x-k8s.io/pod-group-name": group}
    return gang_pod(store, name, labels=labels, annotations={"kueue.x-k8s.io/pod-group-total-count": total})


def test_kueue_pod_groups_start_when_their_total_count_exists(store: Store, scheduler: Scheduler) -> None:
    for n in ("n0", "n1"):
        make_node(store, n)
    kueue_member(store, "k0", "grp", "2")
    run_until(scheduler, lambda: "waiting for 1 more pods (minMember 2, 1 exist)" in message(store, "k0"))
    kueue_member(store, "k1", "grp", "2")
    run_until(scheduler, lambda: bool(node_of(store, "k0") and node_of(store, "k1")))


def test_a_kueue_pod_group_with_an_unreadable_total_is_held(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n0")
    kueue_member(store, "k0", "grp", "two")
    run_until(scheduler, lambda: bool(message(store, "k0")))
    assert "annotation kueue.x-k8s.io/pod-group-total-count is not a number" in message(store, "k0")
    assert node_of(store, "k0") is None


def tas_job(store: Store, level: str | None, count: int, cpu: str = "3") -> None:
    """A Job of ``count`` pods, admitted by Kueue (its pod-set label), whose template requires
    one domain of ``level`` if given (the pods made here as its controller would make them)."""
    job = store.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "tas", "namespace": "default"},
            "spec": {
                "parallelism": count,
                "completions": count,
                "suspend": True,
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
                },
            },
        }
    )
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "tas",
        "uid": job["metadata"]["uid"],
        "controller": True,
    }
    for i in range(count):
        annotations = {"kueue.x-k8s.io/podset-required-topology": level} if level is not None else {}
        labels = {"kueue.x-k8s.io/podset": "main"}
        gang_pod(store, f"tas-{i}", cpu, labels=labels, annotations=annotations, ownerReferences=[owner])


def test_a_kueue_jobs_pods_start_together_or_not_at_all(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n0", cpu="8")
    tas_job(store, None, 3)  # three 3-cpu pods, room for two
    run_until(scheduler, lambda: "2 of the 3 pods the gang needs together fit" in message(store, "tas-2"))
    assert [node_of(store, f"tas-{i}") for i in range(3)] == [None, None, None]
    assert message(store, "tas-0").startswith("gang job:default/tas: ")


def test_a_level_no_topology_declares_is_held_with_the_reason(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n0", cpu="8")
    tas_job(store, "example.com/zone", 2)
    run_until(scheduler, lambda: bool(message(store, "tas-0")))
    assert "no Topology has the level example.com/zone" in message(store, "tas-0")
    assert node_of(store, "tas-0") is None


class RefusingBinder(Binder):
    """The scheduler's binder, except that the API refuses the named pods' bindings ``times``
    times each (as an API server that times out on etcd would)."""

    def __init__(self, inner: Binder, refuse: set[str], times: int = 1_000_000) -> None:
        super().__init__(inner.client, inner.mode)
        self.left = dict.fromkeys(refuse, times)

    def bind(self, pod: Obj, node: str, devices: Any) -> None:
        name = pod["metadata"]["name"]
        if self.left.get(name, 0) > 0:
            self.left[name] -= 1
            raise InternalError("etcdserver: request timed out")
        super().bind(pod, node, devices)


def running(store: Store, name: str) -> bool:
    """The pod exists and is not being deleted (no kubelet here finishes a graceful delete)."""
    try:
        pod = store.get("v1", "Pod", name, "default")
    except NotFound:
        return False
    return not pod["metadata"].get("deletionTimestamp")


def test_a_gang_left_short_by_a_refused_binding_gives_up_its_running_pods_after_its_timeout(
    store: Store, scheduler: Scheduler, clock: Clock
) -> None:
    for n in ("n0", "n1", "n2"):
        make_node(store, n)
    scheduler.binder = RefusingBinder(scheduler.binder, {"w2"})
    coscheduling_group(store, "train", 3, timeout=30)
    for i in range(3):
        member(store, f"w{i}", "train")
    run_until(scheduler, lambda: bool(node_of(store, "w0") and node_of(store, "w1")))
    assert node_of(store, "w2") is None
    clock.now += 29  # within its timeout the gang may still complete: nothing is given up
    scheduler.cache.unpark_all()
    settle(scheduler)
    assert running(store, "w0") and running(store, "w1")
    clock.now += 2
    scheduler.cache.unpark_all()
    run_until(scheduler, lambda: not running(store, "w0") and not running(store, "w1"))
    assert "they were deleted so that the gang starts again whole" in message(store, "w2")


def test_a_gang_whose_refused_member_binds_on_retry_keeps_running(
    store: Store, scheduler: Scheduler, clock: Clock
) -> None:
    for n in ("n0", "n1", "n2"):
        make_node(store, n)
    scheduler.binder = RefusingBinder(scheduler.binder, {"w2"}, times=1)
    coscheduling_group(store, "train", 3, timeout=30)
    for i in range(3):
        member(store, f"w{i}", "train")
    run_until(scheduler, lambda: bool(node_of(store, "w0") and node_of(store, "w1")))
    clock.now += 5  # past the refused pod's back-off, well within the gang's timeout
    scheduler.cache.unpark_all()
    run_until(scheduler, lambda: bool(node_of(store, "w2")))
    clock.now += 60
    scheduler.cache.unpark_all()
    settle(scheduler)
    assert all(running(store, f"w{i}") and node_of(store, f"w{i}") for i in range(3))
