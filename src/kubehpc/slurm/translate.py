"""A :class:`JobRequest` as Kubernetes objects: a ConfigMap with the script, a batch/v1 Job, and
for multi-node jobs a headless Service.

Shape of the Job (always ``completionMode: Indexed``, ``restartPolicy: Never``, no retries):

* one node: ``completions = parallelism = 1``; pod hostname ``slurm-<id>-0``;
* ``--array``: one completion per task, ``parallelism`` = the ``%`` throttle (else all),
  ``backoffLimitPerIndex: 0`` so one failed task does not stop the others; the runner maps the
  completion index to SLURM_ARRAY_TASK_ID and SLURM_JOB_ID = array id + index;
* ``-N n`` (n > 1): n pods (``completions = parallelism = n``, a gang for Kueue) whose
  hostnames ``slurm-<id>-0..n-1`` resolve through the headless Service ``slurm-<id>``;
  SLURM_JOB_NODELIST is those names in hostlist syntax. Pod 0 runs the script; the others
  wait for ``srun``; ``successPolicy`` (index 0 succeeded) completes the Job and stops them.

Held jobs (``--hold``, ``--dependency``, a future ``--begin``) are created with
``spec.suspend: true``, the reason in the ``slurm.kubehpc.io/hold`` annotation, and *without*
the ``kueue.x-k8s.io/queue-name`` label, so Kueue does not admit them: the queue name waits in
the ``slurm.kubehpc.io/queue-name`` annotation. Releasing a job (``scontrol release``, or the
dependency controller once :mod:`kubehpc.slurm.deps` says the dependency is satisfied) applies
:func:`release_patch`: the hold annotation goes, the label comes back, and ``suspend`` turns
false where no Kueue runs (the embedded cluster today; with Kueue, Kueue unsuspends on admission).

Every value that came from the user reaches the pod as data: environment values and arguments
have ``$`` doubled, so Kubernetes' ``$(VAR)`` expansion leaves them as written, and the runner
(:mod:`kubehpc.slurm.runner`) never evaluates them.
"""

from __future__ import annotations

import json
import re
from datetime import UTC
from typing import Any

from kubehpc.slurm import hostlist
from kubehpc.slurm.mapping import FALLBACK_PARTITION, SlurmMapping
from kubehpc.slurm.request import JobRequest
from kubehpc.slurm.runner import RUNNER, RUNNER_KEY, SCRIPT_KEY, array_runs, expand_pattern
from kubehpc.slurm.specs import mb_quantity

Obj = dict[str, Any]

GROUP = "slurm.kubehpc.io"
LABEL_JOB_ID = f"{GROUP}/job-id"
LABEL_USER = f"{GROUP}/user"
LABEL_PARTITION = f"{GROUP}/partition"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
ANN_QUEUE = f"{GROUP}/queue-name"
ANN_HOLD = f"{GROUP}/hold"
ANN_JOB_NAME = f"{GROUP}/job-name"
ANN_USER = f"{GROUP}/user"
ANN_PARTITION = f"{GROUP}/partition"
ANN_QOS = f"{GROUP}/qos"
ANN_ACCOUNT = f"{GROUP}/account"
ANN_TIME_LIMIT = f"{GROUP}/time-limit-seconds"
ANN_NODES = f"{GROUP}/nodes"
ANN_ALLOCATED_NODES = f"{GROUP}/allocated-nodes"
"""The nodes a multi-node job was given, recorded once all its pods are bound (sacct keeps
showing them after the Job has stopped its other pods)."""
ANN_NTASKS = f"{GROUP}/ntasks"
ANN_CPUS = f"{GROUP}/cpus-per-node"
ANN_GPUS = f"{GROUP}/gpus-per-node"
ANN_OUTPUT = f"{GROUP}/output"
ANN_ERROR = f"{GROUP}/error"
ANN_WORK_DIR = f"{GROUP}/work-dir"
ANN_SUBMIT_DIR = f"{GROUP}/submit-dir"
ANN_DEPENDENCY = f"{GROUP}/dependency"
ANN_BEGIN = f"{GROUP}/begin"
ANN_NICE = f"{GROUP}/nice"
ANN_ARRAY = f"{GROUP}/array"
ANN_ARRAY_THROTTLE = f"{GROUP}/array-throttle"
ANN_CONSTRAINT = f"{GROUP}/constraint"
ANN_EXCLUSIVE = f"{GROUP}/exclusive"
ANN_COMMENT = f"{GROUP}/comment"
ANN_RECORDED = f"{GROUP}/unsupported-options"
ANN_SCRIPT_NAME = f"{GROUP}/script"
ANN_NODELIST = f"{GROUP}/batch-nodelist"
ANN_RUNTIME_ESTIMATE = "kubehpc.io/runtime-estimate-seconds"
"""The runtime estimate backfill and start-time estimates use (Slurm: the time limit)."""

CONTAINER = "batch"
SCRIPT_VOLUME = "slurm-script"
SCRIPT_MOUNT = "/kubehpc/slurm"
HOSTNAME_LABEL = "kubernetes.io/hostname"
HOLD_USER, HOLD_DEPENDENCY, HOLD_BEGIN = "JobHeldUser", "Dependency", "BeginTime"
# The runner is started by a fixed command; the script's arguments follow as "$@".
BOOT = 'exec /bin/bash "${KUBEHPC_MOUNT_SLURM_SCRIPT:-/kubehpc/slurm}/run" "$@"'


def object_name(job_id: int) -> str:
    return f"slurm-{job_id}"


def literal(value: str) -> str:
    """``value`` as Kubernetes passes it through ``$(VAR)`` expansion unchanged."""
    return value.replace("$", "$$")


def label_safe(value: str) -> str:
    """A label value standing for ``value`` (invalid characters become ``_``, max 63)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "_", value)[:63]
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", cleaned)
    return re.sub(r"[^A-Za-z0-9]+$", "", cleaned)


def tasks_per_node_text(ntasks: int, nodes: int) -> str:
    """SLURM_TASKS_PER_NODE: ``2(x3)``, or ``3,2`` when tasks do not divide evenly."""
    counts = [ntasks // nodes + (1 if i < ntasks % nodes else 0) for i in range(nodes)]
    return _grouped(counts)


def _grouped(counts: list[int]) -> str:
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        parts.append(f"{counts[i]}(x{j - i})" if j - i > 1 else str(counts[i]))
        i = j
    return ",".join(parts)


def hostnames(req: JobRequest, job_id: int) -> list[str]:
    """The pods' host names: the job's node names inside the job."""
    return [f"{object_name(job_id)}-{i}" for i in range(req.nodes)]


def hold_reasons(req: JobRequest, now_iso: str | None = None, begin_iso: str | None = None) -> list[str]:
    reasons = []
    if req.hold:
        reasons.append(HOLD_USER)
    if req.dependency is not None:
        reasons.append(HOLD_DEPENDENCY)
    if begin_iso is not None and (now_iso is None or begin_iso > now_iso):
        reasons.append(HOLD_BEGIN)
    return reasons


def slurm_environment(req: JobRequest, job_id: int, mapping: SlurmMapping) -> dict[str, str]:
    """The SLURM_* variables every pod of the job starts with (the runner adds per-pod ones)."""
    env = {
        "SLURM_JOB_ID": str(job_id),
        "SLURM_JOBID": str(job_id),
        "SLURM_JOB_NAME": req.name,
        "SLURM_JOB_USER": req.user,
        "SLURM_CLUSTER_NAME": mapping.cluster_name,
        "SLURM_SUBMIT_DIR": req.submit_dir,
        "SLURM_SUBMIT_HOST": req.submit_host,
        "SLURM_JOB_NUM_NODES": str(req.nodes),
        "SLURM_NNODES": str(req.nodes),
        "SLURM_TASKS_PER_NODE": tasks_per_node_text(req.ntasks, req.nodes),
        "SLURM_CPUS_ON_NODE": str(req.cpus_per_node),
        "SLURM_JOB_CPUS_PER_NODE": _grouped([req.cpus_per_node] * req.nodes),
        "SLURM_GTIDS": "0",
        "SLURM_NODE_ALIASES": "(null)",
    }
    if "ntasks" in req.given or "ntasks-per-node" in req.given:
        # As sbatch: only a job that asked for a task count gets one in its environment.
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(req.ntasks)
    # Slurm always says which partition the job runs in: without -p, the default one.
    env["SLURM_JOB_PARTITION"] = req.partition or mapping.default_partition or FALLBACK_PARTITION
    if req.account:
        env["SLURM_JOB_ACCOUNT"] = req.account
    if req.qos:
        env["SLURM_JOB_QOS"] = req.qos
    if "ntasks-per-node" in req.given:
        env["SLURM_NTASKS_PER_NODE"] = str(req.tasks_per_node)
    if "cpus-per-task" in req.given:
        env["SLURM_CPUS_PER_TASK"] = str(req.cpus_per_task)
    if req.mem_per_node_mb is not None:
        env["SLURM_MEM_PER_NODE"] = str(req.mem_per_node_mb)
    if req.mem_per_cpu_mb is not None:
        env["SLURM_MEM_PER_CPU"] = str(req.mem_per_cpu_mb)
    if req.mem_per_gpu_mb is not None:
        env["SLURM_MEM_PER_GPU"] = str(req.mem_per_gpu_mb)
    if req.gpus_per_node:
        env["SLURM_GPUS_ON_NODE"] = str(req.gpus_per_node)
        if "gpus-per-node" in req.given:
            env["SLURM_GPUS_PER_NODE"] = req.given["gpus-per-node"]
    if req.gpus_total is not None:
        env["SLURM_GPUS"] = req.given["gpus"]
    if req.gpus_per_task is not None:
        env["SLURM_GPUS_PER_TASK"] = req.given["gpus-per-task"]
    if "export" in req.given:
        env["SLURM_EXPORT_ENV"] = req.given["export"]
    if "reservation" in req.given:
        env["SLURM_JOB_RESERVATION"] = req.given["reservation"]
    if req.array is None:
        nodelist = hostlist.compress(hostnames(req, job_id))
        env["SLURM_JOB_NODELIST"] = nodelist
        env["SLURM_NODELIST"] = nodelist
    else:
        ids = req.array.task_ids
        env["SLURM_ARRAY_JOB_ID"] = str(job_id)
        env["SLURM_ARRAY_TASK_COUNT"] = str(len(ids))
        env["SLURM_ARRAY_TASK_MIN"] = str(ids[0])
        env["SLURM_ARRAY_TASK_MAX"] = str(ids[-1])
        env["SLURM_ARRAY_TASK_STEP"] = str(req.array.step)
    return env


def _resources(req: JobRequest, mapping: SlurmMapping) -> Obj:
    requests: dict[str, str] = {"cpu": str(req.cpus_per_node)}
    mem_mb = req.mem_per_node_mb
    if req.mem_per_cpu_mb is not None:
        mem_mb = req.mem_per_cpu_mb * req.cpus_per_node
    if req.mem_per_gpu_mb is not None:
        mem_mb = req.mem_per_gpu_mb * req.gpus_per_node
    if mem_mb:
        requests["memory"] = mb_quantity(mem_mb)
    if req.tmp_mb:
        requests["ephemeral-storage"] = mb_quantity(req.tmp_mb)
    # Slurm confines a job to the CPUs and memory it asked for: limits = requests.
    limits = dict(requests)
    if req.gpus_per_node:
        requests[mapping.gpu_resource] = limits[mapping.gpu_resource] = str(req.gpus_per_node)
    return {"requests": requests, "limits": limits}


def _affinity(req: JobRequest, mapping: SlurmMapping) -> Obj | None:
    affinity: Obj = {}
    base: list[Obj] = []
    if req.nodelist:
        base.append({"key": HOSTNAME_LABEL, "operator": "In", "values": sorted(set(req.nodelist))})
    if req.exclude:
        base.append({"key": HOSTNAME_LABEL, "operator": "NotIn", "values": sorted(set(req.exclude))})
    terms: list[Obj] = []
    for conj in req.constraint_terms or [[]]:
        exprs = list(base)
        for feature in conj:
            label = mapping.feature_label(feature)
            exprs.append({"key": label.key, "operator": "In", "values": [label.value]})
        if exprs:
            terms.append({"matchExpressions": exprs})
    if terms:
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    if req.exclusive:
        # No other pod on the node, in any namespace, and (symmetrically) no later pod joins:
        # the whole node, which is what --exclusive (and --mem=0) mean in Slurm.
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {}, "namespaceSelector": {}, "topologyKey": HOSTNAME_LABEL}
            ]
        }
    return affinity or None


def _annotations(req: JobRequest, job_id: int, queue: str, holds: list[str], begin_iso: str | None) -> Obj:
    ann: dict[str, str] = {
        ANN_JOB_NAME: req.name,
        ANN_USER: req.user,
        ANN_NODES: str(req.nodes),
        ANN_NTASKS: str(req.ntasks),
        ANN_CPUS: str(req.cpus_per_node),
        ANN_OUTPUT: req.output,
        ANN_WORK_DIR: req.work_dir,
        ANN_SUBMIT_DIR: req.submit_dir,
        ANN_SCRIPT_NAME: req.script_name,
        ANN_NODELIST: hostlist.compress(hostnames(req, job_id)) if req.array is None else "",
    }
    optional = {
        ANN_PARTITION: req.partition,
        ANN_QUEUE: queue,
        ANN_QOS: req.qos,
        ANN_ACCOUNT: req.account,
        ANN_ERROR: req.error or "",
        ANN_GPUS: str(req.gpus_per_node) if req.gpus_per_node else "",
        ANN_DEPENDENCY: str(req.dependency) if req.dependency else "",
        ANN_BEGIN: begin_iso or "",
        ANN_NICE: str(req.nice) if req.nice is not None else "",
        ANN_ARRAY: req.array.text if req.array else "",
        ANN_ARRAY_THROTTLE: str(req.array.throttle) if req.array and req.array.throttle else "",
        ANN_CONSTRAINT: req.constraint,
        ANN_EXCLUSIVE: "true" if req.exclusive else "",
        ANN_COMMENT: req.comment,
        ANN_HOLD: ",".join(holds),
    }
    ann.update({k: v for k, v in optional.items() if v})
    if req.time_limit_s is not None:
        ann[ANN_TIME_LIMIT] = str(req.time_limit_s)
        ann[ANN_RUNTIME_ESTIMATE] = str(req.time_limit_s)
    if req.recorded:
        ann[ANN_RECORDED] = json.dumps(
            [{"option": r.option, "value": r.value, "where": r.where, "why": r.why} for r in req.recorded]
        )
    return {k: v for k, v in ann.items() if v}


def build_objects(
    req: JobRequest,
    job_id: int,
    mapping: SlurmMapping | None = None,
    namespace: str | None = None,
    now_iso: str | None = None,
) -> list[Obj]:
    """ConfigMap, Job and (multi-node) Service for ``req`` as job ``job_id``. ``now_iso``
    (RFC 3339, UTC) decides whether a --begin time is still ahead."""
    mapping = mapping or SlurmMapping()
    name = object_name(job_id)
    begin_iso = None
    if req.begin is not None:
        begin = req.begin.astimezone(UTC) if req.begin.tzinfo else req.begin
        begin_iso = begin.strftime("%Y-%m-%dT%H:%M:%SZ")
    holds = hold_reasons(req, now_iso, begin_iso)
    queue = mapping.queue_for(req.partition) if req.partition else ""
    labels = {LABEL_JOB_ID: str(job_id), LABEL_USER: label_safe(req.user)}
    if req.partition:
        labels[LABEL_PARTITION] = label_safe(req.partition)
    if queue and not holds:
        labels[QUEUE_LABEL] = queue
    pod_labels = {LABEL_JOB_ID: str(job_id)}
    qos = mapping.qos_for(req.qos) if req.qos else None
    if qos and qos.workload_priority_class:
        labels[WORKLOAD_PRIORITY_LABEL] = qos.workload_priority_class

    def meta(extra_labels: Obj | None = None, annotations: Obj | None = None) -> Obj:
        m: Obj = {"name": name, "labels": {**labels, **(extra_labels or {})}}
        if namespace:
            m["namespace"] = namespace
        if annotations:
            m["annotations"] = annotations
        return m

    env = {**req.environment, **slurm_environment(req, job_id, mapping)}
    env["KUBEHPC_SLURM_OUTPUT"] = req.output
    if req.error:
        env["KUBEHPC_SLURM_ERROR"] = req.error
    if req.input:
        env["KUBEHPC_SLURM_INPUT"] = req.input
    if req.open_mode != "truncate":
        env["KUBEHPC_SLURM_OPEN_MODE"] = req.open_mode
    if req.time_limit_s is not None:
        env["KUBEHPC_SLURM_TIME_LIMIT_S"] = str(req.time_limit_s)
    if req.array is not None:
        env["KUBEHPC_SLURM_ARRAY_TASKS"] = array_runs(req.array.task_ids)
    container: Obj = {
        "name": CONTAINER,
        "image": mapping.image,
        "command": ["/bin/bash", "-c", literal(BOOT), "slurm-batch"],
        "args": [literal(a) for a in req.script_args],
        "workingDir": req.work_dir,
        "env": [{"name": k, "value": literal(v)} for k, v in env.items()],
        "resources": _resources(req, mapping),
        "volumeMounts": [{"name": SCRIPT_VOLUME, "mountPath": SCRIPT_MOUNT, "readOnly": True}],
    }
    if not container["args"]:
        del container["args"]
    pod_spec: Obj = {
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [{"name": SCRIPT_VOLUME, "configMap": {"name": name, "defaultMode": 0o755}}],
    }
    if qos and qos.priority_class_name:
        pod_spec["priorityClassName"] = qos.priority_class_name
    if req.gpu_type:
        label = mapping.gpu_type_label(req.gpu_type)
        pod_spec["nodeSelector"] = {label.key: label.value}
    if (affinity := _affinity(req, mapping)) is not None:
        pod_spec["affinity"] = affinity
    job_spec: Obj = {
        "completionMode": "Indexed",
        "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec},
    }
    if req.array is not None:
        count = req.array.count
        job_spec["completions"] = count
        job_spec["parallelism"] = min(count, req.array.throttle or count)
        job_spec["backoffLimitPerIndex"] = 0
    else:
        job_spec["completions"] = job_spec["parallelism"] = req.nodes
        job_spec["backoffLimit"] = 0
    if req.nodes > 1:
        pod_spec["subdomain"] = name
        job_spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    if req.time_limit_s is not None:
        job_spec["activeDeadlineSeconds"] = req.time_limit_s
    if holds:
        job_spec["suspend"] = True
    objects: list[Obj] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(),
            "data": {SCRIPT_KEY: req.script, RUNNER_KEY: RUNNER},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta(annotations=_annotations(req, job_id, queue, holds, begin_iso)),
            "spec": job_spec,
        },
    ]
    if req.nodes > 1:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": meta(),
                "spec": {
                    "clusterIP": "None",
                    "selector": {LABEL_JOB_ID: str(job_id)},
                    "publishNotReadyAddresses": True,
                },
            }
        )
    return objects


def output_paths(req: JobRequest, job_id: int) -> tuple[str, str]:
    """Where stdout and stderr of the job (its first task, for arrays) will be, as sbatch
    would name them, relative to the working directory."""
    values = {
        "j": str(job_id),
        "A": str(job_id),
        "x": req.name,
        "u": req.user,
        "N": f"{object_name(job_id)}-0",
    }
    if req.array is not None:
        values["a"] = str(req.array.task_ids[0])
    out = expand_pattern(req.output, values)
    return out, expand_pattern(req.error, values) if req.error else out


def release_patch(job: Obj, kueue_manages: bool) -> Obj:
    """The merge patch that releases a held job (see the module note)."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    patch: Obj = {"metadata": {"annotations": {ANN_HOLD: None}}}
    queue = annotations.get(ANN_QUEUE)
    if queue:
        patch["metadata"]["labels"] = {QUEUE_LABEL: queue}
    if not (kueue_manages and queue):
        patch["spec"] = {"suspend": False}
    return patch


def hold_patch(reason: str = HOLD_USER) -> Obj:
    """The merge patch that holds a pending job (``scontrol hold``)."""
    return {
        "metadata": {"annotations": {ANN_HOLD: reason}, "labels": {QUEUE_LABEL: None}},
        "spec": {"suspend": True},
    }
