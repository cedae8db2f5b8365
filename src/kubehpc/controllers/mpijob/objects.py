"""The objects an MPIJob owns, built as the MPI Operator (v2beta1 controller) builds them.

Pure functions of the (defaulted) MPIJob: worker Pods ``<job>-worker-<i>``, the launcher Job
``<job>-launcher``, the headless Service ``<job>`` that gives both their DNS names, the
ConfigMap ``<job>-config`` (``hostfile`` and ``discover_hosts.sh``) and the SSH key Secret
``<job>-ssh``.

On the embedded cluster (``Embedded`` given) there is no sshd and no /etc/mpi: the launcher's
MPI reaches the workers through the launch agent (``OMPI_MCA_plm_rsh_agent``, Hydra's
bootstrap exec), finds the hostfile through its mount variable, and keeps its traffic on
loopback; a worker whose command is sshd (the operator's default) waits instead, since the
launch agent enters it directly. Those changes are marked on the objects.
"""

from __future__ import annotations

import base64
import copy
import os
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kubehpc.controllers.volcano.podgroups import quantity
from kubehpc.sched.podspec import pod_requests

Obj = dict[str, Any]

API_VERSION = "kubeflow.org/v2beta1"
KIND = "MPIJob"
LAUNCHER, WORKER = "Launcher", "Worker"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
OPERATOR_NAME = "mpi-operator"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
CONFIG_VOLUME = "mpi-job-config"
CONFIG_MOUNT = "/etc/mpi"
HOSTFILE = "hostfile"
DISCOVER_HOSTS = "discover_hosts.sh"
SSH_VOLUME = "ssh-auth"
ROOT_SSH_PATH = "/root/.ssh"
EMBEDDED_ANNOTATION = "kubehpc.io/embedded"
VOLCANO_SCHEDULER = "volcano"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
WAIT_FOREVER = ["sleep", "infinity"]


@dataclass(frozen=True)
class Embedded:
    """How MPI reaches pods on the embedded cluster."""

    launch_agent: str  # the command mpirun uses instead of ssh


# --- defaults (the operator's scheme defaults) -----------------------------------------------


def with_defaults(job: Obj) -> Obj:
    """A copy of ``job`` with the MPI Operator's defaults applied (``SetDefaults_MPIJob``)."""
    out = copy.deepcopy(job)
    if not isinstance(out.get("spec"), dict):
        out["spec"] = {}
    spec = out["spec"]
    spec.setdefault("slotsPerWorker", 1)
    spec.setdefault("sshAuthMountPath", ROOT_SSH_PATH)
    spec.setdefault("mpiImplementation", "OpenMPI")
    spec.setdefault("launcherCreationPolicy", "AtStartup")
    spec.setdefault("runLauncherAsWorker", False)
    if not isinstance(spec.get("runPolicy"), dict):
        spec["runPolicy"] = {}
    policy = spec["runPolicy"]
    policy.setdefault("cleanPodPolicy", "None")
    policy.setdefault("suspend", False)
    replicas = spec.setdefault("mpiReplicaSpecs", {})
    if LAUNCHER in replicas:
        replicas[LAUNCHER].setdefault("replicas", 1)
        replicas[LAUNCHER].setdefault("restartPolicy", "OnFailure")
    if WORKER in replicas:
        replicas[WORKER].setdefault("replicas", 0)
        replicas[WORKER].setdefault("restartPolicy", "Never")
    return out


def name(job: Obj) -> str:
    return str(job["metadata"]["name"])


def namespace(job: Obj) -> str:
    return str(job["metadata"].get("namespace") or "default")


def worker_replicas(job: Obj) -> int:
    worker = job["spec"]["mpiReplicaSpecs"].get(WORKER) or {}
    return int(worker.get("replicas") or 0)


def worker_name(job: Obj, index: int) -> str:
    return f"{name(job)}-worker-{index}"


def launcher_name(job: Obj) -> str:
    return f"{name(job)}-launcher"


def labels(job: Obj, role: str) -> dict[str, str]:
    return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: name(job), JOB_ROLE_LABEL: role}


def owner_reference(job: Obj) -> Obj:
    meta = job["metadata"]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _meta(job: Obj, object_name: str, extra: dict[str, str] | None = None) -> Obj:
    return {
        "name": object_name,
        "namespace": namespace(job),
        "labels": {"app": name(job), **(extra or {})},
        "ownerReferences": [owner_reference(job)],
    }


# --- Service, ConfigMap, Secret ------------------------------------------------------------------


def service(job: Obj) -> Obj:
    """The headless Service ``<job>``: ``<pod hostname>.<job>.<namespace>.svc`` for every pod."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(job, name(job)),
        "spec": {
            "clusterIP": "None",
            "selector": {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: name(job)},
            "publishNotReadyAddresses": True,
        },
    }


def host_name(job: Obj, pod_name: str) -> str:
    return f"{pod_name}.{name(job)}.{namespace(job)}.svc"


def hostfile(job: Obj) -> str:
    """``host slots=N`` lines for Open MPI, ``host:N`` for Intel MPI and MPICH."""
    spec = job["spec"]
    slots = int(spec.get("slotsPerWorker") or 1)
    hosts = [launcher_name(job)] if spec.get("runLauncherAsWorker") else []
    hosts += [worker_name(job, i) for i in range(worker_replicas(job))]
    openmpi = spec.get("mpiImplementation", "OpenMPI") == "OpenMPI"
    return "".join(
        f"{host_name(job, h)} slots={slots}\n" if openmpi else f"{host_name(job, h)}:{slots}\n" for h in hosts
    )


def discover_hosts(job: Obj, running_pods: list[str]) -> str:
    """The script Horovod's elastic mode runs: one line per running worker (sorted)."""
    lines = ["#!/bin/sh\n"]
    if job["spec"].get("runLauncherAsWorker"):
        lines.append(f"echo {host_name(job, launcher_name(job))}\n")
    lines += [f"echo {host_name(job, p)}\n" for p in sorted(running_pods)]
    return "".join(lines)


def config_map(job: Obj, running_workers: list[str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(job, f"{name(job)}-config"),
        "data": {HOSTFILE: hostfile(job), DISCOVER_HOSTS: discover_hosts(job, running_workers)},
    }


def ssh_secret(job: Obj) -> Obj:
    """An ECDSA P-521 key pair (the operator's choice) as a ``kubernetes.io/ssh-auth`` Secret."""
    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(job, f"{name(job)}-ssh"),
        "type": "kubernetes.io/ssh-auth",
        "data": {
            "ssh-privatekey": base64.b64encode(private).decode(),
            "ssh-publickey": base64.b64encode(public + b"\n").decode(),
        },
    }


# --- gang scheduling (the operator's Volcano PodGroup) ------------------------------------------


def gang_scheduled(job: Obj) -> bool:
    """Whether the job asks for a gang: a ``runPolicy.schedulingPolicy`` (the operator makes a
    PodGroup when it runs with ``--gang-scheduling=volcano``; here the policy itself says so)."""
    return bool((job["spec"].get("runPolicy") or {}).get("schedulingPolicy"))


def _template_spec(job: Obj, role: str) -> Obj:
    replica = job["spec"]["mpiReplicaSpecs"].get(role) or {}
    return dict((replica.get("template") or {}).get("spec") or {})


def _requests_or_limits(container: Obj) -> Obj:
    resources = container.get("resources") or {}
    return {**(resources.get("limits") or {}), **(resources.get("requests") or {})}


def _min_resources(job: Obj, min_member: int) -> dict[str, str]:
    """What the gang's first ``min_member`` pods request (``calPGMinResource``): the launcher,
    then as many workers as are left (the operator ranks workers below a launcher of the same
    priority; a container without requests counts its limits)."""
    totals: dict[str, int] = {}
    workers = min(worker_replicas(job), max(min_member - 1, 0))
    for role, count in ((LAUNCHER, 1), (WORKER, workers)):
        spec = _template_spec(job, role)
        if not count or not spec:
            continue
        containers = [
            {"resources": {"requests": _requests_or_limits(c)}} for c in spec.get("containers") or ()
        ]
        for resource, units in pod_requests({"containers": containers}).items():
            totals[resource] = totals.get(resource, 0) + units * count
    return {resource: quantity(resource, units) for resource, units in sorted(totals.items()) if units}


def pod_group(job: Obj) -> Obj:
    """``VolcanoCtrl.newPodGroup``: minMember is ``minAvailable``, else every worker and the
    launcher; the queue from the policy (else the job's queue annotation); the priority class
    from the policy, else the launcher's, else the workers' template; minResources from the
    policy, else what the first minMember pods request, so that Volcano's queue admits the
    gang only where all of it fits."""
    policy = (job["spec"].get("runPolicy") or {}).get("schedulingPolicy") or {}
    min_member = (
        int(policy["minAvailable"]) if policy.get("minAvailable") is not None else (worker_replicas(job) + 1)
    )
    spec: Obj = {"minMember": min_member}
    queue = policy.get("queue") or (job["metadata"].get("annotations") or {}).get(VOLCANO_QUEUE_ANNOTATION)
    if queue:
        spec["queue"] = queue
    priority = (
        policy.get("priorityClass")
        or _template_spec(job, LAUNCHER).get("priorityClassName")
        or _template_spec(job, WORKER).get("priorityClassName")
    )
    if priority:
        spec["priorityClassName"] = priority
    if policy.get("minResources"):
        spec["minResources"] = dict(policy["minResources"])
    elif min_member > 0:
        resources = _min_resources(job, min_member)
        if resources:
            spec["minResources"] = resources
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": _meta(job, name(job)),
        "spec": spec,
    }


def _gang_member(job: Obj, template: Obj) -> None:
    if gang_scheduled(job):
        template["spec"]["schedulerName"] = VOLCANO_SCHEDULER
        annotations = template["metadata"].setdefault("annotations", {})
        annotations[VOLCANO_GROUP_ANNOTATION] = name(job)


# --- pods ----------------------------------------------------------------------------------------


def _restart_policy(replica: Obj) -> str:
    policy = str(replica.get("restartPolicy") or "Never")
    return "Never" if policy == "ExitCode" else policy


def _setup_ssh(job: Obj, pod_spec: Obj) -> None:
    mode = 0o600 if job["spec"].get("sshAuthMountPath") == ROOT_SSH_PATH else None
    secret: Obj = {
        "secretName": f"{name(job)}-ssh",
        "items": [
            {"key": "ssh-privatekey", "path": "id_rsa"},
            {"key": "ssh-publickey", "path": "id_rsa.pub"},
            {"key": "ssh-publickey", "path": "authorized_keys"},
        ],
    }
    if mode is not None:
        secret["defaultMode"] = mode
    pod_spec.setdefault("volumes", []).append({"name": SSH_VOLUME, "secret": secret})
    pod_spec["containers"][0].setdefault("volumeMounts", []).append(
        {"name": SSH_VOLUME, "mountPath": job["spec"].get("sshAuthMountPath") or ROOT_SSH_PATH}
    )


def _template(job: Obj, role: str) -> Obj:
    replica = job["spec"]["mpiReplicaSpecs"][role]
    template = copy.deepcopy(replica.get("template") or {})
    template.setdefault("metadata", {})
    template.setdefault("spec", {})
    return template


def _runs_sshd(container: Obj) -> bool:
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    return bool(argv) and os.path.basename(str(argv[0])) == "sshd"


def worker_pod(job: Obj, index: int, embedded: Embedded | None = None) -> Obj:
    template = _template(job, WORKER)
    meta, spec = template["metadata"], template["spec"]
    _gang_member(job, template)
    pod_labels = {**(meta.get("labels") or {}), **labels(job, "worker"), REPLICA_INDEX_LABEL: str(index)}
    spec["hostname"] = worker_name(job, index)
    spec["subdomain"] = name(job)
    if spec.get("hostNetwork"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    spec["restartPolicy"] = _restart_policy(job["spec"]["mpiReplicaSpecs"][WORKER])
    container = spec["containers"][0]
    if not container.get("command") and not container.get("args"):
        container["command"] = ["/usr/sbin/sshd", "-De"]
    container["env"] = [*(container.get("env") or []), {"name": "K_MPI_JOB_ROLE", "value": "worker"}]
    _setup_ssh(job, spec)
    annotations = dict(meta.get("annotations") or {})
    if embedded is not None and _runs_sshd(container):
        container["command"], container["args"] = list(WAIT_FOREVER), []
        annotations[EMBEDDED_ANNOTATION] = "sshd replaced by a wait: the launch agent enters this pod"
    pod_meta: Obj = {
        "name": worker_name(job, index),
        "namespace": namespace(job),
        "labels": pod_labels,
        "ownerReferences": [owner_reference(job)],
    }
    if annotations:
        pod_meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def _env(pairs: list[tuple[str, str]]) -> list[Obj]:
    return [{"name": k, "value": v} for k, v in pairs]


def _mpi_env(job: Obj, embedded: Embedded | None) -> list[Obj]:
    impl = job["spec"].get("mpiImplementation", "OpenMPI")
    # The config volume is not at /etc/mpi on the embedded cluster: its mount variable says where.
    config = f"$({_mount_var(CONFIG_VOLUME)})" if embedded is not None else CONFIG_MOUNT
    hostfile_path = f"{config}/{HOSTFILE}"
    slots = str(job["spec"].get("slotsPerWorker") or 1)
    if impl == "OpenMPI":
        pairs = [
            ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
            ("OMPI_MCA_orte_default_hostfile", hostfile_path),
            ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
            ("OMPI_MCA_orte_set_default_slots", slots),
        ]
        if embedded is not None:
            pairs += [
                ("OMPI_MCA_plm_rsh_agent", embedded.launch_agent),
                # Every "node" is this machine: shared-memory transports would meet each
                # other's segments across pods, so ranks talk TCP over loopback.
                ("OMPI_MCA_btl", "self,tcp"),
                ("OMPI_MCA_oob_tcp_if_include", "lo"),
                ("OMPI_MCA_btl_tcp_if_include", "lo"),
                # Each daemon would map the machine's topology into a "hole" of its address
                # space for its ranks to share; the biggest hole can border the stack, and
                # about one mpirun in ten lost a daemon to a segfault there (in
                # hwloc_shmem_topology_write). The ranks read the topology themselves instead.
                ("OMPI_MCA_rtc_hwloc_vmhole", "none"),
                ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
            ]
    elif impl == "Intel":
        pairs = [
            ("I_MPI_HYDRA_HOST_FILE", hostfile_path),
            ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"),
            ("I_MPI_PERHOST", slots),
        ]
        if embedded is not None:
            pairs += [("I_MPI_HYDRA_BOOTSTRAP", "rsh"), ("I_MPI_HYDRA_BOOTSTRAP_EXEC", embedded.launch_agent)]
    else:
        pairs = [("HYDRA_HOST_FILE", hostfile_path), ("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10")]
        if embedded is not None:
            pairs += [("HYDRA_LAUNCHER", "rsh"), ("HYDRA_LAUNCHER_EXEC", embedded.launch_agent)]
    return _env(pairs)


def _mount_var(volume: str) -> str:
    # As kubehpc.node.volumes names a mount's variable (the node layer is not imported here).
    return "KUBEHPC_MOUNT_" + "".join(c if c.isalnum() else "_" for c in volume.upper())


def launcher_job(job: Obj, embedded: Embedded | None = None) -> Obj:
    template = _template(job, LAUNCHER)
    meta, spec = template["metadata"], template["spec"]
    meta["labels"] = {**(meta.get("labels") or {}), **labels(job, "launcher")}
    _gang_member(job, template)
    spec["hostname"] = launcher_name(job)
    spec["subdomain"] = name(job)
    if spec.get("hostNetwork"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    container = spec["containers"][0]
    container["env"] = [
        *(container.get("env") or []),
        {"name": "K_MPI_JOB_ROLE", "value": "launcher"},
        *_mpi_env(job, embedded),
        # The launcher must not take the GPUs meant for the workers.
        *(
            []
            if job["spec"].get("runLauncherAsWorker")
            else _env([("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", "")])
        ),
    ]
    _setup_ssh(job, spec)
    spec["restartPolicy"] = _restart_policy(job["spec"]["mpiReplicaSpecs"][LAUNCHER])
    spec.setdefault("volumes", []).append(
        {
            "name": CONFIG_VOLUME,
            "configMap": {
                "name": f"{name(job)}-config",
                "items": [
                    {"key": HOSTFILE, "path": HOSTFILE, "mode": 0o444},
                    {"key": DISCOVER_HOSTS, "path": DISCOVER_HOSTS, "mode": 0o555},
                ],
            },
        }
    )
    container.setdefault("volumeMounts", []).append({"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT})
    policy = job["spec"].get("runPolicy") or {}
    job_spec: Obj = {"template": template}
    for src, dst in (
        ("ttlSecondsAfterFinished", "ttlSecondsAfterFinished"),
        ("activeDeadlineSeconds", "activeDeadlineSeconds"),
        ("backoffLimit", "backoffLimit"),
    ):
        if policy.get(src) is not None:
            job_spec[dst] = policy[src]
    if policy.get("suspend"):
        job_spec["suspend"] = True
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(job, launcher_name(job)),
        "spec": job_spec,
    }


def launcher_argv(job: Obj) -> list[str]:
    container = (job["spec"]["mpiReplicaSpecs"][LAUNCHER].get("template") or {}).get("spec", {}).get(
        "containers"
    ) or [{}]
    return [str(a) for a in [*(container[0].get("command") or []), *(container[0].get("args") or [])]]
