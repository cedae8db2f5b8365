"""The seed article's examples (examples/seed/) on the fake-GPU cluster of `make demo`
(examples/clusters/fake-gpu-demo.yaml: 2 nodes x 4 A100-80GB, GPU 3 of each cut into seven
MIG 1g.10gb slices), applied unchanged with the real kubectl against `kubehpc up`.

The Job as written runs ``mpirun -np 4 app``. Kubernetes' back-off before each retry (10 s,
doubling, backoffLimit 6) puts its end — Failed, BackoffLimitExceeded — ten minutes away in
real time; the test that waits for that end runs `kubehpc up` with the Job controller's clock
sped up (``KUBEHPC_JOB_CLOCK_SPEED``), everything else as in production.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2ekit import KUBECTL, REPO, Plane

from kubehpc.api.cluster_config import load_cluster_config, resolve_nodes
from kubehpc.api.devices import POD_DEVICES_ANNOTATION
from kubehpc.api.kinds import default_registry
from kubehpc.api.loader import load_documents
from kubehpc.controllers.job import JobController, ScaledClock
from kubehpc.controllers.scheduler import Scheduler
from kubehpc.node.agent import NodeAgent
from kubehpc.store.client import ListOptions
from kubehpc.store.home import Home
from kubehpc.store.store import Store

SEED = REPO / "examples" / "seed"
FAKE_GPU_CLUSTER = REPO / "examples" / "clusters" / "fake-gpu-demo.yaml"
Obj = dict[str, Any]


def expected_missing_app_error() -> str:
    """What the log of a pod running ``mpirun -np 4 app`` says on this host."""
    if shutil.which("mpirun") is None:
        return 'exec: "mpirun": executable file not found in $PATH'
    # mpirun exists: it starts and reports, in its own words, that it cannot run `app` (as
    # root, that it refuses to run as root: the seed's Job does not set OMPI_ALLOW_RUN_AS_ROOT).
    return "run as root" if os.geteuid() == 0 else "app"


def wait(check: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(what())
        time.sleep(0.1)


@pytest.fixture(scope="module")
def gpu_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    if not Path(KUBECTL).exists():
        pytest.fail(f"{KUBECTL} is missing: `make test` installs it (scripts/system-deps.sh)")
    p = Plane(tmp_path_factory.mktemp("seed") / "home").start(FAKE_GPU_CLUSTER.read_text())
    try:
        yield p
    finally:
        p.stop()


def get_json(plane: Plane, *args: str) -> Obj:
    out: Obj = json.loads(plane.kubectl("get", *args, "-o", "json"))
    return out


def job_conditions(plane: Plane, name: str) -> dict[str, Obj]:
    job = get_json(plane, "job", name)
    return {c["type"]: c for c in job.get("status", {}).get("conditions") or [] if c.get("status") == "True"}


def job_pods(plane: Plane, name: str) -> list[Obj]:
    items: list[Obj] = get_json(plane, "pods", "-l", f"job-name={name}")["items"]
    return items


def wait_finished(plane: Plane, name: str, timeout: float = 60) -> dict[str, Obj]:
    wait(
        lambda: bool({"Complete", "Failed"} & job_conditions(plane, name).keys()),
        timeout,
        lambda: f"job {name} did not finish: {json.dumps(get_json(plane, 'job', name).get('status'))}",
    )
    return job_conditions(plane, name)


def devices_of(pod: Obj, container: str) -> list[str]:
    held: list[str] = json.loads(pod["metadata"]["annotations"][POD_DEVICES_ANNOTATION])[container]
    return held


def printed_devices(log: str, variable: str) -> list[str]:
    line = next(ln for ln in log.splitlines() if ln.startswith(variable + "="))
    return line.split("=", 1)[1].split(",")


# -- (a) the Job as written ------------------------------------------------------------------


def test_seed_job_as_written_applies_unchanged_and_its_pods_fail_with_the_os_error(gpu_plane: Plane) -> None:
    gpu_plane.kubectl("apply", "-f", str(SEED / "job.yaml"))
    try:

        def failed_pods() -> list[Obj]:
            return [p for p in job_pods(gpu_plane, "compute-job") if p["status"].get("phase") == "Failed"]

        wait(lambda: bool(failed_pods()), 30, lambda: f"no pod failed: {job_pods(gpu_plane, 'compute-job')}")
        pod = failed_pods()[0]
        terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["reason"] == "Error"
        assert terminated["exitCode"] != 0
        assert expected_missing_app_error() in gpu_plane.kubectl("logs", pod["metadata"]["name"])

        def job_counted_a_failure() -> bool:
            return int(get_json(gpu_plane, "job", "compute-job")["status"].get("failed", 0)) >= 1

        wait(job_counted_a_failure, 10, lambda: f"{get_json(gpu_plane, 'job', 'compute-job')['status']}")
        assert "Complete" not in job_conditions(gpu_plane, "compute-job")
    finally:
        gpu_plane.kubectl("delete", "-f", str(SEED / "job.yaml"), "--wait=false")


class InProcessCluster:
    """Store, Job controller on a sped-up clock, scheduler and node agent in this process, on
    the fake-GPU cluster config — `kubehpc up` minus its HTTP API."""

    def __init__(self, root: Path, speed: float) -> None:
        config = load_cluster_config(FAKE_GPU_CLUSTER)
        self.home = Home(root / "home")
        self.home.ensure()
        self.store = Store(default_registry(), None)
        self.agent = NodeAgent(
            self.store, config, resolve_nodes(config), self.home, heartbeat_s=0.5, subreaper=False
        )
        self.agent.start()
        self.scheduler = Scheduler(self.store)
        self.scheduler.start()
        self.stop_event = threading.Event()
        controller = JobController(self.store, clock=ScaledClock(speed))
        self.thread = threading.Thread(target=controller.run, args=(self.stop_event,), daemon=True)
        self.thread.start()

    def apply(self, path: Path) -> Obj:
        (doc,) = load_documents([path])
        obj = dict(doc.obj)
        obj.setdefault("metadata", {}).setdefault("namespace", "default")
        return self.store.create(obj)

    def job(self, name: str) -> Obj:
        return self.store.get("batch/v1", "Job", name, "default")

    def pods(self, job: str) -> list[Obj]:
        opts = ListOptions("default", label_selector=f"job-name={job}")
        return self.store.list("v1", "Pod", opts).items

    def close(self) -> None:
        self.stop_event.set()
        self.thread.join(10)
        self.scheduler.stop()
        self.agent.stop(kill_pods=True)
        self.store.close()


def test_seed_job_as_written_ends_failed_with_backoff_limit_exceeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Back-off 10 s .. 320 s becomes 0.1 s .. 3.2 s; nothing else about the Job changes.
    monkeypatch.setenv("KUBEHPC_JOB_CLOCK_SPEED", "100")
    plane = Plane(tmp_path / "home").start(FAKE_GPU_CLUSTER.read_text())
    try:
        plane.kubectl("apply", "-f", str(SEED / "job.yaml"))
        plane.kubectl("wait", "job/compute-job", "--for=condition=Failed", "--timeout=90s", timeout=120)
        job = get_json(plane, "job", "compute-job")
        failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
        assert failed["reason"] == "BackoffLimitExceeded"
        assert job["status"]["failed"] > 6
        for pod in job_pods(plane, "compute-job"):
            if pod["status"].get("phase") == "Failed":
                assert expected_missing_app_error() in plane.kubectl("logs", pod["metadata"]["name"])
    finally:
        plane.stop()


def test_gpu_job_prints_exactly_the_two_gpus_recorded_on_its_pod(gpu_plane: Plane) -> None:
    gpu_plane.kubectl("apply", "-f", str(SEED / "gpu-job.yaml"))
    try:
        assert "Complete" in wait_finished(gpu_plane, "gpu-train")
        (pod,) = job_pods(gpu_plane, "gpu-train")
        held = devices_of(pod, "trainer")
        assert len(held) == 2 and all(d.startswith("GPU-") for d in held)
        log = gpu_plane.kubectl("logs", pod["metadata"]["name"])
        assert printed_devices(log, "CUDA_VISIBLE_DEVICES") == held
    finally:
        gpu_plane.kubectl("delete", "-f", str(SEED / "gpu-job.yaml"))


def test_mig_job_prints_exactly_the_two_mig_slices_recorded_on_its_pod(gpu_plane: Plane) -> None:
    gpu_plane.kubectl("apply", "-f", str(SEED / "mig-job.yaml"))
    try:
        assert "Complete" in wait_finished(gpu_plane, "mig-infer")
        (pod,) = job_pods(gpu_plane, "mig-infer")
        held = devices_of(pod, "infer")
        assert len(held) == 2 and all(d.startswith("MIG-") for d in held)
        log = gpu_plane.kubectl("logs", pod["metadata"]["name"])
        assert printed_devices(log, "NVIDIA_VISIBLE_DEVICES") == held
    finally:
        gpu_plane.kubectl("delete", "-f", str(SEED / "mig-job.yaml"))


# -- (c) isolation ----------------------------------------------------------------------------


def gpu_pod(name: str, node: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"test": "isolation"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [
                {
                    "name": "c",
                    "image": "cuda",
                    # Hold the GPU until told to let go, so all holders overlap for certain.
                    "command": ["sh", "-c", "echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; sleep 30"],
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ],
        },
    }


def test_gpu_pods_running_at_the_same_time_never_see_the_same_device(gpu_plane: Plane) -> None:
    # gpu-0 has three whole GPUs (GPU 3 is cut into MIG slices): three pods take one each and a
    # fourth must wait rather than share.
    manifests = [gpu_pod(f"holder-{i}", "gpu-0") for i in range(4)]
    try:
        gpu_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(manifests[:3]))

        def running() -> list[Obj]:
            pods = get_json(gpu_plane, "pods", "-l", "test=isolation")["items"]
            return [p for p in pods if p["status"].get("phase") == "Running"]

        wait(lambda: len(running()) == 3, 30, lambda: f"not all running: {running()}")
        gpu_plane.kubectl("apply", "-f", "-", stdin=json.dumps(manifests[3]))
        now_running = running()
        assert len(now_running) == 3
        seen: list[str] = []
        for pod in now_running:
            held = devices_of(pod, "c")
            name = pod["metadata"]["name"]
            wait(
                lambda name=name: "CUDA_VISIBLE_DEVICES=" in gpu_plane.kubectl("logs", name),
                10,
                lambda: "no log",
            )
            assert printed_devices(gpu_plane.kubectl("logs", name), "CUDA_VISIBLE_DEVICES") == held
            seen += held
        assert len(seen) == 3 and len(set(seen)) == 3

        def fourth_unschedulable() -> bool:
            pod = get_json(gpu_plane, "pod", "holder-3")
            conds = {c["type"]: c for c in pod["status"].get("conditions") or []}
            return conds.get("PodScheduled", {}).get("reason") == "Unschedulable"

        wait(fourth_unschedulable, 15, lambda: f"{get_json(gpu_plane, 'pod', 'holder-3')['status']}")
        message = get_json(gpu_plane, "pod", "holder-3")["status"]["conditions"]
        assert any("Insufficient nvidia.com/gpu" in c.get("message", "") for c in message)
    finally:
        gpu_plane.kubectl("delete", "pods", "-l", "test=isolation", "--grace-period=1")


# -- (d) the runnable Jobs ----------------------------------------------------------------------


def test_runnable_seed_job_completes_all_four_pods(gpu_plane: Plane) -> None:
    gpu_plane.kubectl("apply", "-f", str(SEED / "job-runnable.yaml"))
    try:
        assert "Complete" in wait_finished(gpu_plane, "compute-job-runnable")
        assert get_json(gpu_plane, "job", "compute-job-runnable")["status"]["succeeded"] == 4
        pods = job_pods(gpu_plane, "compute-job-runnable")
        assert all("converged" in gpu_plane.kubectl("logs", p["metadata"]["name"]) for p in pods)
    finally:
        gpu_plane.kubectl("delete", "-f", str(SEED / "job-runnable.yaml"))


def test_indexed_seed_job_completes_every_index(gpu_plane: Plane) -> None:
    gpu_plane.kubectl("apply", "-f", str(SEED / "indexed-job.yaml"))
    try:
        assert "Complete" in wait_finished(gpu_plane, "sweep")
        status = get_json(gpu_plane, "job", "sweep")["status"]
        assert status["succeeded"] == 6 and status["completedIndexes"] == "0-5"
        logs = sorted(
            gpu_plane.kubectl("logs", p["metadata"]["name"]).strip() for p in job_pods(gpu_plane, "sweep")
        )
        assert logs == [f"evaluating point {i}" for i in range(6)]
    finally:
        gpu_plane.kubectl("delete", "-f", str(SEED / "indexed-job.yaml"))


def test_kubectl_applies_the_seed_mpijob_as_written_with_a_warning_naming_the_rewrite(
    gpu_plane: Plane,
) -> None:
    # The seed writes spec.worker / spec.launcher, which the MPI Operator's schema does not have:
    # the API server reads them as mpiReplicaSpecs and says so in a Warning header kubectl prints.
    result = subprocess.run(
        [
            KUBECTL,
            "--cache-dir",
            str(gpu_plane.home / "kubectl-cache"),
            "apply",
            "-f",
            str(SEED / "mpijob.yaml"),
        ],
        env={**os.environ, "KUBECONFIG": str(gpu_plane.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        assert result.returncode == 0, result.stderr
        assert (
            "Warning: MPIJob:" in result.stderr
            and "spec.worker -> spec.mpiReplicaSpecs.Worker" in result.stderr
        )
        stored = get_json(gpu_plane, "mpijob", "mpi-test")
        assert set(stored["spec"]["mpiReplicaSpecs"]) == {"Launcher", "Worker"}
        assert "worker" not in stored["spec"] and "launcher" not in stored["spec"]
    finally:
        gpu_plane.kubectl("delete", "-f", str(SEED / "mpijob.yaml"), "--wait=false", check=False)
