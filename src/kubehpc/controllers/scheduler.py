"""The live scheduling loop: watch the cluster, ask the pure core, write what it decided.

One thread owns all state. Informer threads list and watch Nodes, Pods and PriorityClasses
through the Client (so the loop runs the same against the embedded store and a real API
server) and queue the events; the loop applies them to the :class:`ClusterCache`, and when
pods are waiting it runs a cycle:

1. snapshot — the core's node table, rewritten only in the rows of nodes that changed;
2. ``decide`` — pure;
3. apply — each binding is assumed in the cache, then written (``Binder``); a failed write
   forgets the assumption and the pod waits again. Pods left pending get PodScheduled=False,
   reason Unschedulable, with the core's message (written only when it changes), and are
   parked until the cluster changes in a way that could help them: a node added or changed
   (room, labels, taints, cordon), a pod deleted or finished, the pod itself changed — or,
   as kube-scheduler does, a periodic flush. Never a hot loop.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import mypyc_attr

from kubehpc.api import fields as F
from kubehpc.api.devices import allocate_pod
from kubehpc.api.errors import ApiError, Conflict, InternalError, NotFound
from kubehpc.controllers.scheduling.apply import (
    Binder,
    BindMode,
    mark_unschedulable,
    needs_unschedulable_update,
    record_event,
)
from kubehpc.controllers.scheduling.cache import DEFAULT_SCHEDULER, ClusterCache, pod_key
from kubehpc.controllers.scheduling.gangs import GangStep, group_of
from kubehpc.controllers.scheduling.informer import RELIST, Event, Informer, stop_all
from kubehpc.controllers.scheduling.planned import PlannedNodes
from kubehpc.sched import DeviceState, NodeTable, SchedulerConfig, Snapshot
from kubehpc.sched.devices import holders_of
from kubehpc.store.client import Client, write_batch

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# PriorityClasses first, so pods listed after them get their priority at once.
PLANNED_NODE_NO_FIT = "PlannedNodeNoFit"
WATCHED = (("scheduling.k8s.io/v1", "PriorityClass"), ("v1", "Node"), ("v1", "Pod"))
# A PodGroup let in by its queue (Pending -> Inqueue) or changed otherwise may free its parked pods.
POD_GROUPS = (("scheduling.volcano.sh/v1beta1", "PodGroup"), ("scheduling.x-k8s.io/v1alpha1", "PodGroup"))


@dataclass(frozen=True)
class SchedulerOptions:
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,)
    """Pods whose ``spec.schedulerName`` is one of these (empty counts as default-scheduler)
    are ours; cluster mode uses ("kubehpc",) beside a real kube-scheduler."""
    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    bind_mode: BindMode = BindMode.AUTO
    record_events: bool = True
    unschedulable_flush_s: float = 300.0
    """Parked pods get another look at least this often (kube-scheduler: 5 minutes)."""
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 10.0
    """A pod whose binding failed waits this long before the next try, doubling per failure."""
    idle_wait_s: float = 1.0
    watch_pod_groups: bool = False
    """Watch Volcano and coscheduling PodGroups, so a gang's parked pods get another look as soon
    as their group changes (the kinds must be served: the embedded plane serves them)."""


@dataclass(frozen=True)
class CycleReport:
    bound: int
    pending: int
    failed: int


# Subclassed outside the compiled modules: cluster mode's GatedScheduler (kube/gate.py).
@mypyc_attr(allow_interpreted_subclasses=True)
class Scheduler:
    def __init__(
        self,
        client: Client,
        options: SchedulerOptions | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.options = options or SchedulerOptions()
        self.clock = clock
        self.cache = ClusterCache(self.options.scheduler_names)
        self.binder = Binder(client, self.options.bind_mode)
        # Pods of a gang (Volcano / coscheduling PodGroup, Kueue group) are bound all or none.
        self.gangs = GangStep(client, self.cache)
        # Pods whose nodes admission chose (Kueue's topology assignment) are bound there.
        self.planned = PlannedNodes()
        # SimpleQueue: a put is one C call, where Queue takes a lock and notifies a condition.
        self._events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        watched = WATCHED + (POD_GROUPS if self.options.watch_pod_groups else ())
        # Read only: the cache and the steps read pods and nodes, and write through the client.
        self._informers = [Informer(client, av, kind, self._events, read_only=True) for av, kind in watched]
        self._table = NodeTable.build([])
        self._last_flush = clock()
        self._written: dict[str, str] = {}  # pod -> Unschedulable message last written
        self._stopped = threading.Event()
        self._worker: threading.Thread | None = None

    # ----------------------------------------------------------------- lifecycle

    def sync(self) -> None:
        """List every watched kind into the cache (the informers' first step)."""
        for informer in self._informers:
            items, _ = informer.list_now()
            self._apply(Event(informer.kind, RELIST, objects=items))

    def start(self, run_loop: bool = True) -> None:
        """List, start watching, and (unless ``run_loop`` is False, for tests that drive
        :meth:`step` themselves) run the loop on a thread."""
        for informer in self._informers:
            items, rv = informer.list_now()
            self._apply(Event(informer.kind, RELIST, objects=items))
            informer.start(rv)
        if run_loop:
            self._worker = threading.Thread(target=self._run, name="scheduler", daemon=True)
            self._worker.start()

    def stop(self) -> None:
        self._stopped.set()
        stop_all(self._informers)
        if self._worker is not None:
            self._worker.join(timeout=10)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.step(self.options.idle_wait_s)
            except Exception:  # keep scheduling; the next cycle starts from fresh state
                log.exception("scheduling cycle failed")
                self._stopped.wait(1.0)

    # ----------------------------------------------------------------- events

    def step(self, timeout: float = 0.0) -> CycleReport | None:
        """Apply queued events (waiting up to ``timeout`` for the first one) and run a cycle
        if any pod is ready for one."""
        retry_at = self.cache.next_backoff()
        if retry_at is not None:
            timeout = max(0.0, min(timeout, retry_at - self.clock()))
        self.drain(timeout)
        now = self.clock()
        if now - self._last_flush >= self.options.unschedulable_flush_s:
            self._last_flush = now
            self.cache.unpark_all()
        if not self.cache.active(now):
            return None
        return self.run_cycle()

    def drain(self, timeout: float = 0.0) -> int:
        handled = 0
        try:
            event = self._events.get(timeout=timeout) if timeout > 0 else self._events.get_nowait()
        except queue.Empty:
            return 0
        while True:
            self._apply(event)
            handled += 1
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return handled

    def _apply(self, event: Event) -> None:
        cache = self.cache
        if event.kind == "PodGroup":
            # The gang step reads groups from the client when it decides; here a change only
            # means the pods it parked deserve another look.
            cache.unpark_all()
            return
        if event.type == RELIST:
            self._replace(event)
            return
        obj = event.object or {}
        name = str(F.metadata(obj).get("name", ""))
        if event.kind == "Node":
            cache.delete_node(name) if event.type == "DELETED" else cache.put_node(obj)
        elif event.kind == "Pod":
            key = pod_key(obj)
            if event.type == "DELETED":
                cache.delete_pod(key)
                self.planned.forget(key)
            else:
                cache.put_pod(obj)
                self.planned.observe(key, obj)
        elif event.kind == "PriorityClass":
            cache.delete_class(name) if event.type == "DELETED" else cache.put_class(obj)

    def _replace(self, event: Event) -> None:
        cache = self.cache
        if event.kind == "Node":
            names = {str(F.metadata(o).get("name", "")) for o in event.objects}
            for gone in set(cache.nodes) - names:
                cache.delete_node(gone)
            for obj in event.objects:
                cache.put_node(obj)
        elif event.kind == "Pod":
            keys = {pod_key(o) for o in event.objects}
            for gone in (set(cache.waiting) | set(cache.charges)) - keys:
                cache.delete_pod(gone)
                self.planned.forget(gone)
            # Oldest first, so pods new to the cache arrive in creation order.
            for obj in sorted(event.objects, key=lambda o: str(F.metadata(o).get("creationTimestamp"))):
                cache.put_pod(obj)
                self.planned.observe(pod_key(obj), obj)
        elif event.kind == "PriorityClass":
            cache.classes.clear()
            for obj in event.objects:
                cache.put_class(obj)

    # ----------------------------------------------------------------- one cycle

    def snapshot(self) -> Snapshot:
        cache = self.cache
        dirty = cache.dirty
        upserts = [cache.node_info(n) for n in sorted(dirty) if n in cache.nodes]
        removals = [n for n in sorted(dirty) if n not in cache.nodes]
        self._table = self._table.with_changes(upserts, removals)
        dirty.clear()
        inventories = {name: e.inventory for name, e in cache.nodes.items() if e.inventory is not None}
        devices = None
        if inventories:
            devices = DeviceState(
                allocate=allocate_pod,
                inventories=inventories,
                holders={n: dict(cache.holders.get(n, {})) for n in inventories},
            )
        ready = self.planned.pin(cache.active(self.clock()), lambda pod: group_of(pod) is not None)
        pods = cache.interpod_pods(ready)
        pod_sets = cache.pod_sets(ready, with_identity=pods is not None)
        return Snapshot(self._table, pod_sets, self.options.config, devices, pods=pods)

    def run_cycle(self) -> CycleReport:
        cache = self.cache
        snapshot = self.snapshot()
        decisions = self.gangs.decide(snapshot, self.clock())
        shapes = {w.key: w.shape for w in cache.waiting.values()}
        failed = 0
        bound: list[tuple[str, Obj]] = []
        try:
            # The cycle's bindings and their events in one commit (on the embedded store).
            with write_batch(self.client):
                for binding in decisions.bindings:
                    key = binding.pod
                    waiting = cache.waiting.get(key)
                    if waiting is None:
                        continue
                    allocation = {container: list(ids) for container, ids in binding.devices}
                    holders = holders_of(allocation, shapes[key]) if allocation else Counter()
                    cache.assume(key, binding.node, holders)
                    self.planned.assumed(key, binding.node)
                    try:
                        self.binder.bind(waiting.obj, binding.node, binding.devices)
                    except ApiError as err:
                        failed += 1
                        self._forget(key, waiting.obj, err)
                        continue
                    bound.append((key, waiting.obj))
                    if self.options.record_events:
                        meta = F.metadata(waiting.obj)
                        message = (
                            f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} "
                            f"to {binding.node}"
                        )
                        record_event(self.client, waiting.obj, "Normal", "Scheduled", message, self.clock())
        except Exception as exc:
            # The commit failed and took every binding of the cycle with it: give their room
            # back and let those pods wait again.
            lost = InternalError(f"committing the cycle's bindings failed: {exc}")
            for key, pod in bound:
                self._forget(key, pod, lost)
            raise
        pending_keys: list[str] = []
        fell_back = self.planned.fall_back(key for pending in decisions.pending for key in pending.pods)
        for key, node in fell_back.items():
            self._planned_node_gone(key, node)
        for pending in decisions.pending:
            for key in pending.pods:
                if key in fell_back:
                    continue  # tried again at once, on any node of its flavor
                pending_keys.append(key)
                waiting = cache.waiting.get(key)
                if waiting is None or self._written.get(key) == pending.message:
                    continue
                if not needs_unschedulable_update(waiting.obj, pending.message):
                    self._written[key] = pending.message
                    continue
                try:
                    mark_unschedulable(self.client, waiting.obj, pending.message, self.clock())
                except ApiError as err:
                    log.info("could not mark %s unschedulable: %s", key, err)
                    continue
                # Remember what was written rather than storing the returned object: the watch
                # may still deliver older versions of the pod, and they must not look newer.
                self._written[key] = pending.message
                if self.options.record_events:
                    record_event(
                        self.client, waiting.obj, "Warning", "FailedScheduling", pending.message, self.clock()
                    )
        cache.park(pending_keys)
        for key in [k for k in self._written if k not in cache.waiting]:
            del self._written[key]
        return CycleReport(bound=len(bound), pending=len(pending_keys), failed=failed)

    def _planned_node_gone(self, key: str, node: str) -> None:
        """A pod's node chosen at admission does not fit it now: say so, and place it anew."""
        waiting = self.cache.waiting.get(key)
        if waiting is None:
            return
        message = (
            f"node {node} chosen at admission no longer fits the pod; "
            "placing it on another node of its flavor"
        )
        log.info("%s: %s", key, message)
        if self.options.record_events:
            record_event(self.client, waiting.obj, "Warning", PLANNED_NODE_NO_FIT, message, self.clock())

    def _forget(self, key: str, pod: dict[str, object], err: ApiError) -> None:
        """The binding failed: give the room back and let the pod wait again, as it is now."""
        self.planned.unassumed(key)
        log.info("binding %s failed: %s", key, err)
        meta = pod.get("metadata")
        current = None
        if isinstance(meta, dict) and not isinstance(err, NotFound):
            try:
                current = self.client.get("v1", "Pod", str(meta.get("name")), meta.get("namespace"))
            except ApiError:
                current = None
        if isinstance(err, Conflict) and current is not None and F.spec(current).get("nodeName"):
            # Someone (or an earlier try of ours) bound it already: account it as it is.
            self.cache.forget(key, None)
            self.cache.put_pod(current)
            return
        self.cache.forget(key, current)
        self.gangs.binding_refused(pod, self.clock())
        # After a conflict the cache holds the pod as it is now, so the next cycle may try again
        # at once; any other refusal waits, doubling, so a pod the API keeps refusing is no hot loop.
        if key in self.cache.waiting and not isinstance(err, Conflict):
            opts = self.options
            self.cache.back_off(key, self.clock(), opts.backoff_initial_s, opts.backoff_max_s)
