"""suspend, activeDeadlineSeconds, ttlSecondsAfterFinished and podReplacementPolicy."""

from __future__ import annotations

import pytest
from jobkit import NS, Cluster, core_registry, job_manifest

from kubehpc.api.errors import NotFound
from kubehpc.controllers.gc import GarbageCollector, kinds_of


def test_suspending_deletes_active_pods_and_sets_the_suspended_condition() -> None:
    k = Cluster()
    k.create(job_manifest("s", parallelism=2, completions=4))
    k.sync("s")
    assert k.status("s")["startTime"]
    k.patch_spec("s", suspend=True)
    k.sync("s")
    status = k.status("s")
    assert k.active("s") == []
    assert status.get("active", 0) == 0 and status.get("failed", 0) == 0
    suspended = k.condition("s", "Suspended")
    assert suspended is not None
    assert (suspended["status"], suspended["reason"], suspended["message"]) == (
        "True",
        "JobSuspended",
        "Job suspended",
    )
    assert "startTime" not in status  # cleared, as Kubernetes does since KEP-5440
    assert ("Suspended", "Job suspended") in k.events("s")


def test_a_job_created_suspended_starts_no_pods_and_has_no_start_time() -> None:
    k = Cluster()
    k.create(job_manifest("s", suspend=True))
    k.sync("s")
    assert k.pods("s") == []
    assert "startTime" not in k.status("s")
    assert k.condition_types("s") == ["Suspended"]


def test_resuming_creates_pods_and_resets_the_start_time() -> None:
    k = Cluster()
    k.create(job_manifest("s", suspend=True, parallelism=2, completions=2))
    k.sync("s")
    k.clock.advance(100)
    k.patch_spec("s", suspend=False)
    k.sync("s")
    resumed = k.condition("s", "Suspended")
    assert resumed is not None
    assert (resumed["status"], resumed["reason"], resumed["message"]) == (
        "False",
        "JobResumed",
        "Job resumed",
    )
    assert len(k.active("s")) == 2
    assert k.status("s")["startTime"] == k.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ("Resumed", "Job resumed") in k.events("s")


def test_active_deadline_fails_the_job_and_terminates_its_pods() -> None:
    k = Cluster()
    k.create(job_manifest("dl", activeDeadlineSeconds=60, parallelism=2, completions=2))
    assert k.sync("dl") == 60.0  # come back when the deadline passes
    k.clock.advance(59)
    k.sync("dl")
    assert k.condition("dl", "FailureTarget") is None
    k.clock.advance(1)
    k.sync("dl")
    assert k.active("dl") == []
    assert k.condition_types("dl") == ["FailureTarget", "Failed"]
    failed = k.condition("dl", "Failed")
    assert failed is not None
    assert (failed["reason"], failed["message"]) == (
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )
    assert k.status("dl")["failed"] == 2  # the pods it stopped count as failed
    assert ("DeadlineExceeded", "Job was active longer than specified deadline") in k.events("dl")


def test_a_suspended_job_does_not_run_out_its_deadline() -> None:
    k = Cluster()
    k.create(job_manifest("dl", activeDeadlineSeconds=60, suspend=True))
    k.sync("dl")
    k.clock.advance(600)
    k.sync("dl")
    assert k.condition("dl", "FailureTarget") is None


def collect_garbage(k: Cluster) -> None:
    gc = GarbageCollector(k.store, kinds_of(core_registry()))
    while gc.reconcile_once():
        pass


def test_ttl_after_finished_deletes_the_job_and_its_pods_in_the_foreground() -> None:
    k = Cluster()
    k.create(job_manifest("ttl", ttlSecondsAfterFinished=30))
    k.sync("ttl")
    k.succeed(k.active("ttl")[0])
    assert k.sync("ttl") == 30.0
    k.clock.advance(29)
    assert k.sync("ttl") == pytest.approx(1.0)
    k.clock.advance(1)
    k.sync("ttl")
    assert "foregroundDeletion" in k.job("ttl")["metadata"]["finalizers"]
    collect_garbage(k)
    with pytest.raises(NotFound):
        k.job("ttl")
    assert k.pods("ttl") == []


def test_ttl_zero_deletes_the_job_as_soon_as_it_finished() -> None:
    k = Cluster()
    k.create(job_manifest("ttl", ttlSecondsAfterFinished=0))
    k.sync("ttl")
    k.succeed(k.active("ttl")[0])
    k.sync("ttl")
    k.sync("ttl")
    collect_garbage(k)
    with pytest.raises(NotFound):
        k.job("ttl")


def test_terminating_or_failed_replaces_a_pod_without_waiting_for_it_to_terminate() -> None:
    k = Cluster()
    k.create(job_manifest("r", nodeName="node-1"))
    k.sync("r")
    (pod,) = k.active("r")
    k.store.delete("v1", "Pod", pod["metadata"]["name"], NS)  # graceful: the process still runs
    k.sync("r")
    k.clock.advance(10)
    k.sync("r")
    assert len(k.active("r")) == 1  # the replacement runs beside the terminating pod
    assert k.status("r")["terminating"] == 1


def test_replacement_policy_failed_waits_until_the_terminating_pod_is_gone() -> None:
    k = Cluster()
    k.create(job_manifest("r", nodeName="node-1", podReplacementPolicy="Failed"))
    k.sync("r")
    (pod,) = k.active("r")
    k.store.delete("v1", "Pod", pod["metadata"]["name"], NS)
    k.sync("r")
    k.clock.advance(60)
    k.sync("r")
    assert k.active("r") == []
    assert k.status("r")["terminating"] == 1
    k.kill_terminating("r")
    k.sync("r")
    k.clock.advance(10)
    k.sync("r")
    assert len(k.active("r")) == 1
    assert k.status("r")["terminating"] == 0


def test_job_is_complete_only_after_pods_stopped_by_a_success_policy_terminated() -> None:
    k = Cluster()
    policy = {"rules": [{"succeededCount": 1}]}
    k.create(
        job_manifest(
            "sp", completionMode="Indexed", completions=3, parallelism=3, successPolicy=policy, nodeName="n"
        )
    )
    k.sync("sp")
    k.succeed(k.active("sp")[0])
    k.sync("sp")
    assert k.condition_types("sp") == ["SuccessCriteriaMet"]
    k.kill_terminating("sp")
    k.sync("sp")
    assert k.condition_types("sp") == ["SuccessCriteriaMet", "Complete"]
    complete = k.condition("sp", "Complete")
    assert complete is not None
    assert (complete["reason"], complete["message"]) == ("SuccessPolicy", "Matched rules at index 0")
    assert k.status("sp").get("failed", 0) == 0  # stopped pods of a successful Job are not failures
