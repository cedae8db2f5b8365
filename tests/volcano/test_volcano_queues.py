"""Queues on the embedded store: admission of PodGroups (Inqueue), the reasons a gang waits,
Queue status, and reclaim evicting whole gangs for a queue below its deserved share."""

from __future__ import annotations

from volcanokit import SCHED, Volcano, queue, task, vcjob


def test_the_default_queue_exists_and_is_open() -> None:
    v = Volcano()
    v.sync()
    q = v.store.get(SCHED, "Queue", "default")
    assert q["spec"]["weight"] == 1
    assert q["spec"]["reclaimable"] is True
    assert v.queue_status("default")["state"] == "Open"


def test_a_job_in_a_closed_queue_waits_and_says_why() -> None:
    v = Volcano()
    q = v.create(queue("frozen"))
    q["status"] = {"state": "Closed"}
    v.store.update_status(q)
    v.create(vcjob("j", task("a", 1), queue="frozen"))
    v.sync("j")
    assert v.pg_phase("j") == "Pending"
    assert v.pods("j") == {}
    state = v.state("j")
    assert state["phase"] == "Pending"
    assert state["reason"] == "QueueClosed"
    assert state["message"] == 'queue "frozen" is Closed: it admits no new PodGroups'
    assert v.queue_status("frozen")["state"] == "Closed"
    assert v.queue_status("frozen")["pending"] == 1


def test_a_closing_queue_closes_once_its_gangs_are_done() -> None:
    v = Volcano()
    v.create(queue("q"))
    v.create(vcjob("j", task("a", 1), queue="q"))
    v.sync("j")
    v.run_all("j")
    v.sync("j")
    q = v.store.get(SCHED, "Queue", "q")
    q["status"] = {**q["status"], "state": "Closing"}
    v.store.update_status(q)
    v.sync("j")
    assert v.queue_status("q")["state"] == "Closing"
    v.finish("j-a-0")
    v.sync("j")
    assert v.queue_status("q")["state"] == "Closed"


def test_capability_holds_a_gang_that_would_exceed_it() -> None:
    v = Volcano()
    v.create(queue("small", capability={"cpu": "2000m", "memory": "4G"}))
    v.create(vcjob("j", task("a", 3), queue="small"))
    v.sync("j")
    assert v.pg_phase("j") == "Pending"
    assert v.state("j")["reason"] == "QueueCapabilityExceeded"
    assert (
        v.state("j")["message"]
        == 'queue "small" would hold cpu 3 with this PodGroup; its capability is cpu 2'
    )
    pg = v.podgroup("j")
    (cond,) = pg["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "Unschedulable",
        "True",
        "QueueCapabilityExceeded",
    )


def test_queue_status_counts_podgroups_by_phase() -> None:
    v = Volcano({"node-0": "4"})
    v.create(vcjob("one", task("a", 2)))
    v.create(vcjob("two", task("a", 3)))
    v.sync("one", "two")
    v.run_all("one")
    v.sync("one", "two")
    status = v.queue_status("default")
    assert (status["running"], status["inqueue"], status["pending"]) == (1, 0, 1)
    assert status["allocated"] == {"cpu": "2000m"}
    assert v.state("two")["reason"] == "NotEnoughResources"


def test_reclaim_evicts_a_whole_gang_of_an_over_share_queue_and_its_job_restarts() -> None:
    v = Volcano({"node-0": "8"})
    v.create(queue("a"))
    v.create(queue("b"))
    evicted = [{"event": "PodEvicted", "action": "RestartJob"}]
    for name in ("b1", "b2"):
        v.create(vcjob(name, task("w", 4), queue="b", policies=evicted))
        v.sync(name)
        v.run_all(name)
    v.sync("b1", "b2")
    assert v.phase("b1") == v.phase("b2") == "Running"
    v.create(vcjob("a1", task("w", 4), queue="a"))
    v.sync("a1")
    # One gang of the queue above its share gives way (both started in the same second).
    (reclaimed,) = v.reclaimed
    victim, spared = ("b1", "b2") if reclaimed.startswith("default/b1-") else ("b2", "b1")
    assert all(p["metadata"].get("deletionTimestamp") for p in v.pods(victim).values())
    assert not any(
        p["metadata"].get("deletionTimestamp") for p in v.pods(spared).values()
    )  # never a fragment
    assert v.pg_phase("a1") == "Inqueue"
    assert sorted(v.pods("a1")) == ["a1-w-0", "a1-w-1", "a1-w-2", "a1-w-3"]
    v.sync("a1", "b1", "b2")
    v.reap(victim)
    v.sync("a1", "b1", "b2")
    assert v.job(victim)["status"]["retryCount"] == 1  # PodEvicted -> RestartJob
    assert v.pg_phase(victim) == "Pending"
    assert v.state(victim)["reason"] == "NotEnoughResources"  # back in its queue, waiting
    assert any(reason == "Reclaimed" for reason, _ in v.events(v.podgroup(victim)["metadata"]["name"]))


def test_a_running_gang_that_lost_members_is_unknown_then_queued_again_once_none_is_bound() -> None:
    v = Volcano({"node-0": "8"})
    v.create(vcjob("j", task("w", 2)))
    v.sync("j")
    v.run_all("j")
    v.sync("j")
    assert v.pg_phase("j") == "Running"
    v.evict("j-w-1")  # no policy: the Job controller makes the pod again, unbound
    v.sync("j")
    assert v.pg_phase("j") == "Unknown"  # one member still bound, below minMember
    assert v.queue_status("default")["unknown"] == 1
    v.evict("j-w-0")
    decisions = v.queues.cycle()
    # None bound: Pending again, so its queue (with room) admits it anew.
    assert decisions.admit == (f"default/{v.podgroup('j')['metadata']['name']}",)
    assert v.pg_phase("j") == "Inqueue"
    assert v.queue_status("default")["unknown"] == 0
