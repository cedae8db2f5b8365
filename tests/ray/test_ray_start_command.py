"""The Ray container command, in the shape KubeRay generates it."""

from __future__ import annotations

from kubehpc.controllers.ray.ports import node_ports
from kubehpc.controllers.ray.startparams import ray_resources_of, ray_start_command

CONTAINER = {"resources": {"limits": {"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": 1}}}


def test_head_command_is_kuberays_ulimit_then_ray_start_head_block() -> None:
    cmd = ray_start_command(head=True, start_params={}, container=CONTAINER)
    assert cmd.startswith("ulimit -n 65536; ray start --head --block ")
    assert "--dashboard-host=0.0.0.0" in cmd
    # The container's limits are its Ray resources; a fractional CPU limit rounds up.
    assert "--num-cpus=2" in cmd and f"--memory={2 * 1024**3}" in cmd and "--num-gpus=1" in cmd


def test_worker_joins_the_head_address() -> None:
    cmd = ray_start_command(head=False, start_params={}, container=CONTAINER, head_address="svc:6379")
    assert "ray start --block --address=svc:6379" in cmd and "--head" not in cmd


def test_ray_start_params_win_over_derived_values() -> None:
    cmd = ray_start_command(
        head=True, start_params={"num-cpus": "0", "dashboard-host": "127.0.0.1"}, container=CONTAINER
    )
    assert "--num-cpus=0" in cmd and "--num-cpus=2" not in cmd
    assert "--dashboard-host=127.0.0.1" in cmd


def test_requests_are_used_when_there_are_no_limits() -> None:
    cmd = ray_start_command(head=True, start_params={}, container={"resources": {"requests": {"cpu": "1"}}})
    assert "--num-cpus=1" in cmd


def test_host_process_nodes_get_their_own_ports_and_temp_dir() -> None:
    head, worker = node_ports(head=True, serve=True), node_ports(head=False)
    numbers = [p for p in (*vars(head).values(), *vars(worker).values()) if isinstance(p, int) and p]
    assert len(numbers) == len(set(numbers)) == 16
    cmd = ray_start_command(head=True, start_params={}, container=CONTAINER, ports=head, temp_dir="/tmp/x/h")
    for flag, port in (
        ("port", head.gcs),
        ("node-manager-port", head.node_manager),
        ("dashboard-port", head.dashboard),
    ):
        assert f"--{flag}={port}" in cmd
    assert "--temp-dir=/tmp/x/h" in cmd and "--disable-usage-stats" in cmd


def test_ray_resources_of_a_group_include_custom_resources() -> None:
    res = ray_resources_of({"resources": '{"burst": 1}'}, CONTAINER)
    assert res == {"CPU": 2.0, "GPU": 1.0, "memory": float(2 * 1024**3), "burst": 1.0}
