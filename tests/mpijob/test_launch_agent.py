"""The launch agent: a command run inside a pod of the embedded cluster, as ssh or kubectl exec would."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from mpikit import Plane

from kubehpc.node.launch import HostName, LaunchError, parse_args, resolve_pod, split_host


def test_ssh_options_before_the_host_are_skipped() -> None:
    args = parse_args(
        ["-o", "ConnectionAttempts=10", "-x", "w-0.pi.default.svc", "orted", "-mca", "ess", "env"]
    )
    assert (args.host, args.command) == ("w-0.pi.default.svc", ["orted", "-mca", "ess", "env"])


def test_a_command_is_required() -> None:
    with pytest.raises(LaunchError, match="no command"):
        parse_args(["host"])


@pytest.mark.parametrize(
    ("host", "parts"),
    [
        ("pi-worker-0", HostName("pi-worker-0")),
        ("pi-worker-0.pi", HostName("pi-worker-0", "pi")),
        ("pi-worker-0.pi.team-a.svc", HostName("pi-worker-0", "pi", "team-a")),
        ("root@pi-worker-0.pi.team-a.svc.cluster.local.", HostName("pi-worker-0", "pi", "team-a")),
    ],
)
def test_host_names_as_a_headless_service_resolves_them(host: str, parts: HostName) -> None:
    assert split_host(host) == parts


def _pod(name: str, hostname: str, subdomain: str, phase: str) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {"hostname": hostname, "subdomain": subdomain},
        "status": {"phase": phase},
    }


def test_the_running_pod_of_a_host_name_wins_over_a_finished_one() -> None:
    pods = [_pod("j-0-old", "j-0", "j", "Failed"), _pod("j-0-new", "j-0", "j", "Running")]
    assert resolve_pod(pods, HostName("j-0", "j"))["metadata"]["name"] == "j-0-new"


def test_an_unknown_or_pending_host_is_an_error_that_names_it() -> None:
    with pytest.raises(LaunchError, match=r"no pod has the host name x\.j"):
        resolve_pod([], HostName("x", "j"))
    with pytest.raises(LaunchError, match="is Pending"):
        resolve_pod([_pod("p", "p", "", "Pending")], HostName("p"))


POD = """
apiVersion: v1
kind: Pod
metadata: {name: target, namespace: default}
spec:
  hostname: target-host
  subdomain: group
  containers:
  - name: main
    image: busybox
    command: [sleep, infinity]
    workingDir: /work/dir
    env: [{name: GREETING, value: hello-from-the-pod}]
"""


def _launch(plane: Plane, *args: str, wait_s: str = "10") -> subprocess.CompletedProcess[str]:
    agent = plane.home / "bin" / "kubehpc-launch"
    env = {**os.environ, "KUBEHPC_LAUNCH_WAIT_S": wait_s}
    return subprocess.run([str(agent), *args], capture_output=True, text=True, timeout=60, env=env)


def _wait_running(plane: Plane, name: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if plane.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}", check=False) == "Running":
            return
        time.sleep(0.1)
    raise AssertionError(f"pod {name} not Running")


def test_a_command_sees_the_pods_environment_and_directory_and_its_exit_code_returns(plane: Plane) -> None:
    plane.kubectl("apply", "-f", "-", stdin=POD)
    _wait_running(plane, "target")
    result = _launch(
        plane, "-o", "ConnectionAttempts=10", "target-host.group.default.svc", 'echo "$GREETING"; pwd; exit 4'
    )
    assert result.returncode == 4, result.stderr
    greeting, cwd = result.stdout.split()
    assert greeting == "hello-from-the-pod"
    assert cwd.endswith("/work/dir")


def test_a_host_that_is_no_pod_fails_like_ssh_with_the_reason(plane: Plane) -> None:
    result = _launch(plane, "nobody.group", "true", wait_s="0.5")
    assert result.returncode == 255
    assert "no pod has the host name nobody.group" in result.stderr


def test_the_command_dies_with_the_pod(plane: Plane, tmp_path: Path) -> None:
    plane.kubectl(
        "apply",
        "-f",
        "-",
        stdin=POD.replace("name: target,", "name: doomed,").replace("target-host", "doomed-host"),
    )
    _wait_running(plane, "doomed")
    agent = subprocess.Popen(
        [str(plane.home / "bin" / "kubehpc-launch"), "doomed-host", "sleep", "8123"],
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    plane.kubectl("delete", "pod", "doomed", "--wait=false")
    assert agent.wait(30) == 137
    assert "pod doomed ended" in (agent.stderr.read() if agent.stderr else "")


def test_killing_the_agents_parent_kills_the_command(plane: Plane) -> None:
    # mpirun killed: its launch agents get SIGTERM (parent-death signal) and end their commands.
    _wait_running(plane, "target")
    agent = plane.home / "bin" / "kubehpc-launch"
    parent = subprocess.Popen(["/bin/sh", "-c", f"{agent} target-host sleep 8124; :"])
    deadline = time.monotonic() + 10
    while not _sleepers("sleep 8124") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleepers("sleep 8124")
    parent.kill()
    parent.wait(10)
    deadline = time.monotonic() + 10
    while _sleepers("sleep 8124") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleepers("sleep 8124") == []


def _sleepers(cmd: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip() == cmd:
                    out.append(int(entry.name))
            except OSError:
                pass
    return out
