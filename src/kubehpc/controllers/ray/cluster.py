"""The RayCluster controller: KubeRay's ``RayClusterReconciler`` over the Client protocol.

One level-triggered pass per cluster:

1. on the embedded cluster, a ``ray`` executable missing on the host fails the cluster with a
   condition and an event (instead of pods crash-looping on "command not found");
2. a suspended cluster has no pods (state ``suspended``);
3. the head Service and the head pod exist (a head pod that ended is replaced);
4. each worker group has ``replicas`` x ``numOfHosts`` workers (clamped to min/max; a group
   with ``suspend`` has none): the pods named in ``scaleStrategy.workersToDelete`` go first,
   ended workers are replaced, missing ones created once the head is up (they join it);
   extra ones are removed only when the autoscaler does not own the counts;
5. with ``enableInTreeAutoscaling`` the autoscaler round (:mod:`.autoscaling`) runs against
   the live Ray cluster and writes replicas and ``workersToDelete`` back into the spec;
6. status: state ``ready`` once every pod runs and is ready, desired / available / ready
   workers, desired CPU, memory and GPU, ``endpoints`` and ``head`` (pod and service).
"""

from __future__ import annotations

import copy
import logging
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubehpc.api.errors import AlreadyExists, Conflict, NotFound
from kubehpc.api.quantity import parse_quantity
from kubehpc.controllers.ray import autoscaling as A
from kubehpc.controllers.ray import constants as c
from kubehpc.controllers.ray import objects as O
from kubehpc.controllers.ray import volcano as V
from kubehpc.controllers.ray.loop import RAY_PODS, OwnerLoop
from kubehpc.controllers.ray.ports import listening, node_ports
from kubehpc.controllers.ray.startparams import NodePorts, ray_resources_of
from kubehpc.controllers.ray.validation import cluster_spec_problems
from kubehpc.store.client import Client, DeleteOptions, ListOptions
from kubehpc.store.events import EventRecorder, record_quietly
from kubehpc.store.strategy import rfc3339

log = logging.getLogger(__name__)
Obj = dict[str, Any]
COMPONENT = "raycluster-controller"
AUTOSCALE_PERIOD_S = 2.0
NOT_READY_POLL_S = 0.5
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

EventSink = Callable[[Obj, str, str, str], Any]
StateReader = Callable[[str], A.ClusterState]


def _suffix() -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _ready(pod: Obj) -> bool:
    if _phase(pod) != "Running":
        return False
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def _deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _ports_of(pod: Obj) -> NodePorts | None:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(c.PORTS_ANNOTATION)
    return NodePorts.from_json(raw) if raw else None


def _dashboard_enabled(pod: Obj) -> bool:
    command = str(((pod.get("spec") or {}).get("containers") or [{}])[0].get("args") or "")
    return "--include-dashboard=false" not in command.lower()


def desired_replicas(group: Obj) -> int:
    """KubeRay's clamp: replicas (default minReplicas) within [minReplicas, maxReplicas]; a
    suspended group wants none."""
    if group.get("suspend"):
        return 0
    lo = int(group.get("minReplicas") or 0)
    top = group.get("maxReplicas")
    hi = int(top) if top is not None else 2**31 - 1
    replicas = group.get("replicas")
    n = lo if replicas is None else int(replicas)
    return max(lo, min(hi, n))


@dataclass
class RayClusterOptions:
    mode: O.HostMode = field(default_factory=O.HostMode)
    read_state: StateReader = A.read_cluster_state
    autoscale_period_s: float = AUTOSCALE_PERIOD_S
    resync_s: float = 10.0


class RayClusterController:
    def __init__(
        self, client: Client, options: RayClusterOptions | None = None, events: EventSink | None = None
    ) -> None:
        self.client = client
        self.options = options or RayClusterOptions()
        self.events: EventSink = events or EventRecorder(client, COMPONENT).record
        self._last_autoscale: dict[tuple[str, str], float] = {}

    @property
    def mode(self) -> O.HostMode:
        return self.options.mode

    # --- one cluster -----------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> float | None:
        try:
            cluster = self.client.get(c.API_VERSION, c.CLUSTER_KIND, name, namespace)
        except NotFound:
            self._last_autoscale.pop((namespace, name), None)
            return None
        if _deleting(cluster):
            return None  # the garbage collector removes the pods and the Service
        spec = cluster.get("spec") or {}
        problems = cluster_spec_problems(spec)
        if problems:  # admitted as the CRD admits it; refused here, as KubeRay's reconciler does
            return self._fail(cluster, "InvalidRayClusterSpec", "; ".join(problems))
        pods = [p for p in self._pods(namespace, name) if not _deleting(p)]
        if self.mode.host_processes and not self._ray_on_host():
            return self._fail(
                cluster,
                "RayBinaryNotFound",
                f"the ray executable {self.mode.ray_bin!r} is not on this host: install Ray "
                "(pip install 'ray[default]') to run RayClusters on the embedded cluster",
            )
        if spec.get("suspend"):
            for pod in pods:
                self._delete_pod(pod)
            self._write_status(cluster, [], suspended=True)
            return None
        V.ensure_pod_group(self.client, cluster)  # before any pod: the pods name it
        self._ensure_head(cluster, pods)
        pods = [p for p in self._pods(namespace, name) if not _deleting(p)]
        head = self._head(pods)
        head_ports = _ports_of(head) if head is not None else None
        self._ensure_service(cluster, head_ports)
        again: float | None = None
        if head is not None and (head_ports is not None or not self.mode.host_processes):
            self._ensure_workers(cluster, pods, head_ports)
            if spec.get("enableInTreeAutoscaling") and self._node_ready(head):
                again = self._autoscale(cluster, head_ports)
        pods = [p for p in self._pods(namespace, name) if not _deleting(p)]
        if not self._write_status(cluster, pods):
            # Readiness of Ray nodes is polled (no pod event says a raylet came up).
            return NOT_READY_POLL_S if again is None else min(again, NOT_READY_POLL_S)
        return again

    def _node_ready(self, pod: Obj) -> bool:
        """Running and ready; on the embedded cluster also its raylet (and the head's GCS)
        accepting connections, so ``ready`` means the Ray node is up, not just its process."""
        if not _ready(pod):
            return False
        if not self.mode.host_processes:
            return True
        ports = _ports_of(pod)
        if ports is None:
            return False
        wanted = [ports.node_manager, ports.gcs]
        if ports.gcs and _dashboard_enabled(pod):
            wanted.append(ports.dashboard)  # jobs are submitted through it
        return all(listening(p) for p in wanted if p)

    def _ray_on_host(self) -> bool:
        return shutil.which(self.mode.ray_bin, path=self.mode.path or None) is not None

    def _pods(self, namespace: str, name: str) -> list[Obj]:
        listed = self.client.list(
            "v1", "Pod", ListOptions(namespace=namespace, label_selector=f"{c.CLUSTER_LABEL}={name}")
        )
        return list(listed.items)

    @staticmethod
    def _head(pods: list[Obj]) -> Obj | None:
        heads = [p for p in pods if (p["metadata"].get("labels") or {}).get(c.NODE_TYPE_LABEL) == "head"]
        return heads[0] if heads else None

    def _ensure_head(self, cluster: Obj, pods: list[Obj]) -> None:
        head = self._head(pods)
        if head is not None and _phase(head) in ("Succeeded", "Failed"):
            # KubeRay replaces a head pod that ended (its restartPolicy let it end).
            self._event(cluster, "Normal", "DeletedHeadPod", f"head pod {head['metadata']['name']} ended")
            self._delete_pod(head)
            head = None
        if head is not None:
            return
        name = f"{cluster['metadata']['name']}-head-{_suffix()}"
        ports = node_ports(head=True, serve=True) if self.mode.host_processes else None
        pod = V.join_gang(cluster, O.head_pod(cluster, name, ports, self.mode))
        if self._create(pod):
            self._event(cluster, "Normal", "CreatedHeadPod", f"Created head Pod {name}")

    def _ensure_service(self, cluster: Obj, head_ports: NodePorts | None) -> None:
        if self.mode.host_processes and head_ports is None:
            return
        svc = O.head_service(cluster, head_ports)
        try:
            current = self.client.get("v1", "Service", svc["metadata"]["name"], svc["metadata"]["namespace"])
        except NotFound:
            if self._create(svc):
                self._event(cluster, "Normal", "CreatedService", f"Created service {svc['metadata']['name']}")
            return
        if current["spec"].get("ports") != svc["spec"]["ports"]:
            # The head was replaced and listens on new ports (embedded cluster).
            current["spec"]["ports"] = svc["spec"]["ports"]
            try:
                self.client.update(current)
            except (Conflict, NotFound):
                pass

    def _ensure_workers(self, cluster: Obj, pods: list[Obj], head_ports: NodePorts | None) -> None:
        spec = cluster.get("spec") or {}
        autoscaled = bool(spec.get("enableInTreeAutoscaling"))
        for group in spec.get("workerGroupSpecs") or ():
            gname = str(group["groupName"])
            mine = [
                p
                for p in pods
                if (p["metadata"].get("labels") or {}).get(c.NODE_TYPE_LABEL) == "worker"
                and p["metadata"]["labels"].get(c.GROUP_LABEL) == gname
            ]
            to_delete = set((group.get("scaleStrategy") or {}).get("workersToDelete") or ())
            live: list[Obj] = []
            for pod in mine:
                pname = pod["metadata"]["name"]
                if pname in to_delete:
                    self._delete_pod(pod)
                    self._event(
                        cluster, "Normal", "DeletedWorkerPod", f"Deleted worker Pod {pname} (workersToDelete)"
                    )
                elif _phase(pod) in ("Succeeded", "Failed"):
                    self._delete_pod(pod)
                    self._event(cluster, "Normal", "DeletedWorkerPod", f"Deleted ended worker Pod {pname}")
                else:
                    live.append(pod)
            want = desired_replicas(group) * int(group.get("numOfHosts") or 1)
            for _ in range(want - len(live)):
                pname = f"{cluster['metadata']['name']}-{gname}-worker-{_suffix()}"
                ports = node_ports(head=False) if self.mode.host_processes else None
                pod = V.join_gang(cluster, O.worker_pod(cluster, group, pname, head_ports, ports, self.mode))
                if self._create(pod):
                    self._event(cluster, "Normal", "CreatedWorkerPod", f"Created worker Pod {pname}")
            if len(live) > want and not autoscaled:
                # Without the autoscaler KubeRay removes surplus workers itself (newest first).
                surplus = sorted(live, key=lambda p: p["metadata"].get("creationTimestamp", ""))[want:]
                for pod in surplus:
                    self._delete_pod(pod)
                    self._event(
                        cluster,
                        "Normal",
                        "DeletedWorkerPod",
                        f"Deleted surplus worker Pod {pod['metadata']['name']}",
                    )

    # --- autoscaler ------------------------------------------------------------------------

    def _autoscale(self, cluster: Obj, head_ports: NodePorts | None) -> float | None:
        key = (cluster["metadata"].get("namespace", "default"), cluster["metadata"]["name"])
        period = self.options.autoscale_period_s
        now = time.monotonic()
        last = self._last_autoscale.get(key)
        if last is not None and now - last < period:
            return period - (now - last)
        self._last_autoscale[key] = now
        address = O.head_address(cluster, head_ports)
        try:
            state = self.options.read_state(address)
        except Exception as err:  # the GCS may not answer yet (head starting)
            log.debug("reading the Ray state of %s/%s failed: %s", *key, err)
            return period
        spec = cluster.get("spec") or {}
        default_idle = (spec.get("autoscalerOptions") or {}).get("idleTimeoutSeconds")
        groups = []
        for g in spec.get("workerGroupSpecs") or ():
            container = ((g.get("template") or {}).get("spec") or {}).get("containers") or [{}]
            idle = g.get("idleTimeoutSeconds", default_idle)
            groups.append(
                A.GroupShape(
                    name=str(g["groupName"]),
                    replicas=desired_replicas(g),
                    min_replicas=int(g.get("minReplicas") or 0),
                    max_replicas=int(g.get("maxReplicas") if g.get("maxReplicas") is not None else 2**31 - 1),
                    num_of_hosts=int(g.get("numOfHosts") or 1),
                    resources=ray_resources_of(g.get("rayStartParams") or {}, container[0]),
                    idle_timeout_s=float(idle if idle is not None else A.DEFAULT_IDLE_TIMEOUT_S),
                )
            )
        pods = {p["metadata"]["name"] for p in self._pods(*key)}
        # Workers already asked to go are not counted twice; nodes of deleted pods are ignored.
        nodes = [n for n in state.nodes if n.instance_id in pods]
        decisions = A.decide(groups, state.demand, nodes)
        self._apply_scale(cluster, decisions)
        return period

    def _apply_scale(self, cluster: Obj, decisions: dict[str, A.GroupDecision]) -> None:
        new = copy.deepcopy(cluster)
        changed = False
        for g in new["spec"].get("workerGroupSpecs") or ():
            d = decisions.get(str(g["groupName"]))
            if d is None:
                continue
            current = (g.get("scaleStrategy") or {}).get("workersToDelete") or []
            pending = [w for w in current if w not in d.workers_to_delete]
            if d.replicas != desired_replicas(g) or d.workers_to_delete or (current and not pending):
                before = desired_replicas(g)
                g["replicas"] = d.replicas
                g["scaleStrategy"] = {"workersToDelete": d.workers_to_delete}
                changed = True
                if d.replicas != before:
                    verb = "up" if d.replicas > before else "down"
                    self._event(
                        cluster,
                        "Normal",
                        "AutoscalerScaled",
                        f"autoscaler scaled worker group {g['groupName']} {verb} "
                        f"from {before} to {d.replicas}"
                        + (
                            f", removing idle {', '.join(d.workers_to_delete)}" if d.workers_to_delete else ""
                        ),
                    )
        if changed:
            try:
                self.client.update(new)
            except (Conflict, NotFound):
                pass

    # --- status ----------------------------------------------------------------------------

    def _fail(self, cluster: Obj, reason: str, message: str) -> float | None:
        status = dict(cluster.get("status") or {})
        if status.get("state") != c.FAILED or status.get("reason") != message:
            self._event(cluster, "Warning", reason, message)
        status.update({"state": c.FAILED, "reason": message})
        status["conditions"] = _set_condition(
            status.get("conditions") or [], "HeadPodReady", "False", reason, message
        )
        self._put_status(cluster, status)
        return None

    def _write_status(self, cluster: Obj, pods: list[Obj], suspended: bool = False) -> bool:
        """Write the status; whether every pod is running and ready."""
        spec = cluster.get("spec") or {}
        status = dict(cluster.get("status") or {})
        groups = spec.get("workerGroupSpecs") or []
        desired = sum(desired_replicas(g) * int(g.get("numOfHosts") or 1) for g in groups)
        workers = [p for p in pods if (p["metadata"].get("labels") or {}).get(c.NODE_TYPE_LABEL) == "worker"]
        head = self._head(pods)
        ready_workers = sum(1 for p in workers if self._node_ready(p))
        running_workers = sum(1 for p in workers if _phase(p) == "Running")
        status.update(
            {
                "desiredWorkerReplicas": desired,
                "availableWorkerReplicas": running_workers,
                "readyWorkerReplicas": ready_workers,
                "minWorkerReplicas": sum(
                    int(g.get("minReplicas") or 0) * int(g.get("numOfHosts") or 1) for g in groups
                ),
                "maxWorkerReplicas": sum(
                    int(g.get("maxReplicas") if g.get("maxReplicas") is not None else 2**31 - 1)
                    * int(g.get("numOfHosts") or 1)
                    for g in groups
                ),
                "observedGeneration": int((cluster.get("metadata") or {}).get("generation") or 1),
            }
        )
        status.update(_desired_resources(spec))
        conditions = list(status.get("conditions") or [])
        if suspended:
            state, reason = c.SUSPENDED, ""
            conditions = _set_condition(conditions, "RayClusterSuspended", "True", "Suspended", "suspended")
        else:
            conditions = _set_condition(conditions, "RayClusterSuspended", "False", "NotSuspended", "")
            head_ready = head is not None and self._node_ready(head)
            all_ready = head_ready and ready_workers >= desired and len(workers) >= desired
            state = c.READY if all_ready else str(status.get("state") or "")
            if status.get("state") == c.SUSPENDED and not all_ready:
                state = ""
            reason = ""
            conditions = _set_condition(
                conditions,
                "HeadPodReady",
                "True" if head_ready else "False",
                "HeadPodRunningAndReady"
                if head_ready
                else "HeadPodNotFound"
                if head is None
                else "HeadPodNotReady",
                "",
            )
            if all_ready:
                conditions = _set_condition(
                    conditions,
                    "RayClusterProvisioned",
                    "True",
                    "AllPodRunningAndReadyFirstTime",
                    "all Ray pods are ready",
                )
            if head is not None:
                ports = _ports_of(head)
                status["endpoints"] = O.endpoints_of(ports if self.mode.host_processes else None)
                status["head"] = {
                    "podName": head["metadata"]["name"],
                    "podIP": (head.get("status") or {}).get("podIP") or "",
                    "serviceName": O.head_service_name(cluster["metadata"]["name"]),
                    "serviceIP": "127.0.0.1" if self.mode.host_processes else "",
                }
        if state:
            if status.get("state") != state:
                times = dict(status.get("stateTransitionTimes") or {})
                times[state] = rfc3339(time.time())
                status["stateTransitionTimes"] = times
            status["state"] = state
        if reason:
            status["reason"] = reason
        else:
            status.pop("reason", None)
        status["conditions"] = conditions
        self._put_status(cluster, status)
        return state == c.READY

    def _put_status(self, cluster: Obj, status: Obj) -> None:
        old = cluster.get("status") or {}
        if {k: v for k, v in old.items() if k != "lastUpdateTime"} == {
            k: v for k, v in status.items() if k != "lastUpdateTime"
        }:
            return
        status["lastUpdateTime"] = rfc3339(time.time())
        try:
            self.client.update_status({**cluster, "status": status})
        except (Conflict, NotFound):
            pass  # the next pass sees the newer object

    # --- writes ----------------------------------------------------------------------------

    def _create(self, obj: Obj) -> bool:
        try:
            self.client.create(obj)
            return True
        except AlreadyExists:
            return False

    def _delete_pod(self, pod: Obj) -> None:
        try:
            self.client.delete(
                "v1", "Pod", pod["metadata"]["name"], pod["metadata"].get("namespace"), DeleteOptions()
            )
        except NotFound:
            pass

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        record_quietly(self.events, obj, type_, reason, message)

    def run(self, stop: threading.Event) -> None:
        OwnerLoop(
            self.client,
            c.API_VERSION,
            c.CLUSTER_KIND,
            self.reconcile,
            owned=(RAY_PODS,),
            resync_s=self.options.resync_s,
        ).run(stop)


def _set_condition(conditions: list[Obj], type_: str, status: str, reason: str, message: str) -> list[Obj]:
    out = []
    found = False
    for cond in conditions:
        if cond.get("type") == type_:
            found = True
            if cond.get("status") == status and cond.get("reason") == reason:
                out.append(cond)
            else:
                out.append(
                    {
                        "type": type_,
                        "status": status,
                        "reason": reason,
                        "message": message,
                        "lastTransitionTime": rfc3339(time.time()),
                    }
                )
        else:
            out.append(cond)
    if not found:
        out.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": rfc3339(time.time()),
            }
        )
    return out


def _desired_resources(spec: Obj) -> dict[str, str]:
    """desiredCPU / desiredMemory / desiredGPU: the requests of every pod the spec asks for."""
    totals = {"cpu": 0, "memory": 0, "nvidia.com/gpu": 0}
    templates: list[tuple[Obj, int]] = [(((spec.get("headGroupSpec") or {}).get("template") or {}), 1)]
    for g in spec.get("workerGroupSpecs") or ():
        templates.append((g.get("template") or {}, desired_replicas(g) * int(g.get("numOfHosts") or 1)))
    from fractions import Fraction

    sums = {k: Fraction(0) for k in totals}
    for tmpl, n in templates:
        for ctr in (tmpl.get("spec") or {}).get("containers") or ():
            res = ctr.get("resources") or {}
            for k in sums:
                q = (res.get("requests") or {}).get(k, (res.get("limits") or {}).get(k))
                if q is not None:
                    sums[k] += parse_quantity(q).amount * n
    cpu = sums["cpu"]
    return {
        "desiredCPU": str(int(cpu)) if cpu.denominator == 1 else f"{int(cpu * 1000)}m",
        "desiredMemory": str(int(sums["memory"])),
        "desiredGPU": str(int(sums["nvidia.com/gpu"])),
        "desiredTPU": "0",
    }
