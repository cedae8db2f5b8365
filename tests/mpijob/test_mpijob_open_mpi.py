"""A real Open MPI program run by an MPIJob on the embedded cluster."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml
from mpikit import Plane, build_mpi_program, drain, mpijob, wait_for


def test_four_ranks_run_in_their_worker_pods_and_talk(plane: Plane, tmp_path: Path) -> None:
    binary = build_mpi_program(tmp_path)
    job = mpijob("ranks", ["mpirun", "-np", "4", str(binary)])
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    wait_for(plane, "ranks", "Succeeded")
    log = plane.kubectl("logs", "job/ranks-launcher")
    ranks = sorted(re.findall(r"rank=(\d) size=4 pod=(\S+) role=(\S+) sum=6", log))
    # Open MPI fills each host's slots in hostfile order: ranks 0,1 on worker 0, 2,3 on worker 1.
    assert ranks == [
        ("0", "ranks-worker-0", "worker"),
        ("1", "ranks-worker-0", "worker"),
        ("2", "ranks-worker-1", "worker"),
        ("3", "ranks-worker-1", "worker"),
    ], log


def _pids_running(argv_tail: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        if cmd == argv_tail:
            pids.append(int(entry.name))
    return pids


def test_a_failing_rank_fails_the_job_with_its_exit_code(plane: Plane, tmp_path: Path) -> None:
    binary = build_mpi_program(tmp_path)
    job = mpijob(
        "fails",
        ["mpirun", "-np", "2", str(binary), "3"],
        slots=1,
        extra_spec={"runPolicy": {"backoffLimit": 0}},
    )
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    failed = wait_for(plane, "fails", "Failed")
    pods = json.loads(
        plane.kubectl("get", "pods", "-l", "training.kubeflow.org/job-role=launcher", "-o", "json")
    )
    codes = [
        s["state"]["terminated"]["exitCode"]
        for p in pods["items"]
        if p["metadata"]["name"].startswith("fails-launcher")
        for s in p["status"]["containerStatuses"]
    ]
    log = plane.kubectl("logs", "job/fails-launcher")
    assert codes == [3], f"launcher exit codes {codes}\nstatus: {json.dumps(failed['status'])}\nlog:\n{log}"


def test_deleting_the_job_kills_every_rank(plane: Plane) -> None:
    marker = "sleep 7191"
    job = mpijob("lasting", ["mpirun", "-np", "4", *marker.split()])
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    wait_for(plane, "lasting", "Running")
    deadline = time.monotonic() + 30
    while len(_pids_running(marker)) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_pids_running(marker)) == 4
    plane.kubectl("delete", "mpijob", "lasting")
    deadline = time.monotonic() + 30
    while _pids_running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _pids_running(marker) == []


QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: mpi-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: mpi-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: mpi-flavor
      resources: [{name: cpu, nominalQuota: 3}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: mpi-lq, namespace: default}
spec: {clusterQueue: mpi-cq}
"""


def test_queued_mpijobs_are_admitted_by_quota_as_one_workload(plane: Plane, tmp_path: Path) -> None:
    plane.kubectl("apply", "-f", "-", stdin=QUEUES)
    binary = build_mpi_program(tmp_path)
    jobs = []
    for name, pause in (("first", 5), ("second", 0)):
        # Launcher 1 CPU + 2 workers x 1 CPU: the queue's 3 CPUs hold one job at a time; the
        # first one pauses so that it surely holds its quota while the second is looked at.
        job = mpijob(name, ["sh", "-c", f"sleep {pause}; mpirun -np 2 {binary}"], slots=1)
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "mpi-lq"}
        for replica in job["spec"]["mpiReplicaSpecs"].values():
            replica["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
        jobs.append(yaml.safe_dump(job))
    plane.kubectl("apply", "-f", "-", stdin=jobs[0])
    wait_for(plane, "first", "Running")
    plane.kubectl("apply", "-f", "-", stdin=jobs[1])
    time.sleep(1.5)
    second = json.loads(plane.kubectl("get", "mpijob", "second", "-o", "json"))
    assert second["spec"]["runPolicy"]["suspend"] is True  # held: no quota left
    assert "pod/second-worker-0" not in plane.kubectl("get", "pods", "-o", "name")
    wait_for(plane, "first", "Succeeded")
    wait_for(plane, "second", "Succeeded")
    workloads = json.loads(plane.kubectl("get", "workloads", "-o", "json"))["items"]
    second_wl = [w for w in workloads if w["metadata"]["ownerReferences"][0]["name"] == "second"]
    assert [p["name"] for p in second_wl[0]["spec"]["podSets"]] == ["launcher", "worker"]


def test_each_rank_sees_the_gpus_of_its_own_worker_pod(tmp_path: Path) -> None:
    # Fake GPUs: each worker pod is given one device, and the rank started in it must see that
    # device (and no other) in CUDA_VISIBLE_DEVICES.
    cluster = (
        Path(__file__).resolve().parents[2] / "examples" / "clusters" / "fake-gpu-demo.yaml"
    ).read_text()
    plane = Plane(tmp_path / "home").start(cluster)
    try:
        job = mpijob(
            "gpus",
            ["mpirun", "-np", "2", "sh", "-c", "echo $POD_NAME $CUDA_VISIBLE_DEVICES"],
            slots=1,
            # The workers stay after the job ends, to be looked at: with "Running" they are
            # deleted as it succeeds, which can come before the test reads them.
            extra_spec={"runPolicy": {"cleanPodPolicy": "None"}},
        )
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        worker["resources"] = {"limits": {"nvidia.com/gpu": 1}}
        plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
        wait_for(plane, "gpus", "Succeeded")
        devices = {}
        for i in range(2):
            pod = json.loads(plane.kubectl("get", "pod", f"gpus-worker-{i}", "-o", "json"))
            devices[f"gpus-worker-{i}"] = json.loads(pod["metadata"]["annotations"]["kubehpc.io/devices"])
        log = plane.kubectl("logs", "job/gpus-launcher")
        # mpirun's own diagnostics share the launcher's log (e.g. Open MPI's harmless
        # "plm:rsh: Warning: setpgid(...) failed" when the rsh agent has already exec'd): keep
        # only the ranks' "<pod> <devices>" lines.
        seen = dict(re.findall(r"^(gpus-worker-\d+) (\S+)$", log, flags=re.MULTILINE))
        assert set(seen) == {"gpus-worker-0", "gpus-worker-1"}, log
        for pod, visible in seen.items():
            assert visible.startswith("GPU-")
            assert [visible] == [d for ds in devices[pod].values() for d in ds]
        assert seen["gpus-worker-0"] != seen["gpus-worker-1"]
    finally:
        drain(plane.kubeconfig)
        plane.stop()


def test_the_seeds_mpijob_applies_through_its_shorthand_with_a_warning(plane: Plane) -> None:
    seed = Path(__file__).resolve().parents[2] / "examples" / "seed" / "mpijob.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "kubehpc.cli", "--home", str(plane.home), "apply", "-f", str(seed)],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBEHPC_HOME")},
    )
    assert result.returncode == 0, result.stderr
    assert "spec.worker -> spec.mpiReplicaSpecs.Worker" in result.stderr
    stored = json.loads(plane.kubectl("get", "mpijob", "mpi-test", "-o", "json"))
    assert stored["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 4
    assert stored["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    plane.kubectl("delete", "mpijob", "mpi-test", "--wait=false")


def test_a_scheduling_policy_runs_the_job_as_one_volcano_gang(plane: Plane, tmp_path: Path) -> None:
    binary = build_mpi_program(tmp_path)
    job = mpijob(
        "gang",
        ["sh", "-c", f"sleep 3; mpirun -np 4 {binary}"],
        extra_spec={"runPolicy": {"schedulingPolicy": {"minAvailable": 3}}},
    )
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    wait_for(plane, "gang", "Running")
    group = json.loads(plane.kubectl("get", "podgroups.scheduling.volcano.sh", "gang", "-o", "json"))
    assert group["spec"]["minMember"] == 3
    pod = json.loads(plane.kubectl("get", "pod", "gang-worker-0", "-o", "json"))
    assert pod["spec"]["schedulerName"] == "volcano"
    wait_for(plane, "gang", "Succeeded")
    assert (
        len(re.findall(r"rank=\d size=4 pod=gang-worker-\d", plane.kubectl("logs", "job/gang-launcher"))) == 4
    )


def test_run_launcher_as_worker_puts_a_rank_in_the_launcher_pod_too(plane: Plane, tmp_path: Path) -> None:
    # Hostfile: the launcher (1 slot), then the one worker (1 slot); rank 0 runs in the launcher
    # pod itself, entered through the launch agent like any worker.
    binary = build_mpi_program(tmp_path)
    job = mpijob("both", ["mpirun", "-np", "2", str(binary)], workers=1, slots=1)
    job["spec"]["runLauncherAsWorker"] = True
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["env"] = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    wait_for(plane, "both", "Succeeded")
    log = plane.kubectl("logs", "job/both-launcher")
    ranks = sorted(re.findall(r"rank=(\d) size=2 pod=(\S+) role=(\S+) sum=1", log))
    assert [(r, role) for r, _, role in ranks] == [("0", "launcher"), ("1", "worker")], log
    assert ranks[0][1].startswith("both-launcher-") and ranks[1][1] == "both-worker-0", log


def test_a_worker_pod_that_dies_mid_run_fails_the_job_as_its_backoff_limit_says(plane: Plane) -> None:
    # The rank in the deleted worker dies with its pod, mpirun aborts the others and exits
    # non-zero; with backoffLimit 0 the launcher Job fails, and with it the MPIJob.
    marker = "sleep 7193"
    job = mpijob("dies", ["mpirun", "-np", "2", *marker.split()], slots=1)
    job["spec"]["runPolicy"]["backoffLimit"] = 0
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    wait_for(plane, "dies", "Running")
    deadline = time.monotonic() + 30
    while len(_pids_running(marker)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_pids_running(marker)) == 2
    plane.kubectl("delete", "pod", "dies-worker-1", "--wait=false")
    failed = wait_for(plane, "dies", "Failed")
    assert failed["status"]["replicaStatuses"]["Launcher"]["failed"] >= 1
    deadline = time.monotonic() + 30
    while _pids_running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _pids_running(marker) == []  # no rank outlives the failed job


def test_each_rank_sees_the_volumes_of_its_own_worker_pod(plane: Plane) -> None:
    # Each worker's own process writes its pod name into its emptyDir; the rank started in that
    # pod must find its own pod's name there (on the embedded cluster a mount is reached through
    # $KUBEHPC_ROOT/<mountPath>, which the rank gets from its pod's environment).
    owner = "$KUBEHPC_ROOT/scratch/owner"
    worker = ["sh", "-c", f'echo "$POD_NAME" > "{owner}"; exec sleep infinity']
    rank = (
        f'for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "{owner}" ] && break; sleep 0.2; done; '
        f'echo "vol pod=$POD_NAME owner=$(cat "{owner}")"'
    )
    job = mpijob("vols", ["mpirun", "-np", "2", "sh", "-c", rank], slots=1, worker_command=worker)
    spec = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    spec["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    wait_for(plane, "vols", "Succeeded")
    log = plane.kubectl("logs", "job/vols-launcher")
    seen = re.findall(r"^vol pod=(\S+) owner=(\S*)$", log, flags=re.MULTILINE)
    assert sorted(seen) == [("vols-worker-0", "vols-worker-0"), ("vols-worker-1", "vols-worker-1")], log
