"""The node agent: the kubelet role for the virtual nodes of a cluster config.

One agent hosts many nodes. Over the Client protocol only, it

* registers each Node (capacity = allocatable: cpu, memory, pods and the device plugin's
  resources; labels incl. GPU Feature Discovery's; taints; the device inventory annotation;
  conditions with Ready) and renews a Lease in ``kube-node-lease`` every ``heartbeat_s``;
* watches Pods, and runs those bound (``spec.nodeName``) to its nodes: devices admitted, volumes
  prepared, init containers one by one, then the containers, each a host process
  (:mod:`kubehpc.node.runner`); restarts per restartPolicy with back-off (``backoff_base`` doubling
  to ``backoff_max``, shown as CrashLoopBackOff; the first restart is immediate, as the kubelet's);
* reports pod status as the kubelet does (:mod:`kubehpc.node.status`);
* on ``deletionTimestamp`` stops every container (SIGTERM to the whole container, SIGKILL after
  the grace period), then deletes the pod with grace 0;
* on start, adopts the processes an earlier agent left (records under
  ``$KUBEHPC_HOME/node/<node>/containers``): running ones are watched, not started again;
  finished ones are reported; those of pods that no longer exist are killed.

All pod state changes happen on one dispatcher thread, fed by the watch thread, process
waiter threads and timers, so no pod is ever synced twice at once.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubehpc.api.cluster_config import ClusterConfig, NodeConfig
from kubehpc.api.devices import POD_DEVICES_ANNOTATION, AllocationError, pod_allocation
from kubehpc.api.errors import ApiError, NotFound
from kubehpc.api.quantity import resource_units
from kubehpc.node.cgroups import DEFAULT_ROOT as DEFAULT_CGROUP_ROOT
from kubehpc.node.cgroups import MemoryCgroups
from kubehpc.node.devices import DevicePlugin, allocation_annotation
from kubehpc.node.env import ContainerConfigError, PodContext, build_env, expand
from kubehpc.node.events import EventSink
from kubehpc.node.launch import shim_dir
from kubehpc.node.registration import node_status, register, renew_lease
from kubehpc.node.runner import (
    CpuPool,
    Exit,
    LaunchSpec,
    Process,
    Runner,
    StartError,
    session_leaders,
    set_child_subreaper,
)
from kubehpc.node.status import ContainerView, pod_phase, pod_status, rfc3339
from kubehpc.node.volumes import container_mounts, host_working_dir, prepare_volumes, remove_pod_dir
from kubehpc.store.client import Client, DeleteOptions, ListOptions, PatchType
from kubehpc.store.home import Home

log = logging.getLogger(__name__)

_BASE_ENV_KEYS = ("PATH", "LD_LIBRARY_PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ")


@dataclass
class _Container:
    spec: dict[str, Any]
    view: ContainerView
    proc: Process | None = None
    backoff: float = 0.0  # the delay the next restart waits (0: restart at once)
    delay: float = 0.0  # the delay the pending restart waits
    starting: bool = False  # a starter thread is launching it
    not_before: float = 0.0
    # It ran and ended and will run again: the next launch is a restart and counts as one
    # (Kubernetes counts restartCount when the new container starts, not when the old exits).
    restart_pending: bool = False
    backoff_reported: bool = False  # the BackOff event of the pending restart is recorded


@dataclass
class _Pod:
    uid: str
    namespace: str
    name: str
    node: str
    obj: dict[str, Any]
    inits: list[_Container] = field(default_factory=list)
    mains: list[_Container] = field(default_factory=list)
    devices: dict[str, list[str]] | None = None
    volumes: dict[str, Any] | None = None
    started_at: float = 0.0
    rejected: tuple[str, str, str] | None = None
    terminating: bool = False
    finished: bool = False
    deadline_timer: bool = False
    gone: bool = False
    last_status: dict[str, Any] | None = None

    def all(self) -> list[_Container]:
        return [*self.inits, *self.mains]


class NodeAgent:
    def __init__(
        self,
        client: Client,
        config: ClusterConfig,
        nodes: list[NodeConfig],
        home: Home,
        *,
        heartbeat_s: float = 10.0,
        backoff_base: float = 10.0,
        backoff_max: float = 300.0,
        host_ip: str = "127.0.0.1",
        subreaper: bool = True,
        clock: Callable[[], float] = time.time,
        cgroup_root: Path | None = DEFAULT_CGROUP_ROOT,
    ):
        self.client = client
        self.config = config
        self.nodes = {n.name: n for n in nodes}
        self.home = home
        self.heartbeat_s = heartbeat_s
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.host_ip = host_ip
        self.clock = clock
        self.plugins = {n.name: DevicePlugin(n, config.metadata.name) for n in nodes}
        cpus = CpuPool()
        # cgroup v2 memory limits where the host delegates them; None: RLIMIT_DATA.
        self.cgroups = MemoryCgroups.probe(cgroup_root) if cgroup_root is not None else None
        self.runners = {
            n.name: Runner(home.root / "node" / n.name / "containers", cpus, self.cgroups) for n in nodes
        }
        self._subreaper = subreaper
        self._pods: dict[str, _Pod] = {}
        self._queue: queue.Queue[tuple[str, str, Any]] = queue.Queue()
        self._timers: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._starter = ThreadPoolExecutor(max_workers=4, thread_name_prefix="agent-start")
        self._watch: Any = None
        self._ready_since: dict[str, str] = {}
        self.events = EventSink(client, list(self.nodes))

    # ------------------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._subreaper:
            set_child_subreaper()
        for node in self.nodes.values():
            self._register(node)
            self._renew_lease(node.name)
        self.events.start()
        self._adopt()
        for target, name in (
            (self._dispatch_loop, "agent-dispatch"),
            (self._watch_loop, "agent-watch"),
            (self._heartbeat_loop, "agent-heartbeat"),
        ):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, kill_pods: bool = False, timeout: float = 10.0) -> None:
        """Stop the agent. Pods keep running (as when a kubelet restarts) unless ``kill_pods``:
        then every container process is killed and its record dropped."""
        self._stop.set()
        self._queue.put(("stop", "", None))
        if self._watch is not None:
            with contextlib.suppress(Exception):
                self._watch.stop()
        for t in self._threads:
            t.join(timeout)
        self._starter.shutdown(wait=True)  # after this no process can appear any more
        self.events.stop()
        if kill_pods:
            for runner in self.runners.values():
                for proc in runner.records():
                    runner.stop(proc, 0)
                    runner.forget(proc)

    # ------------------------------------------------------------------------------- nodes

    def _node_status(self, node: NodeConfig) -> dict[str, Any]:
        now = rfc3339(self.clock())
        since = self._ready_since.setdefault(node.name, now)
        return node_status(node, self.plugins[node.name], self.host_ip, now, since)

    def _register(self, node: NodeConfig) -> None:
        register(self.client, node, self.plugins[node.name], self._node_status(node))

    def _renew_lease(self, name: str) -> None:
        renew_lease(self.client, name, int(max(40, self.heartbeat_s * 4)), datetime_micro(self.clock()))

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            for node in self.nodes.values():
                try:
                    self._renew_lease(node.name)
                    stored = self.client.get("v1", "Node", node.name)
                    stored["status"] = self._node_status(node)
                    stored["metadata"].pop("resourceVersion", None)
                    self.client.update_status(stored)
                except ApiError as exc:
                    log.warning("heartbeat of node %s failed: %s", node.name, exc)
            for runner in self.runners.values():
                runner.sweep()
                runner.reap_orphans()

    # --------------------------------------------------------------------------- event intake

    def _watch_loop(self) -> None:
        rv = ""
        while not self._stop.is_set():
            try:
                listed = self.client.list("v1", "Pod")
                rv = listed.resource_version
                seen = set()
                for pod in listed.items:
                    if self._mine(pod):
                        seen.add(pod["metadata"]["uid"])
                        self._queue.put(("pod", pod["metadata"]["uid"], pod))
                for uid in list(self._pods):
                    if uid not in seen:
                        self._queue.put(("gone", uid, None))
                self._watch = self.client.watch("v1", "Pod", ListOptions(resource_version=rv))
                for ev in self._watch:
                    if self._stop.is_set():
                        return
                    pod = ev.object
                    if ev.type in ("ADDED", "MODIFIED") and self._mine(pod):
                        self._queue.put(("pod", pod["metadata"]["uid"], pod))
                    elif ev.type == "DELETED" and self._mine(pod):
                        self._queue.put(("gone", pod["metadata"]["uid"], None))
            except ApiError as exc:  # 410 Gone and friends: list again
                log.info("pod watch restarts: %s", exc)
            except Exception:
                if self._stop.is_set():
                    return
                log.exception("pod watch failed; restarting")
                time.sleep(0.5)

    def _mine(self, pod: Mapping[str, Any]) -> bool:
        return (pod.get("spec") or {}).get("nodeName") in self.nodes

    def _dispatch_loop(self) -> None:
        while not self._stop.is_set():
            timeout = None
            now = time.monotonic()
            while self._timers and self._timers[0][0] <= now:
                _, uid = heapq.heappop(self._timers)
                self._queue.put(("sync", uid, None))
            if self._timers:
                timeout = max(self._timers[0][0] - now, 0.0)
            try:
                kind, uid, payload = self._queue.get(timeout=timeout)
            except queue.Empty:
                continue
            if kind == "stop":
                return
            try:
                self._handle(kind, uid, payload)
            except Exception:
                log.exception("syncing pod %s failed", uid)

    def _later(self, uid: str, delay: float) -> None:
        heapq.heappush(self._timers, (time.monotonic() + delay, uid))

    def _handle(self, kind: str, uid: str, payload: Any) -> None:
        pod = self._pods.get(uid)
        if kind == "pod":
            if pod is not None and not _newer(payload, pod.obj):
                return  # the echo of our own write, or older than what we hold: nothing new
            if pod is None:
                phase = (payload.get("status") or {}).get("phase")
                if phase in ("Succeeded", "Failed") and not payload["metadata"].get("deletionTimestamp"):
                    return  # finished before we saw it (or before a restart): nothing to run
                pod = self._new_pod(payload)
            pod.obj = payload
        elif kind == "gone":
            if pod is None:
                return
            pod.gone = True
        elif kind == "exit":
            if pod is None:
                return
            self._on_exit(pod, *payload)
        elif kind == "started":
            self._on_started(pod, *payload)
        elif kind == "stopped":
            if pod is None:
                return
            self._finish_deletion(pod)
            return
        if pod is not None:
            self._sync(pod)

    # ------------------------------------------------------------------------------ pods

    def _new_pod(self, obj: dict[str, Any]) -> _Pod:
        meta, spec = obj["metadata"], obj["spec"]
        status = obj.get("status") or {}
        stored = {
            c["name"]: c
            for c in [*status.get("initContainerStatuses", []), *status.get("containerStatuses", [])]
        }

        def make(c: dict[str, Any], init: bool) -> _Container:
            old = stored.get(c["name"]) or {}
            view = ContainerView(
                c["name"], c.get("image", ""), init, restart_count=old.get("restartCount", 0)
            )
            out = _Container(c, view)
            # Waiting after a run (an earlier agent's back-off): its next launch is a restart.
            last = (old.get("lastState") or {}).get("terminated")
            if last and "waiting" in (old.get("state") or {}):
                view.last_terminated = last
                out.restart_pending = True
            return out

        pod = _Pod(
            meta["uid"],
            meta.get("namespace", "default"),
            meta["name"],
            spec["nodeName"],
            obj,
            [make(c, True) for c in spec.get("initContainers", [])],
            [make(c, False) for c in spec.get("containers", [])],
            started_at=self.clock(),
        )
        self._pods[pod.uid] = pod
        return pod

    def _sync(self, pod: _Pod) -> None:
        if pod.gone or pod.obj["metadata"].get("deletionTimestamp"):
            self._begin_deletion(pod)
            return
        if not self._terminal(pod):
            self._check_deadline(pod)
        if not self._terminal(pod) and self._admit(pod):
            for c in pod.inits:
                if c.view.succeeded:
                    continue
                if c.proc is None:
                    self._maybe_start(pod, c)
                break  # one init container at a time, in order
            else:
                for c in pod.mains:
                    if c.proc is None and c.view.terminated is None:
                        self._maybe_start(pod, c)
        self._write_status(pod)
        busy = any(c.proc is not None or c.starting for c in pod.all())
        if self._terminal(pod) and not busy and not pod.finished:
            pod.finished = True
            self._release(pod)

    def _check_deadline(self, pod: _Pod) -> None:
        """spec.activeDeadlineSeconds, as the kubelet enforces it: past the deadline the pod
        fails with DeadlineExceeded and its containers are stopped."""
        deadline = pod.obj["spec"].get("activeDeadlineSeconds")
        if deadline is None:
            return
        started = _parse_time((pod.obj.get("status") or {}).get("startTime")) or pod.started_at
        remaining = started + float(deadline) - self.clock()
        if remaining > 0:
            if not pod.deadline_timer:
                pod.deadline_timer = True
                self._later(pod.uid, remaining)
            return
        pod.rejected = (
            "Failed",
            "DeadlineExceeded",
            "Pod was active on the node longer than the specified deadline",
        )
        grace = float(pod.obj["spec"].get("terminationGracePeriodSeconds", 30))
        runner = self.runners[pod.node]
        for c in pod.all():
            if c.proc is not None:
                self.events.killing(pod.node, pod.obj, c.view.name)
                threading.Thread(target=runner.stop, args=(c.proc, grace), daemon=True).start()

    def _terminal(self, pod: _Pod) -> bool:
        if pod.rejected:
            return True
        policy = pod.obj["spec"].get("restartPolicy", "Always")
        phase = pod_phase(policy, [c.view for c in pod.inits], [c.view for c in pod.mains])
        return phase in ("Succeeded", "Failed")

    def _admit(self, pod: _Pod) -> bool:
        """Devices and volumes, once per pod. False while the pod cannot start (yet)."""
        if pod.devices is None:
            others = [
                p.obj
                for p in self._pods.values()
                if p.node == pod.node and p.uid != pod.uid and p.devices and not p.gone and not p.finished
            ]
            try:
                pod.devices = self.plugins[pod.node].admit(pod.obj, others)
            except AllocationError as exc:
                pod.rejected = ("Failed", "UnexpectedAdmissionError", f"Allocate failed due to {exc}")
                self.events.rejected(pod.node, pod.obj, *pod.rejected[1:])
                return False
            if pod.devices and pod.devices != _recorded(pod.obj):
                with contextlib.suppress(ApiError):
                    patch = {
                        "metadata": {
                            "annotations": {POD_DEVICES_ANNOTATION: allocation_annotation(pod.devices)}
                        }
                    }
                    pod.obj = self.client.patch("v1", "Pod", pod.name, patch, PatchType.MERGE, pod.namespace)
        if pod.volumes is None:
            try:
                pod.volumes = prepare_volumes(self.home, pod.obj, self._lookup, self._ctx(pod))
            except ContainerConfigError as exc:
                for c in pod.all():
                    c.view.waiting = (exc.reason, str(exc))
                self._later(pod.uid, 2.0)
                return False
        return True

    def _ctx(self, pod: _Pod) -> PodContext:
        node = self.nodes[pod.node]
        return PodContext(pod.node, "127.0.0.1", self.host_ip, node.cpu_millis, node.memory_bytes)

    def _lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            return self.client.get("v1", kind, name, namespace)
        except NotFound:
            return None

    def _maybe_start(self, pod: _Pod, c: _Container) -> None:
        if c.starting:
            return
        wait = c.not_before - self.clock()
        if wait > 0:
            c.view.waiting = (
                "CrashLoopBackOff",
                f"back-off {c.delay:g}s restarting failed container="
                f"{c.view.name} pod={pod.name}_{pod.namespace}({pod.uid})",
            )
            if not c.backoff_reported:
                c.backoff_reported = True
                self.events.back_off(pod.node, pod.obj, c.view.name)
            self._later(pod.uid, wait)
            return
        # Starting touches the file system and forks: done on a small pool so that one slow
        # start does not hold up every other pod; the result comes back to the dispatcher.
        c.starting = True
        if c.restart_pending:
            c.restart_pending = False
            c.view.restart_count += 1
        self._starter.submit(self._start_container, pod, c)

    def _start_container(self, pod: _Pod, c: _Container) -> None:
        """On a starter thread: build the launch and start the process; never raises."""
        now = self.clock()
        result: Process | Exception
        try:
            result = self.runners[pod.node].start(self._launch_spec(pod, c))
        except (ContainerConfigError, StartError) as exc:
            result = exc
        except Exception as exc:  # a bug or an OS failure: report it on the container
            log.exception("starting %s/%s failed", pod.name, c.view.name)
            result = StartError(f"kubehpc could not start the container: {exc}", 128)
        self._queue.put(("started", pod.uid, (pod.node, c.view.name, result, now)))

    def _on_started(
        self, pod: _Pod | None, node: str, name: str, result: Process | Exception, at: float
    ) -> None:
        runner = self.runners[node]
        c = next((c for c in pod.all() if c.view.name == name), None) if pod else None
        if pod is None or c is None or pod.terminating or pod.gone:
            if isinstance(result, Process):  # the pod went away while we started it
                threading.Thread(target=self._discard, args=(runner, result), daemon=True).start()
            return
        c.starting = False
        if isinstance(result, Process):
            c.proc = result
            self._set_running(c, result)
            runner.watch(result, self._exit_callback(pod.uid, name))
            self.events.started(pod.node, pod.obj, name)
        elif isinstance(result, ContainerConfigError):
            c.view.waiting = (result.reason, str(result))
            self.events.failed(pod.node, pod.obj, str(result))
            self._later(pod.uid, 2.0)
        elif isinstance(result, StartError):
            self.events.failed(pod.node, pod.obj, result.message)
            self._on_exit(pod, name, None, Exit(result.exit_code, "Error", result.message, at), started=at)

    @staticmethod
    def _discard(runner: Runner, proc: Process) -> None:
        runner.stop(proc, 0)
        runner.forget(proc)

    def _exit_callback(self, uid: str, name: str) -> Callable[[Process, Exit], None]:
        # Runs on the waiter thread: hand the exit to the dispatcher, which owns pod state.
        def on_exit(proc: Process, ex: Exit) -> None:
            self._queue.put(("exit", uid, (name, proc, ex)))

        return on_exit

    def _set_running(self, c: _Container, proc: Process) -> None:
        if c.view.terminated is not None:
            c.view.last_terminated = c.view.terminated
        c.view.terminated = None
        c.view.running_since = proc.started_at
        c.view.container_id = f"kubehpc://{proc.container_id}/{proc.pid}"

    def _launch_spec(self, pod: _Pod, c: _Container) -> LaunchSpec:
        spec = c.spec
        meta = pod.obj["metadata"]
        base = {k: os.environ[k] for k in _BASE_ENV_KEYS if k in os.environ}
        base.setdefault("PATH", os.defpath)
        base["HOSTNAME"] = pod.obj["spec"].get("hostname") or pod.name
        assert pod.volumes is not None
        root, mount_env, mounts = container_mounts(self.home, pod.obj, spec, pod.volumes)
        env = build_env(pod.obj, spec, self._ctx(pod), self._lookup, {**base, **mount_env})
        env["PATH"] = f"{shim_dir(self.home)}:{env.get('PATH') or os.defpath}"  # kubehpc-launch, srun
        if self.plugins[pod.node].inventory.devices:
            # After the user's env: the devices a container sees are not the user's choice.
            env.update(self.plugins[pod.node].container_env(pod.devices or {}, c.view.name))
        command = [expand(a, env) for a in spec.get("command") or []]
        args = [expand(a, env) for a in spec.get("args") or []]
        argv = [*self.config.command_prefix(spec.get("image", "")), *command, *args]
        if not command and not self.config.command_prefix(spec.get("image", "")):
            argv = []
        wd = spec.get("workingDir")
        cwd = host_working_dir(wd, root, mounts) if wd else root
        limits = (spec.get("resources") or {}).get("limits") or {}
        cpu = resource_units("cpu", limits["cpu"]) if "cpu" in limits else None
        mem = resource_units("memory", limits["memory"]) if "memory" in limits else None
        return LaunchSpec(
            container_id=f"{pod.uid}/{c.view.name}",
            argv=argv,
            env=env,
            cwd=cwd,
            log_path=self.home.pod_log_path(pod.namespace, pod.name, c.view.name),
            cpu_millis=cpu,
            memory_bytes=mem,
            extra={
                "namespace": pod.namespace,
                "pod": pod.name,
                "container": c.view.name,
                "restartCount": str(c.view.restart_count),
                "podUID": meta["uid"],
            },
        )

    def _on_exit(
        self, pod: _Pod, name: str, proc: Process | None, ex: Exit, started: float | None = None
    ) -> None:
        c = next((c for c in pod.all() if c.view.name == name), None)
        if c is None or (proc is not None and c.proc is not proc):
            return
        began = c.view.running_since or started or ex.finished_at
        c.proc = None
        c.view.running_since = None
        term = {
            "exitCode": ex.exit_code,
            "reason": ex.reason,
            "startedAt": rfc3339(began),
            "finishedAt": rfc3339(ex.finished_at),
        }
        if ex.message:
            term["message"] = ex.message
        if c.view.container_id:
            term["containerID"] = c.view.container_id
        c.view.terminated = term
        if pod.terminating or pod.gone or pod.rejected:
            return
        policy = pod.obj["spec"].get("restartPolicy", "Always")
        restart = (policy == "Always" and not c.view.init) or (policy != "Never" and ex.exit_code != 0)
        if not restart:
            return
        # Back-off as the kubelet: first restart at once, then base, 2*base, ... up to max;
        # a run of 10 minutes or more forgets earlier crashes.
        if ex.finished_at - began >= 600:
            c.backoff = 0.0
        c.delay = c.backoff
        c.not_before = ex.finished_at + c.backoff
        c.backoff = min(self.backoff_max, c.backoff * 2 if c.backoff else self.backoff_base)
        c.view.last_terminated = term
        c.view.terminated = None
        c.restart_pending = True
        c.backoff_reported = False
        c.view.waiting = ("CrashLoopBackOff", "")

    def _write_status(self, pod: _Pod) -> None:
        if pod.gone:
            return
        status = pod_status(
            pod.obj,
            [c.view for c in pod.inits],
            [c.view for c in pod.mains],
            self.clock(),
            pod.started_at,
            self.host_ip,
            pod.rejected,
        )
        comparable = _without_times(status)
        if comparable == pod.last_status:
            return
        # The status subresource replaces status only, so the pod as last seen (with its uid,
        # without a resourceVersion) is enough: no read before the write.
        obj = {**pod.obj, "status": status, "metadata": dict(pod.obj["metadata"])}
        obj["metadata"].pop("resourceVersion", None)
        try:
            pod.obj = self.client.update_status(obj)
            pod.last_status = comparable
        except NotFound:
            return
        if pod.obj["metadata"].get("deletionTimestamp") and not pod.terminating:
            # Deleted while we wrote: the watch events carrying the mark are no newer than the
            # pod we now hold and will be dropped, so act on the mark we got back.
            self._later(pod.uid, 0)

    def _release(self, pod: _Pod) -> None:
        """A finished pod: its processes are gone; drop their records (status is stored)."""
        runner = self.runners[pod.node]
        for c in pod.all():
            if c.proc is not None:
                runner.forget(c.proc)
        for proc in runner.records(pod.uid):
            runner.forget(proc)

    # ------------------------------------------------------------------------------ deletion

    def _begin_deletion(self, pod: _Pod) -> None:
        if pod.terminating:
            return
        pod.terminating = True
        grace = pod.obj["metadata"].get("deletionGracePeriodSeconds")
        if grace is None:
            grace = pod.obj["spec"].get("terminationGracePeriodSeconds", 30)
        runner = self.runners[pod.node]
        running = [c for c in pod.all() if c.proc is not None]
        for c in running:
            self.events.killing(pod.node, pod.obj, c.view.name)

        def stop_all() -> None:
            threads = []
            for c in running:
                assert c.proc is not None
                t = threading.Thread(target=runner.stop, args=(c.proc, float(grace)), daemon=True)
                t.start()
                threads.append(t)
            for t in threads:
                t.join()
            self._queue.put(("stopped", pod.uid, None))

        threading.Thread(target=stop_all, name=f"stop-{pod.name}", daemon=True).start()

    def _finish_deletion(self, pod: _Pod) -> None:
        runner = self.runners[pod.node]
        for proc in runner.records(pod.uid):
            runner.stop(proc, 0)
            runner.forget(proc)
        remove_pod_dir(self.home, pod.obj)
        if not pod.gone:
            self._write_status(pod)
            with contextlib.suppress(NotFound):
                self.client.delete(
                    "v1",
                    "Pod",
                    pod.name,
                    pod.namespace,
                    DeleteOptions(grace_period_seconds=0, preconditions_uid=pod.uid),
                )
        self._pods.pop(pod.uid, None)

    # ------------------------------------------------------------------------------ adoption

    def _adopt(self) -> None:
        """Take over the processes an earlier agent of these nodes started: those with a
        record, then any container shim still running without one (a start the crash cut
        short). Processes of pods that are gone or being deleted are killed."""
        pods: dict[str, dict[str, Any]] = {}
        for node in self.nodes:
            for p in self.client.list("v1", "Pod", ListOptions(field_selector=f"spec.nodeName={node}")).items:
                pods[p["metadata"]["uid"]] = p
        known: set[str] = set()
        for runner in self.runners.values():
            for proc, ex in runner.adopt():
                known.add(proc.container_id)
                self._take_over(runner, pods, proc, ex)
        for cid, pid in session_leaders().items():
            uid, _, name = cid.partition("/")
            obj = pods.get(uid)
            if cid in known or obj is None:
                continue  # adopted above, or not a pod of our nodes (another agent's): leave it
            runner = self.runners[obj["spec"]["nodeName"]]
            log_path = self.home.pod_log_path(
                obj["metadata"].get("namespace", "default"), obj["metadata"]["name"], name
            )
            orphan = runner.adopt_pid(cid, pid, log_path, {})
            if orphan is not None:
                self._take_over(runner, pods, orphan, None)
        for pod in list(self._pods.values()):
            self._queue.put(("sync", pod.uid, None))

    def _take_over(
        self, runner: Runner, pods: Mapping[str, dict[str, Any]], proc: Process, ex: Exit | None
    ) -> None:
        uid, _, name = proc.container_id.partition("/")
        obj = pods.get(uid)
        pod = None
        if obj is not None and not obj["metadata"].get("deletionTimestamp"):
            pod = self._pods.get(uid) or self._new_pod(obj)
        c = next((c for c in pod.all() if c.view.name == name), None) if pod else None
        if pod is None or c is None:
            if ex is None:
                runner.stop(proc, 0)
            runner.forget(proc)
            return
        pod.devices = _recorded(pod.obj)
        c.view.restart_count = int(proc.extra.get("restartCount", c.view.restart_count))
        c.restart_pending = False  # that launch was counted when it was made
        c.proc = proc
        self._set_running(c, proc)
        if ex is not None:
            self._on_exit(pod, name, proc, ex)
        else:
            runner.watch(proc, self._exit_callback(uid, name))


def _parse_time(value: Any) -> float | None:
    if not value:
        return None
    try:
        return datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _newer(candidate: Mapping[str, Any], held: Mapping[str, Any]) -> bool:
    """Whether ``candidate`` is a later version than ``held``. resourceVersions are opaque in
    Kubernetes; the embedded store's are increasing integers, which lets us drop stale echoes."""
    new, old = candidate["metadata"].get("resourceVersion", ""), held["metadata"].get("resourceVersion", "")
    if new.isdigit() and old.isdigit():
        return int(new) > int(old)
    return bool(new != old)


def _recorded(obj: Mapping[str, Any]) -> dict[str, list[str]]:
    return pod_allocation(obj)


def _without_times(status: dict[str, Any]) -> dict[str, Any]:
    out = dict(status)
    out["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status["conditions"]
    ]
    return out


def datetime_micro(ts: float) -> str:
    """MicroTime, as Lease renewTime is written."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
