"""The admission cache keeps the queue counters (reserving, admitted, quota held per LocalQueue;
admitted and running per ClusterQueue) from events: after any sequence of puts, deletes,
assumptions and forgets they equal a tally counted from scratch over the cached Workloads, as
the admission loop used to count them every cycle."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from kubehpc.controllers.kueue.cache import WORKLOAD, AdmissionCache
from kubehpc.controllers.kueue.queuestatus import LocalQueueTally

Obj = dict[str, Any]
STATES = ("waiting", "reserved", "admitted", "finished", "evicted", "admitted-finished")


def workload(name: str, rv: int, state: str, queue: str, cq: str, cpu: int) -> Obj:
    conditions: list[Obj] = []
    admission: Obj | None = None
    if state in ("reserved", "admitted", "finished", "admitted-finished"):
        conditions.append({"type": "QuotaReserved", "status": "True"})
        admission = {
            "clusterQueue": cq,
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": 1,
                    "flavors": {"cpu": "default", "memory": "default"},
                    "resourceUsage": {"cpu": f"{cpu}m", "memory": "64Mi"},
                }
            ],
        }
    if state in ("admitted", "admitted-finished"):
        conditions.append({"type": "Admitted", "status": "True"})
    if state in ("finished", "admitted-finished"):
        conditions.append({"type": "Finished", "status": "True"})
    if state == "evicted":
        conditions += [
            {"type": "QuotaReserved", "status": "False"},
            {"type": "Evicted", "status": "True"},
        ]
    status: Obj = {"conditions": conditions}
    if admission is not None:
        status["admission"] = admission
    return {
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default", "uid": name, "resourceVersion": str(rv)},
        "spec": {"queueName": queue},
        "status": status,
    }


def from_scratch(cache: AdmissionCache) -> LocalQueueTally:
    tally = LocalQueueTally()
    for wl in cache.values(WORKLOAD):
        tally.add_holder(wl)
    return tally


def nonzero(counter: Any) -> dict[Any, int]:
    return {k: v for k, v in Counter(counter).items() if v}


def cells(per_queue: dict[str, dict[tuple[str, str], int]]) -> dict[tuple[str, tuple[str, str]], int]:
    return {(q, cell): v for q, held in per_queue.items() for cell, v in held.items() if v}


def assert_same(kept: LocalQueueTally, fresh: LocalQueueTally) -> None:
    assert nonzero(kept.reserving) == nonzero(fresh.reserving)
    assert nonzero(kept.admitted) == nonzero(fresh.admitted)
    assert nonzero(kept.admitted_in) == nonzero(fresh.admitted_in)
    assert nonzero(kept.running_in) == nonzero(fresh.running_in)
    assert cells(kept.reserved) == cells(fresh.reserved)
    assert cells(kept.used) == cells(fresh.used)


def test_counters_kept_from_events_equal_a_count_over_every_workload() -> None:
    rng = random.Random(4)
    cache = AdmissionCache()
    for rv in range(1, 601):
        name = f"wl-{rng.randrange(12)}"
        key = f"default/{name}"
        action = rng.random()
        obj = workload(
            name, rv, rng.choice(STATES), rng.choice(("lq-a", "lq-b")), "cq", rng.randrange(1, 9) * 100
        )
        if action < 0.55:
            cache.put(WORKLOAD, obj)
        elif action < 0.7:
            cache.delete(WORKLOAD, obj)
        elif action < 0.85:
            cache.assume(key, obj)
        elif action < 0.95:
            cache.forget(key)
        else:
            cache.replace(WORKLOAD, [o for o in cache.values(WORKLOAD) if rng.random() < 0.7])
        assert_same(cache.tally, from_scratch(cache))


def test_a_finished_workload_no_longer_holds_quota_nor_counts_as_running() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, workload("a", 1, "admitted", "lq-a", "cq", 500))
    assert cache.tally.reserving["default/lq-a"] == 1
    assert cache.tally.used["default/lq-a"][("default", "cpu")] == 500
    assert cache.tally.running_in["cq"] == 1
    cache.put(WORKLOAD, workload("a", 2, "admitted-finished", "lq-a", "cq", 500))
    assert cache.tally.reserving["default/lq-a"] == 0
    assert cache.tally.used["default/lq-a"][("default", "cpu")] == 0
    assert cache.tally.running_in["cq"] == 0


def test_an_older_version_of_a_workload_does_not_change_the_counters() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, workload("a", 5, "admitted", "lq-a", "cq", 500))
    cache.put(WORKLOAD, workload("a", 4, "waiting", "lq-a", "cq", 500))
    assert cache.tally.admitted["default/lq-a"] == 1
