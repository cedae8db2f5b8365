"""Bad input in cluster mode: a clear message, and a retry loop that resumes — never a crash loop."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from k8skit import KUBEHPC, K8sEnv, Proc, condition, job, wait_for

from kubehpc.api.errors import NotFound
from kubehpc.kube.rest import RestClient


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_missing_kubeconfig_is_named_and_the_command_exits(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    done = subprocess.run(
        [*KUBEHPC, "controller", "--kubeconfig", str(missing)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert f"cannot use the kubeconfig: kubeconfig {missing} does not exist" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unreachable_api_server_is_retried_with_a_clear_message(k8s: K8sEnv, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong-port.yaml"
    wrong.write_text(re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{free_port()}", k8s.kubeconfig.read_text()))
    proc = Proc(["controller", "--kubeconfig", str(wrong)], tmp_path / "wrong.log").start()
    try:
        wait_for("the retry message", lambda: "retrying" in proc.output(), timeout=30)
        time.sleep(3)
        assert proc.alive(), proc.output()
        assert "cannot reach the API server" in proc.output()
        assert "Traceback" not in proc.output()
    finally:
        assert proc.stop() == 0


def test_rbac_that_forbids_is_explained_and_retried_until_granted(
    k8s: K8sEnv, api: RestClient, tmp_path: Path
) -> None:
    proc = Proc(
        [
            "controller",
            "--kubeconfig",
            str(k8s.limited_kubeconfig),
            "--leader-elect",
            "false",
            "--components",
            "scheduler",
            "--scheduler-name",
            "rbac-test",
        ],
        tmp_path / "rbac.log",
    ).start()
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "kubehpc-test-limited"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}],
    }
    try:
        wait_for("the RBAC message", lambda: "RBAC forbids it" in proc.output(), timeout=30)
        assert proc.alive(), proc.output()
        api.create(binding)
        wait_for(
            "the controller to go on once allowed",
            lambda: "CustomResourceDefinitions installed" in proc.output(),
            timeout=60,
        )
        assert proc.alive(), proc.output()
    finally:
        code = proc.stop()
        assert code == 0, proc.output()
        try:
            api.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "kubehpc-test-limited")
        except NotFound:
            pass


def test_the_api_server_going_away_mid_run_is_survived(
    controller: Proc, nodes: Proc, k8s: K8sEnv, api: RestClient
) -> None:
    k8s.restart_apiserver(pause_s=5)
    assert controller.alive(), controller.output()
    assert nodes.alive(), nodes.output()
    api.create(job("after-outage", "", 1, "200m", ["true"]))
    wait_for(
        "a Job created after the outage to complete",
        lambda: condition(api.get("batch/v1", "Job", "after-outage", "default"), "Complete") == "True",
        timeout=120,
    )
    assert controller.alive() and nodes.alive()
