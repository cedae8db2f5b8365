"""The Job plugins Volcano ships that matter for HPC jobs, as the objects they add and what
they change in every pod:

* ``env``: ``VC_TASK_INDEX`` (and the older ``VK_TASK_INDEX``) = the pod's index in its task;
* ``svc``: a headless Service named after the Job, a ConfigMap ``<job>-svc`` with one
  ``<task>.host`` file per task (every pod's ``<hostname>.<job>``, one a line) plus
  ``VC_<TASK>_HOSTS`` (comma-separated) and ``VC_<TASK>_NUM``, mounted at /etc/volcano and
  exported into every container's environment; pods get ``hostname``/``subdomain``;
* ``ssh``: one RSA key pair per Job in a Secret ``<job>-ssh`` (``id_rsa``, ``id_rsa.pub``,
  ``authorized_keys``, ``config`` naming every pod), mounted at /root/.ssh in every container,
  so the Job's pods can ssh into each other (mpirun's way of starting ranks).
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kubehpc.controllers.volcano import constants as c
from kubehpc.controllers.volcano.view import JobView, Task

Obj = dict[str, Any]
SSH_KEY_BITS = 2048  # Volcano uses 1024; current OpenSSH refuses RSA keys that short.


def _env_key(task: str) -> str:
    return task.replace("-", "_").upper()


def _owner(job: Obj) -> Obj:
    meta = job["metadata"]
    return {
        "apiVersion": c.JOB_API_VERSION,
        "kind": c.JOB_KIND,
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def hosts(view: JobView, task: Task) -> list[str]:
    """``<hostname>.<subdomain>`` of every pod of ``task`` (one entry when the template fixes
    the hostname: every pod then has the same one)."""
    spec = task.template.get("spec") or {}
    hostname, subdomain = spec.get("hostname"), spec.get("subdomain") or view.name
    if hostname:
        return [f"{hostname}.{subdomain}"]
    return [f"{task.pod_name(view.name, i)}.{subdomain}" for i in range(task.replicas)]


def svc_data(view: JobView) -> dict[str, str]:
    data: dict[str, str] = {}
    for task in view.tasks:
        names = hosts(view, task)
        data[f"{task.name.replace('-', '_')}.host"] = "\n".join(names)
        data[f"VC_{_env_key(task.name)}_HOSTS"] = ",".join(names)
        data[f"VC_{_env_key(task.name)}_NUM"] = str(len(names))
    return data


def svc_name(view: JobView) -> str:
    return f"{view.name}-svc"


def ssh_name(view: JobView) -> str:
    return f"{view.name}-ssh"


def ssh_config(view: JobView) -> str:
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in view.tasks:
        for fqdn in hosts(view, task):
            host = fqdn.split(".", 1)[0]
            lines += [f"Host {host}", f"  HostName {fqdn}"]
    return "\n".join(lines) + "\n"


def ssh_key_pair() -> tuple[bytes, bytes]:
    """A fresh RSA key pair: (PEM private key, OpenSSH public key line)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=SSH_KEY_BITS)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def job_objects(view: JobView, job: Obj) -> list[Obj]:
    """What the Job's plugins create once, beside its pods (all owned by the Job)."""
    out: list[Obj] = []
    owner = [_owner(job)]
    labels = {c.JOB_NAME_KEY: view.name, c.JOB_NAMESPACE_KEY: view.namespace}
    if "svc" in view.plugins:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": svc_name(view), "namespace": view.namespace, "ownerReferences": owner},
                "data": svc_data(view),
            }
        )
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": view.name, "namespace": view.namespace, "ownerReferences": owner},
                "spec": {
                    "clusterIP": "None",
                    "selector": labels,
                    "publishNotReadyAddresses": "--publish-not-ready-addresses" in view.plugins["svc"]
                    or "--publish-not-ready-addresses=true" in view.plugins["svc"],
                },
            }
        )
    if "ssh" in view.plugins:
        private, public = ssh_key_pair()
        data = {
            c.SSH_PRIVATE_KEY: private,
            c.SSH_PUBLIC_KEY: public,
            c.SSH_CONFIG: ssh_config(view).encode(),
        }
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": ssh_name(view), "namespace": view.namespace, "ownerReferences": owner},
                "type": "Opaque",
                "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
            }
        )
    return out


def _containers(spec: Obj, init: bool = True) -> list[Obj]:
    out: list[Obj] = list(spec.get("containers") or [])
    if init:
        out += list(spec.get("initContainers") or [])
    return out


def apply_to_pod(view: JobView, task: Task, index: int, pod: Obj) -> None:
    """Change ``pod`` (built from the task's template) as the Job's plugins do."""
    spec = pod["spec"]
    if "env" in view.plugins:
        for ct in _containers(spec):
            env = ct.setdefault("env", [])
            env.append({"name": c.ENV_TASK_INDEX, "value": str(index)})
            env.append({"name": c.ENV_TASK_INDEX_LEGACY, "value": str(index)})
    if "svc" in view.plugins or "ssh" in view.plugins:
        spec.setdefault("hostname", pod["metadata"]["name"])
        spec.setdefault("subdomain", view.name)
    if "svc" in view.plugins:
        name = svc_name(view)
        spec.setdefault("volumes", []).append({"name": name, "configMap": {"name": name}})
        env_names = [f"VC_{_env_key(t.name)}_{what}" for t in view.tasks for what in ("HOSTS", "NUM")]
        for ct in _containers(spec):
            ct.setdefault("env", []).extend(
                {"name": n, "valueFrom": {"configMapKeyRef": {"name": name, "key": n}}} for n in env_names
            )
            ct.setdefault("volumeMounts", []).append({"name": name, "mountPath": c.SVC_MOUNT_PATH})
    if "ssh" in view.plugins:
        name = ssh_name(view)
        items = [
            {"key": c.SSH_PRIVATE_KEY, "path": f"{c.SSH_SUBPATH}/{c.SSH_PRIVATE_KEY}"},
            {"key": c.SSH_PUBLIC_KEY, "path": f"{c.SSH_SUBPATH}/{c.SSH_PUBLIC_KEY}"},
            {"key": c.SSH_PUBLIC_KEY, "path": f"{c.SSH_SUBPATH}/{c.SSH_AUTHORIZED_KEYS}"},
            {"key": c.SSH_CONFIG, "path": f"{c.SSH_SUBPATH}/{c.SSH_CONFIG}"},
        ]
        spec.setdefault("volumes", []).append(
            {"name": name, "secret": {"secretName": name, "items": items, "defaultMode": 0o600}}
        )
        for ct in _containers(spec, init=False):
            ct.setdefault("volumeMounts", []).append(
                {"name": name, "mountPath": c.SSH_MOUNT_PATH, "subPath": c.SSH_SUBPATH}
            )


def build_pod(view: JobView, job: Obj, task: Task, index: int, version: int, retry_count: int) -> Obj:
    """Pod ``index`` of ``task``, named and labelled as Volcano's job controller makes it."""
    template = copy.deepcopy(task.template)
    tmeta = template.get("metadata") or {}
    name = task.pod_name(view.name, index)
    spec: Obj = template.get("spec") or {}
    if not spec.get("schedulerName"):
        spec["schedulerName"] = view.scheduler_name
    if view.priority_class_name and not spec.get("priorityClassName"):
        spec["priorityClassName"] = view.priority_class_name
    annotations = dict(tmeta.get("annotations") or {})
    annotations.update(
        {
            c.TASK_SPEC_KEY: task.name,
            c.GROUP_NAME_ANNOTATION: view.podgroup_name,
            c.JOB_NAME_KEY: view.name,
            c.QUEUE_NAME_KEY: view.queue,
            c.JOB_VERSION_KEY: str(version),
            c.TASK_INDEX_KEY: str(index),
            c.JOB_RETRY_COUNT_KEY: str(retry_count),
        }
    )
    labels = dict(tmeta.get("labels") or {})
    labels.update(
        {
            c.JOB_NAME_KEY: view.name,
            c.JOB_NAMESPACE_KEY: view.namespace,
            c.QUEUE_NAME_KEY: view.queue,
            c.TASK_SPEC_KEY: task.name,
            c.TASK_INDEX_KEY: str(index),
        }
    )
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": view.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [_owner(job)],
        },
        "spec": spec,
    }
    for volume in view.volumes:
        claim = str(volume.get("volumeClaimName") or "")
        if not claim:
            continue
        volumes = spec.setdefault("volumes", [])
        if not any(v.get("name") == claim for v in volumes):
            volumes.append({"name": claim, "persistentVolumeClaim": {"claimName": claim}})
        for ct in _containers(spec, init=False):
            ct.setdefault("volumeMounts", []).append({"name": claim, "mountPath": volume["mountPath"]})
    apply_to_pod(view, task, index, pod)
    return pod
