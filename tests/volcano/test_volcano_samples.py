"""Volcano's own samples (/work/shared/samples/manifests/volcano/) applied unchanged with the
real kubectl against `kubehpc up` (two 4-CPU nodes), and a Job of ours whose processes read
what the plugins gave them.

Containers run as host processes, so a sample runs as far as this host allows, and what it
lacks shows in the pod's own words: the nginx sample names no command (an image's entrypoint
cannot be read), the MPI sample's shell finds no sshd and no /etc/volcano (a pod's mounts are
under $KUBEHPC_ROOT, not at their mountPath). Both gangs are admitted and start whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2ekit import KUBECTL, Plane  # type: ignore[import-not-found]  # tests/e2e, via conftest.py

SAMPLES = Path("/work/shared/samples/manifests/volcano")
Obj = dict[str, Any]


def wait(check: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(what())
        time.sleep(0.2)


@pytest.fixture(scope="module")
def plane(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    if not Path(KUBECTL).exists():
        pytest.fail(f"{KUBECTL} is missing: `make test` installs it (scripts/system-deps.sh)")
    if not SAMPLES.is_dir():
        pytest.fail(f"{SAMPLES} is missing")
    p = Plane(tmp_path_factory.mktemp("volcano") / "home").start()
    try:
        yield p
    finally:
        p.stop()


def get(plane: Plane, *args: str) -> Obj:
    out: Obj = json.loads(plane.kubectl("get", *args, "-o", "json"))
    return out


def job_phase(plane: Plane, name: str) -> str:
    return str(((get(plane, "vcjob", name).get("status") or {}).get("state") or {}).get("phase") or "")


def pods_of(plane: Plane, job: str) -> list[Obj]:
    items: list[Obj] = get(plane, "pods", "-l", f"volcano.sh/job-name={job}")["items"]
    return items


OURS = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: hosts}
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins: {env: [], svc: [], ssh: []}
  tasks:
    - name: master
      replicas: 1
      policies: [{event: TaskCompleted, action: CompleteJob}]
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: main
              image: busybox
              command: [sh, -c]
              args:
                - >-
                  cat "$KUBEHPC_ROOT/etc/volcano/worker.host"; echo;
                  echo "hosts=$VC_WORKER_HOSTS num=$VC_WORKER_NUM index=$VC_TASK_INDEX";
                  test -s "$KUBEHPC_ROOT/root/.ssh/id_rsa" && echo has-key;
                  grep -c '^Host ' "$KUBEHPC_ROOT/root/.ssh/config"
    - name: worker
      replicas: 2
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: main
              image: busybox
              command: [sh, -c, 'echo "worker $VC_TASK_INDEX"; sleep 600']
"""


def test_plugins_reach_the_processes_and_task_completed_ends_the_job(plane: Plane) -> None:
    plane.kubectl("apply", "-f", "-", stdin=OURS)
    wait(
        lambda: job_phase(plane, "hosts") == "Completed", 90, lambda: json.dumps(get(plane, "vcjob", "hosts"))
    )
    log = plane.kubectl("logs", "hosts-master-0")
    assert "hosts-worker-0.hosts\nhosts-worker-1.hosts\n" in log
    assert "hosts=hosts-worker-0.hosts,hosts-worker-1.hosts num=2 index=0" in log
    assert "has-key" in log
    assert log.rstrip().endswith("3")  # one Host entry per pod of the job
    # CompleteJob: the workers still running were stopped, the finished master is kept.
    wait(
        lambda: [p["metadata"]["name"] for p in pods_of(plane, "hosts")] == ["hosts-master-0"],
        60,
        lambda: str([p["metadata"]["name"] for p in pods_of(plane, "hosts")]),
    )
    pg = get(plane, "podgroups.scheduling.volcano.sh", "-l", "volcano.sh/job-name=hosts")["items"][0]
    assert pg["status"]["phase"] == "Completed"
    plane.kubectl("delete", "vcjob", "hosts", "--wait=false")


def test_the_job_sample_starts_its_gang_and_its_pods_say_why_nginx_cannot_run(plane: Plane) -> None:
    plane.kubectl("apply", "-f", str(SAMPLES / "job.yaml"))
    wait(
        lambda: job_phase(plane, "test-job") == "Running",
        60,
        lambda: json.dumps(get(plane, "vcjob", "test-job")),
    )
    table = plane.kubectl("get", "vcjob", "test-job")
    # "jobs" stays the built-in batch/v1 Job for kubectl, as on a cluster with Volcano installed.
    assert get(plane, "jobs")["items"] == []
    assert table.split("\n")[0].split() == ["NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE"]
    pods = pods_of(plane, "test-job")
    assert sorted(p["metadata"]["name"] for p in pods) == [f"test-job-default-nginx-{i}" for i in range(6)]
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    assert all(p["spec"].get("nodeName") for p in pods)  # the whole gang was placed

    def told() -> bool:
        statuses = get(plane, "pod", "test-job-default-nginx-0")["status"].get("containerStatuses") or [{}]
        last = (statuses[0].get("lastState") or {}).get("terminated") or {}
        return "no command given" in str(last.get("message"))

    wait(told, 60, lambda: json.dumps(get(plane, "pod", "test-job-default-nginx-0")["status"]))
    plane.kubectl("delete", "-f", str(SAMPLES / "job.yaml"), "--wait=false")


def test_the_mpi_sample_starts_whole_and_the_master_says_what_this_host_lacks(plane: Plane) -> None:
    plane.kubectl("apply", "-f", str(SAMPLES / "mpi-example.yaml"))
    wait(
        lambda: job_phase(plane, "lm-mpi-job") == "Running",
        60,
        lambda: json.dumps(get(plane, "vcjob", "lm-mpi-job")),
    )
    assert len(pods_of(plane, "lm-mpi-job")) == 3

    def log() -> str:
        return str(plane.kubectl("logs", "lm-mpi-job-mpimaster-0", check=False))

    # The hosts file exists, under the pod's root: the sample reads it at its mountPath.
    wait(lambda: "/etc/volcano/mpiworker.host: No such file or directory" in log(), 60, log)
    if not Path("/usr/sbin/sshd").exists():
        wait(lambda: "/usr/sbin/sshd: not found" in log(), 60, log)
    plane.kubectl("delete", "-f", str(SAMPLES / "mpi-example.yaml"), "--wait=false")


def test_the_queue_and_podgroup_samples_apply_and_a_capped_queue_holds_a_bigger_gang(plane: Plane) -> None:
    for name in ("hierarchical-queues.yaml", "docsnippet-queue-deserved.yaml", "podgroup.yaml"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubehpc.cli",
                "--home",
                str(plane.home),
                "apply",
                "-f",
                str(SAMPLES / name),
            ],
            capture_output=True,
            text=True,
            timeout=90,
            env={k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBEHPC_HOME")},
        )
        assert done.returncode == 0, f"kubehpc apply -f {name}: {done.stderr}"
    names = [q["metadata"]["name"] for q in get(plane, "queues.scheduling.volcano.sh")["items"]]
    assert {"root-eng-prod", "root-eng-dev", "root-sci-prod", "root-sci-dev", "queue1", "default"} <= set(
        names
    )
    wait(
        lambda: (get(plane, "queue", "queue1").get("status") or {}).get("state") == "Open",
        30,
        lambda: json.dumps(get(plane, "queue", "queue1")),
    )
    # A PodGroup alone (no pods yet) is let in by its queue: 1 CPU and 2G fit the cluster.
    wait(
        lambda: (get(plane, "pg", "test-pg").get("status") or {}).get("phase") == "Inqueue",
        30,
        lambda: json.dumps(get(plane, "pg", "test-pg")),
    )
    # The default queue capped at 2 CPU (and 4G): the sample Job's gang needs 3 CPU.
    plane.kubectl("apply", "-f", str(SAMPLES / "queue-capability.yaml"))
    doc = yaml.safe_load((SAMPLES / "job.yaml").read_text())
    doc["metadata"]["name"] = "capped"
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(doc))

    def held() -> bool:
        state = (get(plane, "vcjob", "capped").get("status") or {}).get("state") or {}
        return state.get("reason") == "QueueCapabilityExceeded"

    wait(held, 60, lambda: json.dumps(get(plane, "vcjob", "capped")))
    state = get(plane, "vcjob", "capped")["status"]["state"]
    assert state["phase"] == "Pending"
    assert state["message"].startswith('queue "default" would hold cpu 4 with this PodGroup')
    assert pods_of(plane, "capped") == []
