"""The admission loop: watch Kueue's objects, ask the pure core, write what it decided.

Informer threads list and watch ClusterQueues, LocalQueues, Cohorts, ResourceFlavors,
WorkloadPriorityClasses, Workloads, Namespaces (and, to check placement, Nodes and Pods) and
queue the events; one thread applies them to the :class:`AdmissionCache` and, when something
admission reads has changed, runs a cycle:

1. snapshot — ``build.snapshot_from_objects`` over the cache (assumed admissions included);
2. ``decide`` — pure;
3. apply — each admission is assumed in the cache, then written (status.admission, conditions
   QuotaReserved and Admitted); a failed write forgets the assumption and a retry cycle is
   scheduled. Victims get Evicted (reason Preempted) and Preempted; drained workloads Evicted.
   ClusterQueue and LocalQueue status follow. Explanations of pending workloads
   (QuotaReserved=False with the core's message, queue position, reason code) are written only
   when they change, in chunks after the admissions, so a deep queue never delays one.

Cycles run when something relevant changed, on a retry after a failed write, and on a slow
periodic flush — never in a hot loop.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import ApiError
from kubehpc.api.kinds.kueue.conversion import domains_to_slices
from kubehpc.api.kinds.kueue.workload import PENDING_REASON_ANNOTATION, POSITION_ANNOTATION
from kubehpc.api.quantity import resource_units
from kubehpc.controllers.job.clock import Clock, RealClock
from kubehpc.controllers.job.controller import EventSink
from kubehpc.controllers.job.workqueue import WRITE_BATCH, WRITE_BATCH_S
from kubehpc.controllers.kueue import cache as C
from kubehpc.controllers.kueue import constants as k
from kubehpc.controllers.kueue import workloads as W
from kubehpc.controllers.kueue.metrics import ACTIVE, INADMISSIBLE, SUCCESS, KueueMetrics
from kubehpc.controllers.kueue.queuestatus import (
    base_units,
    cluster_queue_status,
    local_queue_status,
    quantity_text,
    quota_cells,
)
from kubehpc.controllers.scheduling.informer import RELIST, Event, Informer, stop_all
from kubehpc.sched.admission.build import WorkloadMemo, snapshot_from_objects
from kubehpc.sched.admission.decisions import (
    Admission,
    AdmissionDecisions,
    Pending,
    PendingCode,
    Preemption,
)
from kubehpc.sched.admission.model import AdmissionConfig, AdmissionSnapshot
from kubehpc.sched.planned import HOSTNAME_LEVEL
from kubehpc.store.client import HANDED_OVER, ChunkedWrites, Client, PatchType
from kubehpc.store.events import EventRecorder, record_quietly

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Decide = Callable[[AdmissionSnapshot, float], AdmissionDecisions]

KUEUE_KINDS = (
    k.RESOURCE_FLAVOR,
    k.COHORT,
    k.CLUSTER_QUEUE,
    k.LOCAL_QUEUE,
    k.WORKLOAD_PRIORITY_CLASS,
    k.WORKLOAD,
)
# Kueue's reason for a workload that cannot even reach a ClusterQueue that would admit it.
_INADMISSIBLE_CODES = frozenset(
    {
        PendingCode.LOCAL_QUEUE_NOT_FOUND,
        PendingCode.CLUSTER_QUEUE_NOT_FOUND,
        PendingCode.CLUSTER_QUEUE_INACTIVE,
        PendingCode.LOCAL_QUEUE_STOPPED,
        PendingCode.NAMESPACE_NOT_SELECTED,
    }
)
NEVER_FITS = "NeverFits"
# Waiting only for their turn: the "active" pending_workloads of Kueue's metric. A workload held
# back by its ClusterQueue's backfill policy fits and only waits for the reservation ahead of it.
_WAITING_CODES = frozenset(
    {
        PendingCode.BEHIND_QUEUE_HEAD,
        PendingCode.NO_LONGER_FITS,
        PendingCode.PENDING_PREEMPTION,
        PendingCode.WAITS_FOR_RESERVATION,
    }
)


def core_decide(snapshot: AdmissionSnapshot, now: float) -> AdmissionDecisions:
    from kubehpc.sched.admission import decide  # the core, imported when first used

    return decide(snapshot, now)


@dataclass(frozen=True)
class AdmissionOptions:
    config: AdmissionConfig = field(default_factory=AdmissionConfig)
    check_nodes: bool = True
    """Watch Nodes and Pods and have the core check that admitted pods fit on nodes; False
    admits on quota alone, as Kueue does."""
    record_events: bool = True
    idle_wait_s: float = 1.0
    flush_s: float = 300.0
    """Everything gets another look at least this often, as Kueue's periodic requeue."""
    retry_initial_s: float = 1.0
    retry_max_s: float = 10.0
    """After a failed write, the next cycle comes this long later, doubling per failure."""
    explain_chunk: int = 500
    """Pending workloads whose explanation is (re)written per step."""
    position_refresh_s: float = 5.0
    """A pending workload's position alone (same reason) is rewritten at most this often."""
    batch_s: float = 0.0
    """Cycles start at most this often (wall seconds): a cycle looks at every workload, so under
    a stream of changes one cycle per batch replaces one per change. 0: a cycle per step."""
    pause_per_cycle_s: float = 1.0
    """With ``batch_s``: after a cycle, the next waits at least this many times as long as that
    one took. A cycle's cost grows with the number of workloads held and queued; under a steady
    stream of changes this keeps the loop to about half of the interpreter at most, and each
    cycle decides for everything that arrived meanwhile, instead of cycles back to back that
    each re-read every workload for a few new ones."""


@dataclass(frozen=True)
class CycleReport:
    admitted: int = 0
    preempted: int = 0
    evicted: int = 0
    pending: int = 0
    failed: int = 0
    commits: int = 0  # the chunks the cycle's writes were committed in


@dataclass
class _Explanation:
    key: str
    uid: str
    reason: str
    message: str
    position: int
    code: str


class AdmissionLoop:
    def __init__(
        self,
        client: Client,
        options: AdmissionOptions | None = None,
        *,
        clock: Clock | None = None,
        metrics: KueueMetrics | None = None,
        events: EventSink | None = None,
        decide: Decide = core_decide,
        cpu_clock: Callable[[], float] = time.thread_time,
    ) -> None:
        self.client = client
        # The pause after a cycle follows the CPU the cycle itself took, this thread's: its wall
        # time also counts the other threads that ran meanwhile (more of them now that a cycle
        # commits in chunks and yields between them), and pacing by it starved admission.
        self.cpu_clock = cpu_clock
        self.options = options or AdmissionOptions()
        self.clock = clock or RealClock()
        self.metrics = metrics
        self.events: EventSink = events or EventRecorder(client, k.COMPONENT).record
        self.decide = decide
        self.cache = C.AdmissionCache()
        self._memo = WorkloadMemo()  # workloads unchanged since the last cycle are not rebuilt
        # SimpleQueue: a put and a get are one C call each; Queue's run interpreted around a Condition.
        self._queue: queue.SimpleQueue[Event] = queue.SimpleQueue()
        watched = [(k.KUEUE_API_VERSION, kind) for kind in KUEUE_KINDS] + [("v1", C.NAMESPACE)]
        if self.options.check_nodes:
            watched += [("v1", C.NODE), ("v1", C.POD)]
        self._watched = watched
        self._informers = self._new_informers()
        self._backlog: list[_Explanation] = []
        self._position_written: dict[str, float] = {}  # workload key -> when (clock seconds)
        self._retry_at: float | None = None
        self._failures = 0
        self._last_flush = self._now()
        self._last_cycle = 0.0  # time.monotonic() when the last cycle ended
        self._last_cycle_s = 0.0  # the CPU seconds it took (this thread's)
        self._waiting = True  # the last cycle left workloads pending (or none ran yet)
        self._stopped = threading.Event()
        self._worker: threading.Thread | None = None

    def _new_informers(self) -> list[Informer]:
        # The cache only reads what it is sent; every write starts from a copy (``_copy``).
        return [Informer(self.client, av, kind, self._queue, read_only=True) for av, kind in self._watched]

    def _now(self) -> float:
        return self.clock.now().timestamp()

    # --- lifecycle ---------------------------------------------------------------------------

    def sync(self) -> None:
        """List every watched kind into the cache (tests call this instead of watching)."""
        for informer in self._informers:
            items, _ = informer.list_now()
            self._apply_event(Event(informer.kind, RELIST, objects=items))

    def start(self, run_loop: bool = True) -> None:
        for informer in self._informers:
            items, rv = informer.list_now()
            self._apply_event(Event(informer.kind, RELIST, objects=items))
            informer.start(rv)
        if run_loop:
            self._worker = threading.Thread(target=self._run, name="kueue-admission", daemon=True)
            self._worker.start()

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set (the control plane's controller-loop signature). May be
        called again after it returned or raised: it lists and watches afresh."""
        self._stopped.clear()
        self._informers = self._new_informers()
        try:
            self.start(run_loop=False)
            while not stop.is_set() and not self._stopped.is_set():
                try:
                    self.step(self.options.idle_wait_s)
                except Exception:
                    log.exception("admission cycle failed")
                    self._retry_later()  # the cycle's changes are not lost: look again soon
        finally:
            self.stop()

    def stop(self) -> None:
        self._stopped.set()
        stop_all(self._informers)
        if self._worker is not None and self._worker is not threading.current_thread():
            self._worker.join(timeout=10)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.step(self.options.idle_wait_s)
            except Exception:  # keep admitting; the next cycle starts from the cache as it is
                log.exception("admission cycle failed")
                self._retry_later()

    # --- events ------------------------------------------------------------------------------

    def step(self, timeout: float = 0.0) -> CycleReport | None:
        """Apply queued events (waiting up to ``timeout`` for the first), then run a cycle if
        one is due, else write the next chunk of explanations."""
        now = self._now()
        if self._retry_at is not None:
            timeout = max(0.0, min(timeout, self.clock.wall_seconds(self._retry_at - now)))
        if self._backlog:
            timeout = 0.0
        self.drain(timeout)
        now = self._now()
        if now - self._last_flush >= self.options.flush_s:
            self._last_flush = now
            self.cache.dirty = True
        if self._retry_at is not None and now >= self._retry_at:
            self._retry_at = None
            self.cache.dirty = True
        if self.cache.dirty or (self.cache.room_dirty and self._waiting):
            wait = self._cycle_gap() - (time.monotonic() - self._last_cycle)
            if wait > 0:
                time.sleep(wait)  # let more changes arrive: they cost nothing extra in one cycle
                self.drain()
            started = self.cpu_clock()
            try:
                return self.run_cycle()
            finally:
                self._last_cycle = time.monotonic()
                self._last_cycle_s = self.cpu_clock() - started
        if self._backlog:
            self._explain_some()
        return None

    def _cycle_gap(self) -> float:
        """Wall seconds from the end of one cycle to the start of the next, at least."""
        if self.options.batch_s <= 0:
            return 0.0
        return max(self.options.batch_s, self.options.pause_per_cycle_s * self._last_cycle_s)

    def drain(self, timeout: float = 0.0) -> int:
        handled = 0
        try:
            event = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return 0
        while True:
            self._apply_event(event)
            handled += 1
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                return handled

    def _apply_event(self, event: Event) -> None:
        if event.type == RELIST:
            self.cache.replace(event.kind, event.objects)
        elif event.object is None:
            return
        elif event.type == "DELETED":
            self.cache.delete(event.kind, event.object)
        else:
            self.cache.put(event.kind, event.object)

    def _retry_later(self) -> None:
        self._failures += 1
        delay = min(self.options.retry_initial_s * 2.0 ** (self._failures - 1), self.options.retry_max_s)
        due = self._now() + delay
        self._retry_at = due if self._retry_at is None else min(self._retry_at, due)

    # --- one cycle ---------------------------------------------------------------------------

    def snapshot(self) -> AdmissionSnapshot:
        cache = self.cache
        return snapshot_from_objects(
            cluster_queues=cache.values(C.CLUSTER_QUEUE),
            cohorts=cache.values(C.COHORT),
            resource_flavors=cache.values(C.RESOURCE_FLAVOR),
            local_queues=cache.values(C.LOCAL_QUEUE),
            workloads=cache.values(C.WORKLOAD),
            namespaces=cache.values(C.NAMESPACE),
            table=cache.node_table() if self.options.check_nodes else None,
            config=self.options.config,
            memo=self._memo,
        )

    def run_cycle(self) -> CycleReport:
        started = time.perf_counter()
        self.cache.dirty = self.cache.room_dirty = False
        now = self.clock.now()
        decisions = self.decide(self.snapshot(), now.timestamp())
        self._waiting = bool(decisions.pending)
        failed_before = self._failures
        try:
            # A commit (and a wake-up per watcher) per chunk of the cycle's results, not per
            # write; chunks, not one batch, so that other writers wait for the store's lock a
            # chunk at most (a cycle of 15,000 Jobs admits hundreds, ~0.3 ms each). Bounded as
            # the controllers' work queues bound their batches.
            with ChunkedWrites(self.client, WRITE_BATCH, WRITE_BATCH_S) as chunks:
                admitted = 0
                for a in decisions.admissions:
                    admitted += self._admit(a, now)
                    chunks.done_one()
                waiting = decisions.pending_by_key() if decisions.preemptions else {}
                preempted = 0
                for d in decisions.preemptions:
                    preempted += self._preempt(d, waiting, now)
                    chunks.done_one()
                evicted = 0
                for e in decisions.evictions:
                    evicted += self._evict(e.workload, e.uid, e.reason, e.message, now)
                    chunks.done_one()
                self._write_queue_status(decisions, now)
                self._backlog = [
                    _Explanation(p.workload, p.uid, _reason(p), p.message, p.position, _code(p))
                    for p in sorted(decisions.pending, key=lambda p: (p.position < 0, p.position, p.workload))
                ]
                self._explain_some()
        except Exception:
            # The commit failed and took every write of the cycle with it: the cache holds
            # their replies, so read everything again before the next cycle.
            self.sync()
            raise
        failed = self._failures - failed_before
        if not failed:
            self._failures = 0
        self._observe(decisions, admitted, time.perf_counter() - started)
        return CycleReport(admitted, preempted, evicted, len(decisions.pending), failed, chunks.chunks)

    # --- admissions --------------------------------------------------------------------------

    def _admit(self, decision: Admission, now: datetime) -> int:
        cache = self.cache
        current = cache.objects[C.WORKLOAD].get(decision.workload)
        if current is None or F.metadata(current).get("uid") != decision.uid:
            return 0
        wl = W.status_copy(current)
        W.set_quota_reservation(wl, admission_of(decision), now)
        cache.assume(decision.workload, wl)
        try:
            written = self.client.update_status(wl, HANDED_OVER)  # its own status; cached read-only
        except ApiError as err:
            log.info("admitting %s failed: %s", decision.workload, err)
            cache.forget(decision.workload)
            self._retry_later()
            return 0
        cache.put(C.WORKLOAD, written)
        self._position_written.pop(decision.workload, None)
        queued = W.queued_since(current)
        waited = max(0.0, (now - queued).total_seconds()) if queued is not None else 0.0
        if self.metrics is not None:
            self.metrics.child(self.metrics.admitted_workloads_total, decision.cluster_queue).inc()
            self.metrics.child(self.metrics.admission_wait_time, decision.cluster_queue).observe(waited)
        self._event(
            written,
            "Normal",
            k.EVENT_QUOTA_RESERVED,
            f"Quota reserved in ClusterQueue {decision.cluster_queue}, "
            f"wait time since queued was {waited:.0f}s",
        )
        self._event(
            written,
            "Normal",
            k.EVENT_ADMITTED,
            f"Admitted by ClusterQueue {decision.cluster_queue}, wait time since reservation was 0s",
        )
        return 1

    # --- preemptions and evictions -----------------------------------------------------------

    def _preempt(self, decision: Preemption, waiting: dict[str, Pending], now: datetime) -> int:
        preemptor = self.cache.objects[C.WORKLOAD].get(decision.preemptor) or {}
        job_uid = F.labels(preemptor).get(k.JOB_UID_LABEL, "")
        reason = str(decision.reason)
        message = W.preemption_message(decision.preemptor_uid, str(job_uid), reason)
        done = self._evict(
            decision.victim, decision.victim_uid, k.REASON_EVICTED_BY_PREEMPTION, message, now, reason
        )
        if done and self.metrics is not None:
            pending = waiting.get(decision.preemptor)
            preempting = pending.cluster_queue if pending is not None else decision.victim_cluster_queue
            self.metrics.child(self.metrics.preempted_workloads_total, preempting, reason).inc()
        return done

    def _evict(
        self, key: str, uid: str, reason: str, message: str, now: datetime, preempted: str = ""
    ) -> int:
        current = self.cache.objects[C.WORKLOAD].get(key)
        if current is None or F.metadata(current).get("uid") != uid:
            return 0
        wl = W.status_copy(current)
        changed = W.set_evicted(wl, reason, message, now)
        if preempted:
            changed = W.set_preempted(wl, preempted, message, now) or changed
        if not changed:
            return 0
        try:
            written = self.client.update_status(wl, HANDED_OVER)  # its own status; cached read-only
        except ApiError as err:
            log.info("evicting %s failed: %s", key, err)
            self._retry_later()
            return 0
        self.cache.put(C.WORKLOAD, written)
        self._event(written, "Normal", k.EVENT_PREEMPTED if preempted else k.EVICTED, message)
        return 1

    # --- explanations of pending workloads ---------------------------------------------------

    def _explain_some(self) -> None:
        chunk, self._backlog = (
            self._backlog[: self.options.explain_chunk],
            self._backlog[self.options.explain_chunk :],
        )
        now = self.clock.now()
        for item in chunk:
            self._explain(item, now)

    def _explain(self, item: _Explanation, now: datetime) -> None:
        current = self.cache.objects[C.WORKLOAD].get(item.key)
        if current is None or F.metadata(current).get("uid") != item.uid:
            return
        if W.has_quota_reservation(current):
            return  # admitted (or still holding quota) since the decision
        wl = W.status_copy(current)
        if W.unset_quota_reservation(wl, item.reason, item.message, now):
            try:
                current = self.client.update_status(wl, HANDED_OVER)  # its own status (status_copy)
            except ApiError as err:
                log.info("writing why %s waits failed: %s", item.key, err)
                self._retry_later()
                return
            self.cache.put(C.WORKLOAD, current)
            if item.position <= 0:
                # Heads only (and workloads in no queue), as Kueue, which tries only heads: an
                # event per waiting workload of a deep queue would flood the event log.
                self._event(current, "Warning", k.EVENT_PENDING, item.message)
        annotations = F.annotations(current)
        patch: dict[str, str | None] = {}
        if annotations.get(PENDING_REASON_ANNOTATION) != item.code:
            patch[PENDING_REASON_ANNOTATION] = item.code
        position = str(item.position) if item.position >= 0 else None
        if annotations.get(POSITION_ANNOTATION) != position:
            last = self._position_written.get(item.key)
            fresh = last is not None and now.timestamp() - last < self.options.position_refresh_s
            if patch or not fresh or position is None:
                patch[POSITION_ANNOTATION] = position  # None removes it
        if not patch:
            return
        try:
            written = self.client.patch(
                k.KUEUE_API_VERSION,
                k.WORKLOAD,
                str(current["metadata"]["name"]),
                {"metadata": {"annotations": patch}},
                PatchType.MERGE,
                namespace=current["metadata"].get("namespace"),
            )
        except ApiError as err:
            log.info("writing the queue position of %s failed: %s", item.key, err)
            return
        if POSITION_ANNOTATION in patch:
            self._position_written[item.key] = now.timestamp()
        self.cache.put(C.WORKLOAD, written)

    # --- queue status ------------------------------------------------------------------------

    def _write_queue_status(self, decisions: AdmissionDecisions, now: datetime) -> None:
        cache = self.cache
        tally = cache.tally  # holders are counted as workloads change; pending is per decision
        tally.pending = Counter()
        for pending in decisions.pending:
            wl = cache.objects[C.WORKLOAD].get(pending.workload)
            if wl is not None:
                namespace = F.metadata(wl).get("namespace") or "default"
                tally.pending[f"{namespace}/{(wl.get('spec') or {}).get('queueName') or ''}"] += 1
        admitted = tally.admitted_in
        states = {s.name: s for s in decisions.cluster_queues}
        for name, state in states.items():
            cq = cache.objects[C.CLUSTER_QUEUE].get(name)
            if cq is not None:
                self._write_status(
                    C.CLUSTER_QUEUE, cq, cluster_queue_status(cq, state, admitted.get(name, 0), now)
                )
        for lq in cache.values(C.LOCAL_QUEUE):
            cq_name = str(F.spec(lq).get("clusterQueue") or "")
            backing = cache.objects[C.CLUSTER_QUEUE].get(cq_name)
            cq_state = states.get(cq_name)
            active = cq_state.active if cq_state is not None else False
            self._write_status(C.LOCAL_QUEUE, lq, local_queue_status(lq, backing, active, tally, now))

    def _write_status(self, kind: str, obj: Obj, status: Obj) -> None:
        if _without_times(status) == _without_times(F.status(obj)):
            return
        try:
            # The status is built afresh for this write (queuestatus: _kept_copy and new lists).
            written = self.client.update_status({**obj, "status": status}, HANDED_OVER)
        except ApiError as err:
            log.info("writing the status of %s %s failed: %s", kind, C.object_key(obj), err)
            self._retry_later()
            return
        self.cache.put(kind, written)

    # --- metrics and events ------------------------------------------------------------------

    def _observe(self, decisions: AdmissionDecisions, admitted: int, seconds: float) -> None:
        m = self.metrics
        if m is None:
            return
        if decisions.pending or decisions.admissions:
            result = SUCCESS if admitted else INADMISSIBLE
            m.child(m.admission_attempts_total, result).inc()
            m.child(m.admission_attempt_duration, result).observe(seconds)
        pending: dict[tuple[str, str], int] = {}
        for p in decisions.pending:
            if p.cluster_queue:
                status = ACTIVE if p.reason.code in _WAITING_CODES else INADMISSIBLE
                pending[(p.cluster_queue, status)] = pending.get((p.cluster_queue, status), 0) + 1
        running = self.cache.tally.running_in
        cells: set[tuple[str, str, str]] = set()
        for state in decisions.cluster_queues:
            name = state.name
            for status in (ACTIVE, INADMISSIBLE):
                m.set_gauge(m.pending_workloads, pending.get((name, status), 0), name, status)
            m.set_gauge(m.admitted_active_workloads, running.get(name, 0), name)
            for status in ("pending", "active", "terminating"):
                current = "active" if state.active else "pending"
                m.set_gauge(m.cluster_queue_status, 1 if status == current else 0, name, status)
            usage = {(f, r): a for f, r, a in state.usage}
            cq_obj = self.cache.objects[C.CLUSTER_QUEUE].get(name) or {}
            for flavor, resource, nominal in quota_cells(cq_obj):
                cells.add((name, flavor, resource))
                m.set_gauge(
                    m.nominal_quota,
                    base_units(resource, resource_units(resource, nominal)),
                    name,
                    flavor,
                    resource,
                )
                used = base_units(resource, usage.get((flavor, resource), 0))
                m.set_gauge(m.resource_reservation, used, name, flavor, resource)
                m.set_gauge(m.resource_usage, used, name, flavor, resource)
        m.forget_gone((s.name for s in decisions.cluster_queues), cells)

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        if not self.options.record_events:
            return
        record_quietly(self.events, obj, type_, reason, message)


# --- helpers --------------------------------------------------------------------------------------


def admission_of(decision: Admission) -> Obj:
    """``status.admission`` for an admission decision, as Kueue writes it. The nodes the core
    chose for the pods are Kueue's topology assignment at the hostname level, so TAS tooling
    reads them and the scheduler binds the pods there."""
    assignments = []
    for ps in decision.pod_sets:
        assignment: Obj = {
            "name": ps.admission.name,
            "flavors": dict(ps.admission.flavors),
            "resourceUsage": {r: quantity_text(r, a) for r, a in ps.admission.usage},
            "count": ps.admission.count,
        }
        if ps.nodes:
            assignment["topologyAssignment"] = domains_to_slices(
                {
                    "levels": [HOSTNAME_LEVEL],
                    "domains": [{"values": [node], "count": n} for node, n in ps.nodes if n > 0],
                }
            )
        assignments.append(assignment)
    return {"clusterQueue": decision.cluster_queue, "podSetAssignments": assignments}


def _reason(p: Pending) -> str:
    return k.REASON_INADMISSIBLE if p.reason.code in _INADMISSIBLE_CODES else k.REASON_PENDING


def _code(p: Pending) -> str:
    """The reason code shown by ``kubehpc get workloads``: NeverFits says it all when true."""
    return NEVER_FITS if p.never_fits else str(p.reason.code)


def _without_times(status: Obj) -> Obj:
    out = dict(status)
    out["conditions"] = [
        {key: v for key, v in c.items() if key != "lastTransitionTime"}
        for c in F.object_list(status, "conditions")
    ]
    return out
