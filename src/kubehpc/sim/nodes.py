"""The node-level replay: every pod of every job on a real node of the cluster config.

The pool replay (``engine.py``) sums the cluster into one bin per resource, so a job's whole
request starts at once wherever the total allows. Here the cluster config's own nodes (their
allocatable, labels and taints, as ``kubehpc up`` registers them) form a ``sched.NodeTable``;
each waiting job becomes a ``sched.gang.Gang`` of its pod sets, with the topology request each
pod set makes; and ``sched.gang.decide_gangs`` — the function the live gang scheduler calls —
decides which start, each whole or not at all. This module keeps the books only: the clock,
the queue, and the node usage that the core charges on a start and that a finish gives back,
exactly the pods the job held.

Policies (the queue order is the pool replay's: priority, then submit, then file order):

* ``fcfs``: the queue in strict order. The core is asked about the head; while it starts, about
  the next one; the first job that does not fit blocks every job behind it.
* ``first-fit``: the live scheduler's rule. One call of the core over every waiting job: each
  that fits starts, in queue order, and a large job may wait behind smaller ones for ever.

Backfill (``easy``, ``conservative``) needs reservations on nodes and domains, which the core
does not compute (``sched.backfill`` plans on pools); the node replay refuses them.

The nodes and topology levels come from ``sim/nodecluster.py``.
"""

from __future__ import annotations

import bisect
import heapq
import time
from collections import Counter
from collections.abc import Callable, Mapping

import numpy as np

from kubehpc.sched.backfill import Policy
from kubehpc.sched.gang import Gang, GangOptions, GangPlacement, GangPodSet, decide_gangs
from kubehpc.sched.model import PODS, PodShape, SchedulerConfig
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.placement import Usage, charge
from kubehpc.sched.topology import Mode, TopologyRequest, TopologyTree
from kubehpc.sim.engine import NodePolicy, Placement, SimOptions, SimResult
from kubehpc.sim.estimates import EstimateSource, run_times, static_estimates
from kubehpc.sim.nodecluster import NodeCluster
from kubehpc.sim.traces.common import IntArray, JobPods, PodSetSpec, Trace, TraceError

NEVER_FITS = "pods never fit on the nodes (or in one domain of the required level)"
"""Skip reason: even on the empty cluster the core cannot place the job whole."""
TREE = "cluster"
POLICIES: tuple[Policy | NodePolicy, ...] = (Policy.FCFS, NodePolicy.FIRST_FIT)

Held = Mapping[int, list[tuple[PodShape, IntArray]]]
"""Running job (row of the replayed trace) -> per pod set, its shape and the node of each pod."""
Observer = Callable[[float, NodeTable, Usage, Held], None]


def _request(spec: PodSetSpec) -> TopologyRequest | None:
    if spec.required_topology is not None:
        return TopologyRequest(Mode.REQUIRED, spec.required_topology)
    if spec.preferred_topology is not None:
        return TopologyRequest(Mode.PREFERRED, spec.preferred_topology)
    return None


def _check_levels(pods: tuple[JobPods, ...], cluster: NodeCluster, tree: TopologyTree) -> None:
    for job in pods:
        for k, spec in enumerate(job.pod_sets):
            for field, level in (
                ("requiredTopology", spec.required_topology),
                ("preferredTopology", spec.preferred_topology),
            ):
                if level is None:
                    continue
                where = f"{job.where}.podSets[{k}].{field} (job {job.name}): {level!r}"
                if level not in cluster.levels:
                    raise TraceError(
                        f"{where} is not a topology level of {cluster.source} "
                        f"(its levels: {', '.join(cluster.levels)})"
                    )
                if not tree.covers(level):
                    raise TraceError(f"{where}: no node of {cluster.source} has this label")


def job_gang(uid: str, job: JobPods, priority: int, submit: float) -> Gang:
    """A job as the core's gang: one pod set per pod set, ``count`` pods of its shape each."""
    sets = []
    for spec in job.pod_sets:
        requests = tuple(sorted({**dict(spec.requests), PODS: 1}.items()))
        sets.append(GangPodSet(spec.name, PodShape(requests=requests), spec.count, topology=_request(spec)))
    return Gang(uid, tuple(sets), priority=priority, created=submit, topology=TREE)


def _charges(table: NodeTable, gang: Gang, placement: GangPlacement) -> list[tuple[PodShape, IntArray]]:
    """What the job holds: per pod set, the node of each of its pods."""
    by_set: dict[str, list[int]] = {}
    for b in placement.bindings:
        by_set.setdefault(b.pod_set.partition("/")[2], []).append(table.index[b.node])
    return [(ps.shape, np.array(by_set.get(ps.name, []), dtype=np.int64)) for ps in gang.pod_sets]


def simulate_nodes(
    trace: Trace, cluster: NodeCluster, options: SimOptions, observe: Observer | None = None
) -> SimResult:
    """Replay ``trace`` on ``cluster``'s nodes; jobs that can never be placed are dropped (counted).

    ``observe`` (for checks) sees the books after every event instant: the node usage and the
    nodes each running job holds."""
    wall0 = time.perf_counter()
    policy = options.policy
    if policy not in POLICIES:
        raise TraceError(
            f"--policy {policy}: not modelled with --placement nodes (backfill needs reservations "
            f"on nodes, which the core does not plan); use {' or '.join(map(str, POLICIES))}"
        )
    if trace.pods is None:
        raise TraceError(
            f"{trace.name}: --placement nodes needs a workload YAML (kind: SimWorkload): "
            "this trace has no pod sets to place"
        )
    table = cluster.table
    tree = TopologyTree.from_labels(table, cluster.levels)
    _check_levels(trace.pods, cluster, tree)
    gang_options = GangOptions(trees=((TREE, tree),))
    config = SchedulerConfig()
    capacity = cluster.capacity(trace.resources)
    trace = trace.fit_to(capacity)
    trace = _drop_never_fitting(trace, table, config, gang_options)
    pods = trace.pods or ()
    n = len(trace)
    gangs = [job_gang(f"{j:09d}", pods[j], int(trace.priority[j]), float(trace.submit[j])) for j in range(n)]
    runs, notes = run_times(trace, options.kill_at_limit)
    # The estimate plans nothing here (no backfill); it is reported as the pool replay does.
    source = EstimateSource.REQUESTED if options.estimate is EstimateSource.PREDICTOR else options.estimate
    estimate, est_notes = static_estimates(trace, runs, source)
    notes.update(est_notes)

    submit_l: list[float] = trace.submit.tolist()
    run_l: list[float] = runs.tolist()
    keys: list[int] = (-trace.priority * (n + 1) + np.arange(n)).tolist()
    size_rows = list(trace.sizes)
    start = np.full(n, np.nan)
    backfilled = np.zeros(n, dtype=np.bool_)
    job_nodes = np.zeros(n, dtype=np.int64)
    job_domains = [""] * n
    usage = Usage.of(table)
    free = capacity.astype(np.int64).copy()
    held: dict[int, list[tuple[PodShape, IntArray]]] = {}
    waiting: list[tuple[int, int]] = []  # (key, job), in queue order
    heap: list[tuple[float, int]] = []
    ev_t: list[float] = []
    ev_free: list[IntArray] = []
    ev_q: list[int] = []
    decisions = 0
    policy_seconds = 0.0
    i = 0
    while i < n or heap:
        t_sub = submit_l[i] if i < n else float("inf")
        now = heap[0][0] if heap and heap[0][0] <= t_sub else t_sub
        while heap and heap[0][0] == now:
            _, j = heapq.heappop(heap)
            for shape, node_ids in held.pop(j):
                charge(table, usage, shape, node_ids, sign=-1)
            free += size_rows[j]
        while i < n and submit_l[i] == now:
            bisect.insort(waiting, (keys[i], i))
            i += 1
        if waiting:
            t0 = time.perf_counter()
            started = _decide(table, gangs, waiting, now, config, gang_options, usage, policy)
            policy_seconds += time.perf_counter() - t0
            decisions += 1
            done = {j for j, _ in started}
            ahead_waits = False
            for _, j in waiting:
                if j not in done:
                    ahead_waits = True
                    continue
                backfilled[j] = ahead_waits
            for j, placement in started:
                start[j] = now
                held[j] = _charges(table, gangs[j], placement)
                job_nodes[j] = len({b.node for b in placement.bindings})
                job_domains[j] = ";".join(f"{ps}={d}" for ps, d in placement.domains)
                free -= size_rows[j]
                heapq.heappush(heap, (now + run_l[j], j))
            if done:
                waiting = [w for w in waiting if w[1] not in done]
        if observe is not None:
            observe(now, table, usage, held)
        ev_t.append(now)
        ev_free.append(free.copy())
        ev_q.append(len(waiting))
    events = len(ev_t)
    used = capacity - np.array(ev_free, dtype=np.int64).reshape(events, len(capacity))
    return SimResult(
        trace=trace,
        options=options,
        capacity=capacity,
        start=start,
        run=runs,
        estimate=estimate,
        backfilled=backfilled,
        predicted_start=np.full(n, np.nan),
        event_times=np.array(ev_t, dtype=np.float64),
        event_used=used,
        event_queue=np.array(ev_q, dtype=np.int64),
        decisions=decisions,
        policy_seconds=policy_seconds,
        wall_seconds=time.perf_counter() - wall0,
        notes=notes,
        placement=Placement.NODES,
        job_nodes=job_nodes,
        job_domains=job_domains,
    )


def _decide(
    table: NodeTable,
    gangs: list[Gang],
    waiting: list[tuple[int, int]],
    now: float,
    config: SchedulerConfig,
    options: GangOptions,
    usage: Usage,
    policy: Policy | NodePolicy,
) -> list[tuple[int, GangPlacement]]:
    """The jobs that start now, with their placements; ``usage`` is charged with them."""
    if policy is NodePolicy.FIRST_FIT:
        got = decide_gangs(table, [gangs[j] for _, j in waiting], now, config, options, usage=usage)
        return [(int(p.gang), p) for p in got.placed]
    # Strict order: ask about the head alone; the first job that does not fit blocks the rest.
    started: list[tuple[int, GangPlacement]] = []
    for _, j in waiting:
        got = decide_gangs(table, [gangs[j]], now, config, options, usage=usage)
        if not got.placed:
            break
        started.append((j, got.placed[0]))
    return started


def _drop_never_fitting(
    trace: Trace, table: NodeTable, config: SchedulerConfig, options: GangOptions
) -> Trace:
    """Drop the jobs the core cannot place even on the empty cluster (counted by reason)."""
    pods = trace.pods or ()
    fits: dict[tuple[GangPodSet, ...], bool] = {}
    keep = np.ones(len(trace), dtype=np.bool_)
    for j, job in enumerate(pods):
        gang = job_gang("probe", job, 0, 0.0)
        ok = fits.get(gang.pod_sets)
        if ok is None:
            ok = fits[gang.pod_sets] = bool(decide_gangs(table, [gang], 0.0, config, options).placed)
        keep[j] = ok
    if keep.all():
        return trace
    skipped = Counter(trace.skipped)
    skipped[NEVER_FITS] += int((~keep).sum())
    return trace.select(keep, skipped=skipped)
