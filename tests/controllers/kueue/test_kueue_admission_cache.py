"""The admission loop's cache: assume, then write; forget on failure; never go back in time."""

from __future__ import annotations

from typing import Any

from kueuekit import NS, KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.api.errors import Conflict
from kubehpc.controllers.kueue.admission import AdmissionLoop, AdmissionOptions
from kubehpc.controllers.kueue.cache import WORKLOAD, AdmissionCache
from kubehpc.controllers.kueue.jobs import batchjob

Obj = dict[str, Any]


def workload(rv: int, reserved: bool, uid: str = "u1") -> Obj:
    conditions = [{"type": "QuotaReserved", "status": "True" if reserved else "False"}]
    return {
        "metadata": {"name": "w", "namespace": "default", "uid": uid, "resourceVersion": str(rv)},
        "spec": {"queueName": "q"},
        "status": {"conditions": conditions},
    }


def test_an_event_older_than_the_cached_version_is_ignored() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, workload(5, reserved=True))
    cache.put(WORKLOAD, workload(4, reserved=False))
    assert cache.objects[WORKLOAD]["default/w"]["metadata"]["resourceVersion"] == "5"


def test_the_version_an_assumption_was_made_on_does_not_undo_it() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, workload(5, reserved=False))
    cache.assume("default/w", workload(5, reserved=True))
    cache.put(WORKLOAD, workload(5, reserved=False))  # the watch delivering it late
    assert cache.objects[WORKLOAD]["default/w"]["status"]["conditions"][0]["status"] == "True"


def test_forgetting_an_assumption_restores_what_was_seen() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, workload(5, reserved=False))
    cache.assume("default/w", workload(5, reserved=True))
    cache.forget("default/w")
    assert cache.objects[WORKLOAD]["default/w"]["status"]["conditions"][0]["status"] == "False"
    assert cache.assumed == set()


def test_a_new_object_under_an_old_name_replaces_the_old_one() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, workload(9, reserved=True, uid="old"))
    cache.put(WORKLOAD, workload(3, reserved=False, uid="new"))
    assert cache.objects[WORKLOAD]["default/w"]["metadata"]["uid"] == "new"


def test_a_change_admission_does_not_read_starts_no_cycle() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, workload(5, reserved=False))
    cache.dirty = False
    newer = workload(6, reserved=False)
    newer["status"]["conditions"][0]["message"] = "still waiting"
    newer["metadata"]["annotations"] = {"kubehpc.io/queue-position": "3"}
    cache.put(WORKLOAD, newer)
    assert not cache.dirty
    newer = workload(7, reserved=False)
    newer["spec"]["queueName"] = "other"
    cache.put(WORKLOAD, newer)
    assert cache.dirty


def admitted(rv: int) -> Obj:
    wl = workload(rv, reserved=True)
    wl["status"]["conditions"].append({"type": "Admitted", "status": "True"})
    wl["status"]["admission"] = {
        "clusterQueue": "cq",
        "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}}],
    }
    return wl


def test_the_written_version_of_an_assumed_admission_is_not_counted_again() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, workload(5, reserved=False))
    assumed = admitted(5)
    cache.assume("default/w", assumed)
    assert cache.tally.admitted["default/q"] == 1
    # Changed behind the cache's back (shared statuses are read only everywhere else), so that
    # counting the status again would show: a finished workload holds nothing.
    assumed["status"]["conditions"].append({"type": "Finished", "status": "True"})
    # What the store returns for the write: a newer version sharing the status and spec it was given.
    written = {**assumed, "metadata": {**assumed["metadata"], "resourceVersion": "6"}}
    cache.put(WORKLOAD, written)
    assert cache.objects[WORKLOAD]["default/w"] is written
    assert cache.tally.admitted["default/q"] == 1


def test_a_newer_version_with_a_status_of_its_own_is_counted_again() -> None:
    cache = AdmissionCache()
    cache.put(WORKLOAD, admitted(5))
    assert cache.tally.admitted["default/q"] == 1
    finished = admitted(6)
    finished["status"]["conditions"].append({"type": "Finished", "status": "True"})
    cache.put(WORKLOAD, finished)
    assert cache.tally.admitted["default/q"] == 0


class RefusesFirstAdmission:
    """A client whose first Workload status write fails with a conflict."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.refused = 0

    def update_status(self, obj: Obj, options: Any = None) -> Obj:
        if obj.get("kind") == "Workload" and not self.refused:
            self.refused += 1
            raise Conflict("the object has been modified")
        return self.inner.update_status(obj, options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_failed_admission_write_is_forgotten_and_retried_after_a_back_off() -> None:
    k = KueueCluster()
    k.create(
        flavor("f"), cluster_queue("cq", {"f": {"cpu": 1}}), local_queue("user-queue", "cq"), queued_job("a")
    )
    k.reconciler.reconcile(batchjob.INTEGRATION, NS, "a")
    client = RefusesFirstAdmission(k.store)
    loop = AdmissionLoop(client, AdmissionOptions(check_nodes=False, retry_initial_s=5.0), clock=k.clock)
    loop.sync()
    report = loop.run_cycle()
    assert (report.admitted, report.failed) == (0, 1)
    assert k.condition(k.workload("a"), "QuotaReserved") is None or (
        k.condition(k.workload("a"), "QuotaReserved")["status"] == "False"  # type: ignore[index]
    )
    assert loop.step() is None  # not yet: the retry waits its back-off
    k.clock.advance(5.0)
    report = loop.step()
    assert report is not None and report.admitted == 1
    assert k.condition(k.workload("a"), "QuotaReserved")["status"] == "True"  # type: ignore[index]
