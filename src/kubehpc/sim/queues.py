"""``kubehpc sim --queues FILE``: the replay driven by Kueue's queues and quotas, through the
admission core itself (``sched.admission.decide``) — no rule of Kueue's is copied here.

The file holds ResourceFlavors, Cohorts, ClusterQueues and LocalQueues as a user applies them,
and optionally Kueue's own ``Configuration`` (``config.kueue.x-k8s.io``), of which the replay
honours ``fairSharing`` (``enable``, ``preemptionStrategies``): the admission core then orders
and preempts by share, as Kueue does with it on.
Each trace job becomes a Workload of one pod (its whole request) in the LocalQueue named by its
queue (namespace ``default``), with the job's priority, submit time as creation time and the
replay's runtime estimate. At every instant with an event — finishes first, then submits —
the core decides once on the snapshot of every running and waiting workload; what it admits
starts then, and holds its quota until it ends; what it preempts goes back to its queue (and
runs again from the start when admitted again).

``--policy`` maps onto the ClusterQueues: ``fcfs`` keeps Kueue's behaviour (each ClusterQueue's
queueingStrategy as written), ``easy`` / ``conservative`` become the scheduler config's backfill
policy (``sched/admission/reservations.py``; a ClusterQueue's ``kubehpc.io/backfill`` annotation
still wins). The quotas are the limit: the pool (``--procs`` / ``--cluster``) only drops jobs
larger than the machine and scales utilisation.

Each decision looks at every workload, so this replay is much slower than the single-pool one
(``engine.py``): meant for what-if questions on queues, not for year-long traces.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from kubehpc.controllers.kueue.configuration import (
    CONFIG_GROUP,
    CONFIGURATION,
    KEYS_WITHOUT_EFFECT,
    ConfigurationError,
    check_configuration,
    is_configuration,
)
from kubehpc.controllers.kueue.configuration import admission_config as kueue_admission_config
from kubehpc.sched.admission import AdmissionConfig, decide
from kubehpc.sched.admission.build import snapshot_from_objects
from kubehpc.sched.admission.model import NO_BACKFILL, AdmissionSnapshot, PodSet, Workload
from kubehpc.sched.backfill import Policy
from kubehpc.sched.model import PODS, PodShape
from kubehpc.sim.engine import SimOptions, SimResult
from kubehpc.sim.estimates import EstimateSource, run_times, static_estimates
from kubehpc.sim.traces.common import IntArray, Trace, TraceError

QUEUE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue")
# A replay gives every job a queue, so the keys on jobs without one have nothing to act on either.
REPLAY_KEYS_WITHOUT_EFFECT = KEYS_WITHOUT_EFFECT | {
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
}
NAMESPACE = "default"
NO_LOCAL_QUEUE = "its queue has no LocalQueue in --queues"
NEVER_ADMITTED = "never admitted (does not fit its ClusterQueue's quota)"


def read_queues(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """The queue manifests of ``path`` by kind; anything else in it is an error naming it."""
    p = Path(path)
    try:
        docs = [d for d in yaml.safe_load_all(p.read_text()) if d is not None]
    except OSError as exc:
        raise TraceError(f"--queues {p}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise TraceError(f"--queues {p}: not YAML: {exc}") from None
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in (*QUEUE_KINDS, CONFIGURATION)}
    for i, doc in enumerate(docs, 1):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if is_configuration(doc):
            if out[CONFIGURATION]:
                raise TraceError(f"--queues {p}: document {i}: a second Kueue Configuration")
            try:
                check_configuration(
                    doc,
                    f"--queues {p}: document {i} (Configuration)",
                    REPLAY_KEYS_WITHOUT_EFFECT,
                    "is not simulated (the replay honours fairSharing only)",
                )
            except ConfigurationError as exc:
                raise TraceError(str(exc)) from None
            out[CONFIGURATION].append(doc)
            continue
        if kind not in QUEUE_KINDS:
            raise TraceError(
                f"--queues {p}: document {i}: kind {kind!r} is not one of "
                f"{', '.join(QUEUE_KINDS)} or Kueue's {CONFIGURATION} ({CONFIG_GROUP}...)"
            )
        if not (doc.get("metadata") or {}).get("name"):
            raise TraceError(f"--queues {p}: document {i} ({kind}): metadata.name is missing")
        doc = dict(doc)
        if kind == "LocalQueue":
            doc["metadata"] = {"namespace": NAMESPACE, **doc["metadata"]}
        out[kind].append(doc)
    if not out["ClusterQueue"] or not out["LocalQueue"]:
        raise TraceError(f"--queues {p}: needs at least one ClusterQueue and one LocalQueue")
    return out


def admission_config(queues: dict[str, list[dict[str, Any]]], policy: Policy) -> AdmissionConfig:
    """The scheduler config of a replay: the backfill of ``--policy``, and Kueue's fair sharing
    when the file's Configuration enables it (with its preemption strategies, or Kueue's
    default pair when it names none)."""
    backfill = NO_BACKFILL if policy is Policy.FCFS else str(policy)
    return kueue_admission_config(next(iter(queues.get(CONFIGURATION) or ()), None), backfill=backfill)


def _base_snapshot(queues: dict[str, list[dict[str, Any]]], config: AdmissionConfig) -> AdmissionSnapshot:
    return snapshot_from_objects(
        cluster_queues=queues["ClusterQueue"],
        cohorts=queues["Cohort"],
        resource_flavors=queues["ResourceFlavor"],
        local_queues=queues["LocalQueue"],
        workloads=[],
        namespaces=[],
        config=config,
    )


def _requests(trace: Trace, row: IntArray) -> tuple[tuple[str, int], ...]:
    """A job's request in kubehpc's resource units (a processor is 1000 millicores)."""
    out = []
    for resource, amount in zip(trace.resources, row.tolist(), strict=True):
        if amount:
            units = amount * (1000 // trace.whole_unit) if resource == "cpu" else amount
            out.append((resource, int(units)))
    return tuple(sorted(out))


def _workload(trace: Trace, i: int, estimate: float, queue_name: str, cluster_queue: str) -> Workload:
    requests = _requests(trace, trace.sizes[i])
    shape = PodShape(tuple(sorted((*requests, (PODS, 1)))))
    return Workload(
        namespace=NAMESPACE,
        name=f"job-{int(trace.ids[i])}",
        uid=f"{i:012d}",  # ties (same priority and submit time) go in trace order
        queue_name=queue_name,
        priority=int(trace.priority[i]),
        created=float(trace.submit[i]),
        pod_sets=(PodSet("main", 1, requests, shape),),
        cluster_queue=cluster_queue,
        runtime_estimate=estimate if math.isfinite(estimate) else None,
    )


def simulate_queues(
    trace: Trace, capacity: IntArray, queues: dict[str, list[dict[str, Any]]], options: SimOptions
) -> SimResult:
    wall0 = time.perf_counter()
    trace = trace.fit_to(capacity)
    policy = options.policy
    if not isinstance(policy, Policy):
        raise ValueError(f"policy {policy} needs the node-level replay (--placement nodes)")
    config = admission_config(queues, policy)
    base = _base_snapshot(queues, config)
    runs, notes = run_times(trace, options.kill_at_limit)
    # The per-user predictor needs finishes in order; the queue replay plans with the static one.
    source = EstimateSource.REQUESTED if options.estimate is EstimateSource.PREDICTOR else options.estimate
    estimate, est_notes = static_estimates(trace, runs, source)
    notes.update(est_notes)
    n = len(trace)
    keep = np.ones(n, dtype=np.bool_)
    names: list[str] = []
    cqs: list[str] = []
    for i in range(n):
        code = int(trace.queues[i])
        name = trace.queue_names[code] if 0 <= code < len(trace.queue_names) else "default"
        lq = base.local_queues.get(f"{NAMESPACE}/{name}")
        names.append(name)
        cqs.append(lq.cluster_queue if lq is not None else "")
        if lq is None:
            keep[i] = False
    if not keep.all():
        skipped = Counter(trace.skipped)
        skipped[NO_LOCAL_QUEUE] += int((~keep).sum())
        index = np.flatnonzero(keep)
        trace = trace.select(keep, skipped=skipped)
        runs, estimate = runs[keep], estimate[keep]
        names = [names[i] for i in index]
        cqs = [cqs[i] for i in index]
        n = len(trace)
    workloads = [_workload(trace, i, float(estimate[i]), names[i], cqs[i]) for i in range(n)]
    index_of = {wl.key: i for i, wl in enumerate(workloads)}
    sizes = trace.sizes
    start = np.full(n, np.nan)
    backfilled = np.zeros(n, dtype=np.bool_)
    used = np.zeros(len(capacity), dtype=np.int64)
    waiting: dict[int, Workload] = {}
    holding: dict[int, Workload] = {}
    ends: list[tuple[float, int, int]] = []  # (end, job, generation): a preempted run is stale
    generation = [0] * n
    ev_t: list[float] = []
    ev_used: list[IntArray] = []
    ev_q: list[int] = []
    decisions = 0
    policy_seconds = 0.0
    submit = trace.submit.tolist()
    i = 0
    while i < n or ends:
        t_sub = submit[i] if i < n else math.inf
        now = ends[0][0] if ends and ends[0][0] <= t_sub else t_sub
        while ends and ends[0][0] == now:
            _, j, gen = heapq.heappop(ends)
            if gen == generation[j] and j in holding:
                del holding[j]
                used -= sizes[j]
        while i < n and submit[i] == now:
            waiting[i] = workloads[i]
            i += 1
        if waiting:
            snapshot = replace(base, workloads=(*holding.values(), *waiting.values()))
            t0 = time.perf_counter()
            d = decide(snapshot, now)
            policy_seconds += time.perf_counter() - t0
            decisions += 1
            for victim in d.preemptions:
                j = index_of[victim.victim]
                if holding.pop(j, None) is not None:
                    used -= sizes[j]
                    generation[j] += 1
                    waiting[j] = replace(workloads[j], requeued_at=now)
            admitted = [index_of[a.workload] for a in d.admissions]
            first_waiting: dict[str, tuple[int, float, str]] = {}
            for p in d.pending:
                wl = waiting.get(index_of[p.workload])
                if wl is not None and p.cluster_queue:
                    order = (-wl.priority, wl.queue_time, wl.uid)
                    first_waiting[p.cluster_queue] = min(first_waiting.get(p.cluster_queue, order), order)
            for a, j in zip(d.admissions, admitted, strict=True):
                wl = waiting.pop(j)
                ahead = first_waiting.get(a.cluster_queue)
                backfilled[j] = ahead is not None and ahead < (-wl.priority, wl.queue_time, wl.uid)
                start[j] = now
                holding[j] = replace(
                    wl,
                    reserved=tuple(ps.admission for ps in a.pod_sets),
                    reserved_in=a.cluster_queue,
                    reserved_at=now,
                    requeued_at=0.0,
                )
                used += sizes[j]
                heapq.heappush(ends, (now + float(runs[j]), j, generation[j]))
        ev_t.append(now)
        ev_used.append(used.copy())
        ev_q.append(len(waiting))
        if i >= n and not ends:
            break
    if waiting:
        keep = np.isfinite(start)
        trace = trace.select(keep, skipped=Counter({**trace.skipped, NEVER_ADMITTED: len(waiting)}))
        start, runs, estimate, backfilled = start[keep], runs[keep], estimate[keep], backfilled[keep]
    return SimResult(
        trace=trace,
        options=options,
        capacity=capacity,
        start=start,
        run=runs,
        estimate=estimate,
        backfilled=backfilled,
        predicted_start=np.full(len(start), np.nan),
        event_times=np.array(ev_t, dtype=np.float64),
        event_used=np.array(ev_used, dtype=np.int64).reshape(len(ev_t), len(capacity)),
        event_queue=np.array(ev_q, dtype=np.int64),
        decisions=decisions,
        policy_seconds=policy_seconds,
        wall_seconds=time.perf_counter() - wall0,
        notes=notes,
    )
