"""Test kit for other kinds' gangs under Volcano's queues (MPIJob, RayCluster): an in-memory
store with one 8-CPU node, Volcano's queue loop and the scheduler with its gang step, each
stepped by hand together with the kind's own controllers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubehpc.api.kinds import build_registry
from kubehpc.controllers.scheduler import Scheduler, SchedulerOptions
from kubehpc.controllers.scheduling.gangs import SERVED_SCHEDULERS
from kubehpc.controllers.volcano import VolcanoQueueController
from kubehpc.store.store import Store

Obj = dict[str, Any]
SCHED = "scheduling.volcano.sh/v1beta1"


def capped_queue(name: str, cpu: str, state: str = "Open") -> Obj:
    """A Volcano Queue holding at most ``cpu`` CPUs, in ``state`` as its controller would set it."""
    return {
        "apiVersion": SCHED,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "capability": {"cpu": cpu, "memory": "64Gi"}},
        "status": {"state": state},
    }


class GangPlane:
    """``reconcile`` steps the kind's own controllers once; :meth:`settle` runs them, the queue
    loop and a scheduler cycle in rounds."""

    def __init__(self, reconcile: Callable[[], None] = lambda: None) -> None:
        self.store = Store(build_registry(), None)
        node = self.store.create(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"}, "spec": {}}
        )
        allocatable = {"cpu": "8", "memory": "64Gi", "pods": "110"}
        node["status"] = {"allocatable": allocatable, "capacity": allocatable}
        self.store.update_status(node)
        self.reconcile = reconcile
        self.queues = VolcanoQueueController(self.store)
        self.queues.ensure_default_queue()
        self.scheduler = Scheduler(self.store, SchedulerOptions(scheduler_names=SERVED_SCHEDULERS))
        self.scheduler.start(run_loop=False)

    def add_queue(self, obj: Obj) -> None:
        created = self.store.create({k: v for k, v in obj.items() if k != "status"})
        created["status"] = obj["status"]
        self.store.update_status(created)

    def settle(self, rounds: int = 6) -> None:
        for _ in range(rounds):
            self.reconcile()
            self.queues.cycle()
            self.scheduler.step(timeout=0.2)
            self.scheduler.cache.unpark_all()  # retry parked pods now, not after the flush period
