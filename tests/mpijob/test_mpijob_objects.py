"""What the MPI Operator would create for an MPIJob, built as pure functions."""

from __future__ import annotations

import pytest
from mpijobkit import manifest

from kubehpc.controllers.mpijob import objects as O


def job(**spec: object) -> dict:
    obj = O.with_defaults(manifest(**spec))
    obj["metadata"]["uid"] = "u-1"
    return obj


@pytest.mark.parametrize(
    ("implementation", "line"),
    [
        ("OpenMPI", "pi-worker-0.pi.default.svc slots=2"),
        ("Intel", "pi-worker-0.pi.default.svc:2"),
        ("MPICH", "pi-worker-0.pi.default.svc:2"),
    ],
)
def test_hostfile_format_follows_the_implementation(implementation: str, line: str) -> None:
    assert O.hostfile(job(mpiImplementation=implementation)).splitlines()[0] == line


def test_run_launcher_as_worker_puts_the_launcher_first_in_the_hostfile() -> None:
    hosts = O.hostfile(job(runLauncherAsWorker=True)).splitlines()
    assert hosts[0] == "pi-launcher.pi.default.svc slots=2"
    assert len(hosts) == 3


def test_worker_pods_are_named_indexed_and_addressable_through_the_service() -> None:
    pod = O.worker_pod(job(), 1)
    assert pod["metadata"]["name"] == "pi-worker-1"
    assert pod["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("pi-worker-1", "pi")
    assert O.service(job())["spec"]["selector"] == {
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": "pi",
    }


def test_a_worker_without_a_command_runs_sshd_as_the_operator_does() -> None:
    assert O.worker_pod(job(), 0)["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]


def test_on_the_embedded_cluster_a_worker_waits_instead_of_running_sshd() -> None:
    pod = O.worker_pod(job(), 0, O.Embedded("/x/kubehpc-launch"))
    assert pod["spec"]["containers"][0]["command"] == ["sleep", "infinity"]
    assert O.EMBEDDED_ANNOTATION in pod["metadata"]["annotations"]


def test_ssh_keys_are_mounted_where_ssh_auth_mount_path_says() -> None:
    pod = O.worker_pod(job(sshAuthMountPath="/home/mpiuser/.ssh"), 0)
    mounts = pod["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"} in mounts


def _env(obj: dict) -> dict[str, str]:
    container = obj["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container["env"]}


def test_open_mpi_launcher_env_as_the_operator_sets_it() -> None:
    env = _env(O.launcher_job(job()))
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert env["OMPI_MCA_orte_set_default_slots"] == "2"
    assert env["K_MPI_JOB_ROLE"] == "launcher"
    assert "OMPI_MCA_plm_rsh_agent" not in env  # ssh on a real cluster


def test_embedded_launcher_reaches_workers_through_the_launch_agent_over_loopback() -> None:
    env = _env(O.launcher_job(job(), O.Embedded("/x/kubehpc-launch")))
    assert env["OMPI_MCA_plm_rsh_agent"] == "/x/kubehpc-launch"
    assert env["OMPI_MCA_orte_default_hostfile"] == "$(KUBEHPC_MOUNT_MPI_JOB_CONFIG)/hostfile"
    assert env["OMPI_MCA_btl_tcp_if_include"] == env["OMPI_MCA_oob_tcp_if_include"] == "lo"


def test_embedded_open_mpi_daemons_do_not_map_the_topology_next_to_their_stack() -> None:
    # orted's default ("biggest" hole) segfaulted about one run in ten on this machine.
    env = _env(O.launcher_job(job(), O.Embedded("/x/kubehpc-launch")))
    assert env["OMPI_MCA_rtc_hwloc_vmhole"] == "none"


@pytest.mark.parametrize(
    ("implementation", "hostfile_var", "agent_var"),
    [
        ("Intel", "I_MPI_HYDRA_HOST_FILE", "I_MPI_HYDRA_BOOTSTRAP_EXEC"),
        ("MPICH", "HYDRA_HOST_FILE", "HYDRA_LAUNCHER_EXEC"),
    ],
)
def test_hydra_launchers_get_their_hostfile_and_bootstrap(
    implementation: str, hostfile_var: str, agent_var: str
) -> None:
    env = _env(O.launcher_job(job(mpiImplementation=implementation), O.Embedded("/x/kubehpc-launch")))
    assert env[hostfile_var].endswith("/hostfile")
    assert env[agent_var] == "/x/kubehpc-launch"


def test_launcher_mounts_the_config_and_hides_gpus_unless_it_is_a_worker() -> None:
    launcher = O.launcher_job(job())
    spec = launcher["spec"]["template"]["spec"]
    assert {"name": "mpi-job-config", "mountPath": "/etc/mpi"} in spec["containers"][0]["volumeMounts"]
    assert "NVIDIA_VISIBLE_DEVICES" in _env(launcher)
    assert "NVIDIA_VISIBLE_DEVICES" not in _env(O.launcher_job(job(runLauncherAsWorker=True)))


def test_exit_code_restart_policy_becomes_never_on_pods() -> None:
    obj = job()
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    assert O.worker_pod(obj, 0)["spec"]["restartPolicy"] == "Never"
    assert O.launcher_job(obj)["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
