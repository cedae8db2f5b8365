"""The Volcano Job's phases, policies and retries, on the embedded store: pods are bound and
finished by hand (the kit's kubelet stand-in), the controllers run one pass at a time."""

from __future__ import annotations

from typing import Any

from volcanokit import Volcano, task, vcjob

from kubehpc.api.errors import Conflict
from kubehpc.controllers.volcano import VolcanoJobController


def started(v: Volcano, name: str, *spec_tasks: dict[str, Any], **spec: Any) -> None:
    v.create(vcjob(name, *spec_tasks, **spec))
    v.sync(name)
    v.run_all(name)
    v.sync(name)


def test_a_gang_waits_for_its_queue_then_its_pods_are_created_as_volcano_names_them() -> None:
    v = Volcano()
    v.create(vcjob("train", task("master", 1), task("worker", 2)))
    v.jobs.reconcile("default", "train")  # before the queue has looked at the PodGroup
    assert v.pods("train") == {}
    assert v.phase("train") == "Pending"
    v.sync("train")
    assert v.pg_phase("train") == "Inqueue"
    assert sorted(v.pods("train")) == ["train-master-0", "train-worker-0", "train-worker-1"]
    pod = v.pod("train-worker-1")
    assert pod["spec"]["schedulerName"] == "volcano"
    annotations = pod["metadata"]["annotations"]
    assert annotations["scheduling.k8s.io/group-name"] == v.podgroup("train")["metadata"]["name"]
    assert annotations["volcano.sh/task-spec"] == "worker"
    assert annotations["volcano.sh/job-name"] == "train"
    assert pod["metadata"]["labels"]["volcano.sh/job-name"] == "train"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"


def test_the_podgroup_carries_the_gang_size_and_the_minimum_resources() -> None:
    v = Volcano()
    v.create(vcjob("train", task("master", 1, cpu="2"), task("worker", 4, minAvailable=2), minAvailable=3))
    v.sync("train")
    spec = v.podgroup("train")["spec"]
    assert spec["minMember"] == 3
    assert spec["minTaskMember"] == {"master": 1, "worker": 2}
    assert spec["minResources"] == {"cpu": "4000m"}  # master (2 cpu) + two workers (1 cpu each)
    assert spec["queue"] == "default"


def test_running_once_min_available_pods_run_and_completed_when_all_succeed() -> None:
    v = Volcano()
    started(v, "j", task("a", 3), minAvailable=2)
    assert v.phase("j") == "Running"
    assert v.pg_phase("j") == "Running"
    for name in v.pods("j"):
        v.finish(name)
    v.sync("j")
    assert v.phase("j") == "Completed"
    assert v.pg_phase("j") == "Completed"
    status = v.job("j")["status"]
    assert status["succeeded"] == 3
    assert [c["status"] for c in status["conditions"]] == ["Pending", "Running", "Completed"]


def test_without_a_policy_a_failed_pod_stays_failed_and_too_few_successes_fail_the_job() -> None:
    v = Volcano()
    started(v, "j", task("a", 2))
    v.finish("j-a-0", exit_code=3)
    v.sync("j")
    assert v.pod("j-a-0")["status"]["phase"] == "Failed"  # not recreated (SyncJob)
    assert v.phase("j") == "Running"
    v.finish("j-a-1")
    v.sync("j")
    assert v.phase("j") == "Failed"


def test_pod_failed_restart_job_kills_every_pod_and_starts_again_with_a_new_version() -> None:
    v = Volcano()
    started(v, "j", task("a", 2), policies=[{"event": "PodFailed", "action": "RestartJob"}])
    old_uids = {p["metadata"]["uid"] for p in v.pods("j").values()}
    v.finish("j-a-0", exit_code=1)
    v.sync("j")
    assert v.phase("j") == "Restarting"
    assert v.job("j")["status"]["retryCount"] == 1
    v.reap("j")  # the kubelet stops the pods
    v.sync("j")
    assert v.phase("j") == "Pending"
    pods = v.pods("j")
    assert sorted(pods) == ["j-a-0", "j-a-1"]
    assert not {p["metadata"]["uid"] for p in pods.values()} & old_uids
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in pods.values()} == {"1"}
    assert ("RestartJob", "PodFailed: pod j-a-0, exit code 1") in v.events("j")


def test_restarts_stop_at_max_retry_and_the_job_fails() -> None:
    v = Volcano()
    started(v, "j", task("a", 1), maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    for attempt in (1, 2):
        v.run_all("j")
        v.sync("j")
        v.finish("j-a-0", exit_code=1)
        v.sync("j")
        v.reap("j")
        v.sync("j")
        assert v.job("j")["status"]["retryCount"] == attempt
    assert v.phase("j") == "Failed"
    assert v.state("j")["reason"] == "MaxRetryReached"


def test_pod_evicted_restart_job_as_in_the_sample_job() -> None:
    v = Volcano()
    started(v, "j", task("a", 2), policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    v.evict("j-a-1")  # graceful: the pod is on a node, it is terminating
    v.sync("j")
    v.reap("j")
    v.sync("j")
    assert v.job("j")["status"]["retryCount"] == 1
    assert v.phase("j") == "Pending"
    assert sorted(v.pods("j")) == ["j-a-0", "j-a-1"]


def test_task_completed_complete_job_ends_the_job_when_the_master_finishes() -> None:
    v = Volcano()
    master = task("mpimaster", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])
    started(v, "mpi", master, task("mpiworker", 2))
    v.finish("mpi-mpimaster-0")
    v.sync("mpi")
    assert v.phase("mpi") == "Completing"
    pods = v.pods("mpi")
    assert all(pods[w]["metadata"].get("deletionTimestamp") for w in ("mpi-mpiworker-0", "mpi-mpiworker-1"))
    v.reap("mpi")
    v.sync("mpi")
    assert v.phase("mpi") == "Completed"
    assert sorted(v.pods("mpi")) == ["mpi-mpimaster-0"]  # finished pods are kept


def test_abort_job_keeps_finished_pods_and_ends_aborted() -> None:
    v = Volcano()
    started(v, "j", task("a", 3), policies=[{"event": "PodFailed", "action": "AbortJob"}])
    v.finish("j-a-0")
    v.finish("j-a-1", exit_code=2)
    v.sync("j")
    assert v.phase("j") == "Aborting"
    v.reap("j")
    v.sync("j")
    assert v.phase("j") == "Aborted"
    assert sorted(v.pods("j")) == ["j-a-0", "j-a-1"]


def test_an_exit_code_policy_terminates_the_job() -> None:
    v = Volcano()
    started(v, "j", task("a", 2), policies=[{"exitCode": 137, "action": "TerminateJob"}])
    v.finish("j-a-0", exit_code=1)
    v.sync("j")
    assert v.phase("j") == "Running"  # exit code 1 matches no policy
    v.finish("j-a-1", exit_code=137)
    v.sync("j")
    v.reap("j")
    v.sync("j")
    assert v.phase("j") == "Terminated"


def test_a_task_policy_wins_over_the_job_policy_for_its_pods() -> None:
    v = Volcano()
    a = task("a", 1, policies=[{"event": "PodFailed", "action": "RestartTask"}])
    started(v, "j", a, task("b", 1), policies=[{"event": "PodFailed", "action": "AbortJob"}])
    uid = v.pod("j-a-0")["metadata"]["uid"]
    v.finish("j-a-0", exit_code=1)
    v.sync("j")
    v.reap("j")
    v.sync("j")
    assert v.phase("j") == "Running"
    assert v.pod("j-a-0")["metadata"]["uid"] != uid  # the task's pod was made again
    v.run_all("j")
    v.finish("j-b-0", exit_code=1)
    v.sync("j")
    assert v.phase("j") == "Aborting"


def test_min_success_completes_the_job_early() -> None:
    v = Volcano()
    started(v, "j", task("a", 4), minAvailable=1, minSuccess=2)
    v.finish("j-a-0")
    v.sync("j")
    assert v.phase("j") == "Running"
    v.finish("j-a-1")
    v.sync("j")
    assert v.phase("j") == "Completed"


def test_min_available_larger_than_the_pods_is_held_with_the_reason() -> None:
    v = Volcano()
    v.create(vcjob("big", task("a", 2), minAvailable=5))
    v.sync("big")
    state = v.state("big")
    assert state["phase"] == "Pending"
    assert state["reason"] == "InvalidJob"
    assert "spec.minAvailable: 5 is greater than the 2 pods" in state["message"]
    assert v.pods("big") == {}
    assert any(reason == "InvalidJob" for reason, _ in v.events("big"))


def test_an_unknown_plugin_and_a_bad_policy_are_named() -> None:
    v = Volcano()
    v.create(
        vcjob("j", task("a", 1), plugins={"nccl": []}, policies=[{"event": "PodFailed", "action": "Explode"}])
    )
    v.sync("j")
    message = v.state("j")["message"]
    assert "spec.plugins[nccl]: unable to find job plugin: nccl" in message
    assert "spec.policies[0].action: invalid policy action 'Explode'" in message


def test_a_finished_job_is_deleted_after_its_ttl() -> None:
    v = Volcano()
    started(v, "j", task("a", 1), ttlSecondsAfterFinished=0)
    v.finish("j-a-0")
    v.sync("j")
    names = [j["metadata"]["name"] for j in v.store.list("batch.volcano.sh/v1alpha1", "Job").items]
    assert "j" not in names or v.job("j")["metadata"].get("deletionTimestamp")


def test_the_podgroup_carries_the_jobs_priority_class_and_network_topology() -> None:
    v = Volcano()
    topology = {"mode": "hard", "highestTierAllowed": 2}
    v.create(vcjob("j", task("a", 2), priorityClassName="high", networkTopology=topology))
    v.sync("j")
    spec = v.podgroup("j")["spec"]
    assert spec["priorityClassName"] == "high"
    assert spec["networkTopology"] == topology
    assert {p["spec"].get("priorityClassName") for p in v.pods("j").values()} == {"high"}


class ConflictOnce:
    """The store, except that the first status write is refused as if someone wrote first."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.refused = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def update_status(self, obj: Any, options: Any = None) -> Any:
        if not self.refused:
            self.refused = True
            raise Conflict("the object has been modified")
        return self.store.update_status(obj, options)


def test_an_event_whose_action_was_not_written_is_handled_again() -> None:
    v = Volcano()
    started(v, "j", task("a", 2), policies=[{"event": "PodFailed", "action": "RestartJob"}])
    v.finish("j-a-0", exit_code=1)
    flaky = ConflictOnce(v.store)
    v.jobs = VolcanoJobController(flaky, events=lambda *a: None)
    v.jobs.reconcile("default", "j")  # the first status write conflicts; the pass runs again
    assert flaky.refused
    assert v.phase("j") == "Restarting"
    assert v.job("j")["status"]["retryCount"] == 1
