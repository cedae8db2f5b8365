"""The env, svc and ssh plugins: what they add to each pod and beside the pods."""

from __future__ import annotations

import base64
from typing import Any

from cryptography.hazmat.primitives import serialization
from volcanokit import Volcano, task, vcjob

PLUGINS: dict[str, list[str]] = {"env": [], "svc": [], "ssh": []}


def mpi_job(v: Volcano, **spec: object) -> None:
    v.create(vcjob("mpi", task("mpimaster", 1), task("mpi-worker", 2), plugins=PLUGINS, **spec))
    v.sync("mpi")


def env_of(pod: dict[str, Any], container: int = 0) -> dict[str, object]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][container]["env"]
    }


def test_env_gives_each_pod_its_index_in_its_task() -> None:
    v = Volcano()
    mpi_job(v)
    for name, index in (("mpi-mpimaster-0", "0"), ("mpi-mpi-worker-0", "0"), ("mpi-mpi-worker-1", "1")):
        env = env_of(v.pod(name))
        assert env["VC_TASK_INDEX"] == index
        assert env["VK_TASK_INDEX"] == index


def test_svc_makes_a_headless_service_and_every_pod_a_stable_hostname() -> None:
    v = Volcano()
    mpi_job(v)
    svc = v.store.get("v1", "Service", "mpi", "default")
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {"volcano.sh/job-name": "mpi", "volcano.sh/job-namespace": "default"}
    pod = v.pod("mpi-mpi-worker-1")
    assert pod["spec"]["hostname"] == "mpi-mpi-worker-1"
    assert pod["spec"]["subdomain"] == "mpi"


def test_svc_writes_every_tasks_hosts_as_files_and_environment() -> None:
    v = Volcano()
    mpi_job(v)
    data = v.store.get("v1", "ConfigMap", "mpi-svc", "default")["data"]
    assert data["mpi_worker.host"] == "mpi-mpi-worker-0.mpi\nmpi-mpi-worker-1.mpi"
    assert data["mpimaster.host"] == "mpi-mpimaster-0.mpi"
    assert data["VC_MPI_WORKER_HOSTS"] == "mpi-mpi-worker-0.mpi,mpi-mpi-worker-1.mpi"
    assert data["VC_MPI_WORKER_NUM"] == "2"
    pod = v.pod("mpi-mpimaster-0")
    env = env_of(pod)
    assert env["VC_MPI_WORKER_HOSTS"] == {
        "configMapKeyRef": {"name": "mpi-svc", "key": "VC_MPI_WORKER_HOSTS"}
    }
    assert env["VC_MPIMASTER_NUM"] == {"configMapKeyRef": {"name": "mpi-svc", "key": "VC_MPIMASTER_NUM"}}
    mounts = pod["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "mpi-svc", "mountPath": "/etc/volcano"} in mounts
    volume = next(vol for vol in pod["spec"]["volumes"] if vol["name"] == "mpi-svc")
    assert volume["configMap"]["name"] == "mpi-svc"


def test_ssh_shares_one_key_pair_among_the_jobs_pods() -> None:
    v = Volcano()
    mpi_job(v)
    secret = v.store.get("v1", "Secret", "mpi-ssh", "default")
    data = {k: base64.b64decode(val) for k, val in secret["data"].items()}
    private = serialization.load_pem_private_key(data["id_rsa"], password=None)
    public = serialization.load_ssh_public_key(data["id_rsa.pub"])
    assert private.public_key().public_numbers() == public.public_numbers()  # type: ignore[union-attr]
    config = data["config"].decode()
    assert config.startswith("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n")
    assert "Host mpi-mpi-worker-1\n  HostName mpi-mpi-worker-1.mpi\n" in config
    for name in v.pods("mpi"):
        pod = v.pod(name)
        volume = next(vol for vol in pod["spec"]["volumes"] if vol["name"] == "mpi-ssh")
        assert volume["secret"]["secretName"] == "mpi-ssh"
        assert {i["path"] for i in volume["secret"]["items"]} == {
            ".ssh/id_rsa",
            ".ssh/id_rsa.pub",
            ".ssh/authorized_keys",
            ".ssh/config",
        }
        assert {"name": "mpi-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"} in pod["spec"]["containers"][
            0
        ]["volumeMounts"]


def test_plugin_objects_are_made_once_and_survive_a_restart_of_the_job() -> None:
    v = Volcano()
    mpi_job(v, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    key = v.store.get("v1", "Secret", "mpi-ssh", "default")["data"]["id_rsa"]
    v.run_all("mpi")
    v.sync("mpi")
    v.finish("mpi-mpimaster-0", exit_code=1)
    v.sync("mpi")
    v.reap("mpi")
    v.sync("mpi")
    assert v.job("mpi")["status"]["retryCount"] == 1
    assert v.store.get("v1", "Secret", "mpi-ssh", "default")["data"]["id_rsa"] == key
    assert v.job("mpi")["status"]["controlledResources"] == {
        "plugin-env": "env",
        "plugin-svc": "svc",
        "plugin-ssh": "ssh",
    }


def test_plugin_objects_belong_to_the_job() -> None:
    v = Volcano()
    mpi_job(v)
    uid = v.job("mpi")["metadata"]["uid"]
    for kind, name in (("Service", "mpi"), ("ConfigMap", "mpi-svc"), ("Secret", "mpi-ssh")):
        refs = v.store.get("v1", kind, name, "default")["metadata"]["ownerReferences"]
        assert [(r["kind"], r["uid"], r["controller"]) for r in refs] == [("Job", uid, True)]
