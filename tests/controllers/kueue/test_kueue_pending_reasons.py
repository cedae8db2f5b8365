"""Why a queued job waits: written on its Workload, only when it changes."""

from __future__ import annotations

from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, queued_job


def cluster(cpu: int = 2) -> KueueCluster:
    k = KueueCluster()
    k.create(
        flavor("default-flavor"),
        cluster_queue("cq", {"default-flavor": {"cpu": cpu}}),
        local_queue("user-queue", "cq"),
    )
    return k


def test_a_job_over_the_quota_left_stays_suspended_with_a_quota_reserved_false_message() -> None:
    k = cluster(cpu=2)
    k.submit(queued_job("running", parallelism=2), queued_job("waiting", parallelism=1))
    assert k.job("waiting")["spec"]["suspend"] is True
    wl = k.workload("waiting")
    reserved = k.condition(wl, "QuotaReserved")
    assert reserved is not None
    assert (reserved["status"], reserved["reason"]) == ("False", "Pending")
    # The words are the core's (kubehpc.sched.admission.explain); the loop writes them as given.
    assert reserved["message"].startswith("ClusterQueue cq: ")
    assert "cpu" in reserved["message"] and "default-flavor" in reserved["message"]
    assert wl["metadata"]["annotations"]["kubehpc.io/pending-reason"] == "InsufficientQuota"
    assert wl["metadata"]["annotations"]["kubehpc.io/queue-position"] == "0"
    assert ("Pending", reserved["message"]) in k.events(wl["metadata"]["name"])


def test_a_job_bigger_than_the_queue_can_ever_hold_says_it_never_fits() -> None:
    k = cluster(cpu=2)
    k.create(queued_job("huge", parallelism=3))
    k.settle()
    wl = k.workload("huge")
    assert k.condition(wl, "QuotaReserved")["message"].startswith("ClusterQueue cq: ")  # type: ignore[index]
    assert wl["metadata"]["annotations"]["kubehpc.io/pending-reason"] == "NeverFits"


def test_a_job_naming_a_missing_local_queue_stays_suspended_with_that_reason() -> None:
    k = cluster()
    k.create(queued_job("lost", queue="no-such-queue"))
    k.settle()
    assert k.job("lost")["spec"]["suspend"] is True
    wl = k.workload("lost")
    reserved = k.condition(wl, "QuotaReserved")
    assert reserved is not None
    assert (reserved["status"], reserved["reason"], reserved["message"]) == (
        "False",
        "Inadmissible",
        "LocalQueue no-such-queue doesn't exist",
    )
    assert wl["metadata"]["annotations"]["kubehpc.io/pending-reason"] == "LocalQueueNotFound"


def test_creating_the_missing_local_queue_admits_the_waiting_job() -> None:
    k = cluster()
    k.create(queued_job("early", queue="late-queue"))
    k.settle()
    k.create(local_queue("late-queue", "cq"))
    k.settle()
    assert k.job("early")["spec"]["suspend"] is False


def test_a_cluster_queue_naming_a_missing_flavor_is_inactive_and_so_is_its_local_queue() -> None:
    k = KueueCluster()
    k.create(cluster_queue("cq", {"ghost": {"cpu": 4}}), local_queue("user-queue", "cq"), queued_job("a"))
    k.settle()
    active = k.condition(k.cluster_queue("cq"), "Active")
    assert active is not None
    assert (active["status"], active["reason"]) == ("False", "FlavorNotFound")
    assert "references missing ResourceFlavor(s): ghost" in active["message"]
    lq_active = k.condition(k.local_queue("user-queue"), "Active")
    assert lq_active is not None
    assert (lq_active["status"], lq_active["reason"], lq_active["message"]) == (
        "False",
        "ClusterQueueIsInactive",
        "Can't submit new workloads to clusterQueue",
    )
    assert k.job("a")["spec"]["suspend"] is True
    k.create(flavor("ghost"))
    k.settle()
    assert k.condition(k.cluster_queue("cq"), "Active")["reason"] == "Ready"  # type: ignore[index]
    assert k.job("a")["spec"]["suspend"] is False


def test_a_local_queue_whose_cluster_queue_is_missing_says_so() -> None:
    k = KueueCluster()
    k.create(local_queue("user-queue", "nowhere"))
    k.create(flavor("f"), cluster_queue("other", {"f": {"cpu": 1}}))
    k.settle()
    active = k.condition(k.local_queue("user-queue"), "Active")
    assert active is not None
    assert (active["status"], active["reason"]) == ("False", "ClusterQueueDoesNotExist")


def test_an_unchanged_explanation_is_not_written_again() -> None:
    k = cluster(cpu=1)
    k.submit(queued_job("running"), queued_job("waiting"))
    version = k.workload("waiting")["metadata"]["resourceVersion"]
    k.admission.cache.dirty = True  # as a periodic flush would
    k.settle()
    assert k.workload("waiting")["metadata"]["resourceVersion"] == version


def test_the_loops_own_status_writes_start_no_new_cycle() -> None:
    k = cluster(cpu=1)
    k.submit(queued_job("running"), queued_job("waiting"))
    k.admission.sync()
    assert k.admission.step() is None


def test_only_the_head_of_a_queue_gets_a_pending_event() -> None:
    k = cluster(cpu=1)
    k.submit(queued_job("running"))
    k.create(queued_job("b"), queued_job("c"))  # together: one cycle sees both, one is head
    k.settle()
    with_event = [
        name
        for name in ("b", "c")
        if any(reason == "Pending" for reason, _ in k.events(k.workload(name)["metadata"]["name"]))
    ]
    assert len(with_event) == 1
