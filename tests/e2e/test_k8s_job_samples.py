"""The Kubernetes documentation's Job samples (/work/shared/samples/manifests/k8s-jobs/, and its
gpu/ Jobs, Pods and ConfigMaps) applied unchanged with the real kubectl against `kubehpc up` on
the fake-GPU cluster (examples/clusters/fake-gpu-demo.yaml).

Containers run as host processes, so each sample's outcome follows from what this host has:
a sample whose command exists here runs to the end Kubernetes defines for it; one whose
command (or mount path) is missing fails with the OS's reason in its log. Each expectation
checks the host first (``shutil.which``) and asserts the outcome that follows.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2ekit import KUBECTL, REPO, Plane

from kubehpc.api.devices import POD_DEVICES_ANNOTATION

SAMPLES = Path("/work/shared/samples/manifests/k8s-jobs")
FAKE_GPU_CLUSTER = REPO / "examples" / "clusters" / "fake-gpu-demo.yaml"
NO_COMMAND = "no command given"  # what a container with only an image (entrypoint) gets
Obj = dict[str, Any]


def not_found(executable: str) -> str:
    return f'exec: "{executable}": executable file not found in $PATH'


def wait(check: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(what())
        time.sleep(0.1)


@pytest.fixture(scope="module")
def gpu_plane(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    if not Path(KUBECTL).exists():
        pytest.fail(f"{KUBECTL} is missing: `make test` installs it (scripts/system-deps.sh)")
    if not SAMPLES.is_dir():
        pytest.fail(f"{SAMPLES} is missing")
    p = Plane(tmp_path_factory.mktemp("samples") / "home").start(FAKE_GPU_CLUSTER.read_text())
    try:
        yield p
    finally:
        p.stop()


class Sample:
    """One applied sample file and what kubectl says about it."""

    def __init__(self, plane: Plane, path: Path) -> None:
        self.plane, self.path = plane, path
        plane.kubectl("apply", "-f", str(path))

    def delete(self) -> None:
        self.plane.kubectl("delete", "-f", str(self.path), "--grace-period=1", "--wait=false")

    def get(self, *args: str) -> Obj:
        out: Obj = json.loads(self.plane.kubectl("get", *args, "-o", "json"))
        return out

    def job(self, name: str) -> Obj:
        return self.get("job", name)

    def conditions(self, name: str) -> dict[str, Obj]:
        conds = self.job(name).get("status", {}).get("conditions") or []
        return {c["type"]: c for c in conds if c.get("status") == "True"}

    def finished(self, name: str, timeout: float = 30) -> dict[str, Obj]:
        wait(
            lambda: bool({"Complete", "Failed"} & self.conditions(name).keys()),
            timeout,
            lambda: f"job {name} did not finish: {json.dumps(self.job(name).get('status'))}",
        )
        return self.conditions(name)

    def pods(self, job: str) -> list[Obj]:
        items: list[Obj] = self.get("pods", "-l", f"job-name={job}")["items"]
        return items

    def first_failed_pod(self, job: str, timeout: float = 30) -> Obj:
        def failed() -> list[Obj]:
            return [p for p in self.pods(job) if p["status"].get("phase") == "Failed"]

        wait(lambda: bool(failed()), timeout, lambda: f"no pod of {job} failed: {self.pods(job)}")
        return failed()[0]

    def logs(self, pod: Obj, *args: str) -> str:
        return self.plane.kubectl("logs", pod["metadata"]["name"], *args)


@pytest.fixture
def apply(gpu_plane: Plane) -> Iterator[Callable[[str], Sample]]:
    applied: list[Sample] = []

    def do(relative: str) -> Sample:
        sample = Sample(gpu_plane, SAMPLES / relative)
        applied.append(sample)
        return sample

    yield do
    for sample in applied:
        sample.delete()


def terminated(pod: Obj, init: bool = False) -> Obj:
    statuses = pod["status"]["initContainerStatuses" if init else "containerStatuses"]
    state: Obj = statuses[0]["state"]["terminated"]
    return state


# -- k8s-jobs/ ---------------------------------------------------------------------------------


def test_job_pi_prints_pi_where_perl_exists_else_fails_for_want_of_perl(
    apply: Callable[[str], Sample],
) -> None:
    sample = apply("job-pi.yaml")
    if shutil.which("perl") is not None:
        assert "Complete" in sample.finished("pi")
        (pod,) = sample.pods("pi")
        digits = sample.logs(pod).strip()
        assert digits.startswith("3.14159265358979") and len(digits) == 1001  # "3." + 999 digits
    else:
        pod = sample.first_failed_pod("pi")
        assert terminated(pod)["reason"] == "Error"
        assert not_found("perl") in sample.logs(pod)


def test_indexed_job_sample_writes_to_a_mount_path_the_host_lacks_and_fails_in_its_init_container(
    apply: Callable[[str], Sample],
) -> None:
    # The init container writes /input/data.txt: mounts are not mapped onto host paths (they
    # are at $KUBEHPC_ROOT/input), so on a host without /input the shell reports it.
    sample = apply("indexed-job.yaml")
    if Path("/input").is_dir():
        assert "Complete" in sample.finished("indexed-job")
        return
    pod = sample.first_failed_pod("indexed-job")
    assert terminated(pod, init=True)["reason"] == "Error"
    assert "/input/data.txt: No such file or directory" in sample.logs(pod, "-c", "input")
    wait(
        lambda: int(sample.job("indexed-job")["status"].get("failed", 0)) >= 1,
        10,
        lambda: f"the Job never counted the failure: {sample.job('indexed-job')['status']}",
    )
    assert "Complete" not in sample.conditions("indexed-job")


def test_backoff_limit_per_index_sample_fails_the_even_indexes_and_completes_the_odd(
    apply: Callable[[str], Sample],
) -> None:
    sample = apply("job-backoff-limit-per-index-example.yaml")
    name = "job-backoff-limit-per-index-example"
    if shutil.which("python3") is None:
        pod = sample.first_failed_pod(name)
        assert not_found("python3") in sample.logs(pod)
        return
    # Every index runs; even ones fail twice (backoffLimitPerIndex 1): 5 failed indexes, not
    # more than maxFailedIndexes 5, so the Job ends Failed for its failed indexes.
    conditions = sample.finished(name, timeout=90)
    assert conditions["Failed"]["reason"] == "FailedIndexes"
    status = sample.job(name)["status"]
    assert status["failedIndexes"] == "0,2,4,6,8"
    assert status["completedIndexes"] == "1,3,5,7,9"
    assert status["succeeded"] == 5 and status["failed"] == 10
    assert all("Hello world" in sample.logs(p) for p in sample.pods(name))


def test_pod_failure_policy_sample_fails_the_job_on_exit_code_42(apply: Callable[[str], Sample]) -> None:
    sample = apply("job-pod-failure-policy-example.yaml")
    name = "job-pod-failure-policy-example"
    if shutil.which("bash") is None:
        pod = sample.first_failed_pod(name)
        assert not_found("bash") in sample.logs(pod)
        return
    failed = sample.finished(name)["Failed"]
    assert failed["reason"] == "PodFailurePolicy"
    assert "exit code 42" in failed["message"]
    pod = next(p for p in sample.pods(name) if p["status"].get("phase") == "Failed")
    assert terminated(pod)["exitCode"] == 42
    assert "Hello world!" in sample.logs(pod)


def test_success_policy_sample_ends_by_its_success_policy_or_by_its_backoff_limit(
    apply: Callable[[str], Sample],
) -> None:
    # The sample runs 10 indexes at once; only index 2 succeeds. Its backoffLimit is the default
    # 6, and the Job controller checks the backoff limit before the success policy (as
    # Kubernetes' syncJob does). So the end depends on what one sync sees: index 2's success
    # before the 7th failure -> Complete by SuccessPolicy; the 7th failure no later than that
    # success (pods finishing together, as Kubernetes' 1 s sync batching also makes likely) ->
    # Failed by BackoffLimitExceeded. Either way the Job's record must be consistent.
    sample = apply("job-success-policy.yaml")
    if shutil.which("python3") is None:
        pod = sample.first_failed_pod("job-success")
        assert not_found("python3") in sample.logs(pod)
        return
    conditions = sample.finished("job-success")
    status = sample.job("job-success")["status"]
    if "Complete" in conditions:
        assert conditions["Complete"]["reason"] == "SuccessPolicy"
        assert conditions["SuccessCriteriaMet"]["reason"] == "SuccessPolicy"
        assert status["completedIndexes"] == "2"
        assert status.get("failed", 0) <= 6
    else:
        assert conditions["Failed"]["reason"] == "BackoffLimitExceeded"
        assert status["failed"] > 6
        assert "SuccessCriteriaMet" not in conditions
    assert status.get("completedIndexes", "") in ("", "2")


# -- k8s-jobs/gpu/ -------------------------------------------------------------------------------


@pytest.mark.parametrize("config", ["custom-mig-config", "time-slicing-config-all"])
def test_gpu_operator_config_maps_are_stored(apply: Callable[[str], Sample], config: str) -> None:
    sample = apply(f"gpu/{config}.yaml")
    stored = sample.get("configmap", config)
    original = sample.plane.kubectl("create", "--dry-run=client", "-f", str(sample.path), "-o", "json")
    assert stored["data"] == json.loads(original)["data"]


def test_gpu_operator_test_pod_gets_a_gpu_and_fails_for_want_of_its_image_entrypoint(
    apply: Callable[[str], Sample],
) -> None:
    # Only an image, no command: a host process cannot read the image's entrypoint.
    sample = apply("gpu/gpu-operator-gpu-pod.yaml")

    def started_once() -> bool:
        pod = sample.get("pod", "gpu-operator-test")
        statuses = pod["status"].get("containerStatuses") or []
        return bool(statuses) and (
            "terminated" in statuses[0]["state"] or "terminated" in (statuses[0].get("lastState") or {})
        )

    wait(started_once, 30, lambda: f"never ran: {sample.get('pod', 'gpu-operator-test')['status']}")
    pod = sample.get("pod", "gpu-operator-test")
    (held,) = json.loads(pod["metadata"]["annotations"][POD_DEVICES_ANNOTATION])["cuda-vector-add"]
    assert held.startswith("GPU-")
    assert NO_COMMAND in sample.logs(pod)


def test_device_plugin_test_job_gets_a_gpu_and_fails_for_want_of_its_image_entrypoint(
    apply: Callable[[str], Sample],
) -> None:
    sample = apply("gpu/nvidia-device-plugin-job-1.yaml")
    pod = sample.first_failed_pod("j-e2e-1")
    (held,) = json.loads(pod["metadata"]["annotations"][POD_DEVICES_ANNOTATION])["cuda-container"]
    assert held.startswith("GPU-")
    assert terminated(pod)["exitCode"] != 0
    assert NO_COMMAND in sample.logs(pod)
