"""Gang placement with topology in the pure core: a stream of GPU gangs on 1,024 nodes.

The cluster: 1,024 nodes x 8 GPUs in 16 blocks x 4 racks (16 nodes a rack), labelled as a Kueue
Topology (block, rack, hostname) describes them. The stream: gangs of 1 to 256 GPUs (pods of
1-8 GPUs; from 8 GPUs up, pods of a whole node), each requiring one rack (up to 64 GPUs) or one
block (above, and a third of the smaller ones), at priorities 0 / 10 / 100, arriving at random
(seeded) and running an exponential time, offered at ~95% of the cluster. The scheduler runs a
cycle every 30 virtual seconds over every waiting gang (``decide_gangs``), in queue order;
gangs that fit start whole, the rest wait whole.

Reported per packing policy (binpack, spread):

* ``gangs_per_s``: gangs placed per second of core time (every cycle's ``decide_gangs``,
  failed tries of waiting gangs included);
* ``gang256_ms``: median time to place one 256-GPU required-block gang (32 pods x 8 GPUs),
  probed on the stream's state every 20 cycles and taken back each time; the median is over
  the probes that fit (those that do not fit, and an empty cluster, are printed beside it);
* ``utilization``: busy GPUs over all GPUs, averaged over virtual time;
* ``preempt256_ms`` (printed, not in the last line): median time to choose the victims for a
  top-priority 256-GPU required-block gang on the stream's state, every 200 cycles;
* ``fragmentation``: free GPUs on nodes where no pod of any waiting gang fits (a whole-node
  pod cannot use a half-empty node), as a share of free GPUs, averaged over the cycles that
  left gangs waiting.

The last line prints ``name=value`` pairs for both policies.

    python benchmarks/gang_topology.py [--gangs 3000] [--seed 7]
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import time
from dataclasses import dataclass

import numpy as np

from kubehpc.sched import NodeInfo, NodeTable
from kubehpc.sched.gang import Gang, GangOptions, GangPodSet, decide_gangs
from kubehpc.sched.gang_preemption import RunningGang, RunningPod, find_victims
from kubehpc.sched.model import PodShape
from kubehpc.sched.nodetable import IntArray
from kubehpc.sched.packing import fragmentation
from kubehpc.sched.placement import Usage, charge
from kubehpc.sched.topology import Mode, Packing, TopologyRequest, TopologyTree

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
BLOCKS, RACKS, HOSTS, GPUS = 16, 4, 16, 8
SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
WEIGHTS = (20, 10, 10, 15, 12, 10, 8, 8, 7)
PRIORITIES = (0, 10, 100)
MEAN_RUN_S = 3600.0
CYCLE_S = 30.0
TARGET_LOAD = 0.95


def build_cluster() -> NodeTable:
    nodes = []
    for b in range(BLOCKS):
        for r in range(RACKS):
            for h in range(HOSTS):
                name = f"b{b:02d}-r{r}-n{h:02d}"
                nodes.append(
                    NodeInfo(
                        name,
                        {"cpu": 128_000, "memory": 1024 * 2**30, "pods": 110, GPU: GPUS},
                        labels={BLOCK: f"b{b:02d}", RACK: f"b{b:02d}-r{r}", HOST: name},
                    )
                )
    return NodeTable.build(nodes)


_SHAPES: dict[int, PodShape] = {}


def shape(gpus: int) -> PodShape:
    got = _SHAPES.get(gpus)
    if got is None:
        requests = (("cpu", 8_000 * gpus), ("memory", 64 * 2**30 * gpus), ("pods", 1), (GPU, gpus))
        got = _SHAPES[gpus] = PodShape(requests=tuple(sorted(requests)))
    return got


def make_gang(uid: str, gpus: int, level: str, priority: int, created: float) -> Gang:
    per_pod = min(gpus, GPUS)
    count = gpus // per_pod
    ids = tuple(f"{uid}-{i}" for i in range(count))
    ps = GangPodSet(
        "workers", shape(per_pod), count, topology=TopologyRequest(Mode.REQUIRED, level), pod_ids=ids
    )
    return Gang(uid, (ps,), priority=priority, created=created, topology="default")


@dataclass
class Arrival:
    at: float
    gang: Gang
    run_s: float


def stream(n: int, seed: int) -> list[Arrival]:
    rng = random.Random(seed)
    mean_gpus = sum(s * w for s, w in zip(SIZES, WEIGHTS, strict=True)) / sum(WEIGHTS)
    total = BLOCKS * RACKS * HOSTS * GPUS
    rate = TARGET_LOAD * total / (mean_gpus * MEAN_RUN_S)  # gangs per virtual second
    at = 0.0
    out = []
    for i in range(n):
        at += rng.expovariate(rate)
        gpus = rng.choices(SIZES, WEIGHTS)[0]
        level = BLOCK if gpus > 64 or rng.random() < 1 / 3 else RACK
        gang = make_gang(f"g{i:05d}", gpus, level, rng.choice(PRIORITIES), at)
        out.append(Arrival(at, gang, rng.expovariate(1 / MEAN_RUN_S)))
    return out


@dataclass
class Result:
    packing: Packing
    placed: int
    core_s: float
    gang256_ms: float
    gang256_fit_ms: float
    gang256_fit: int
    gang256_tries: int
    utilization: float
    fragmentation: float
    cycles: int
    preempt256_ms: float
    preempt_victims: float


def time_preempt256(
    table: NodeTable, usage: Usage, options: GangOptions, running: list[RunningGang]
) -> tuple[float, int]:
    """Time to choose the victims for a top-priority 256-GPU block gang; how many gangs."""
    probe = make_gang("preempt256", 256, BLOCK, 1000, 0.0)
    start = time.perf_counter()
    got = find_victims(table, usage, probe, running, options=options)
    return (time.perf_counter() - start) * 1000, len(got.victims) if got else -1


def time_gang256(table: NodeTable, usage: Usage, options: GangOptions) -> tuple[float, bool]:
    probe = make_gang("probe256", 256, BLOCK, 1000, 0.0)
    trial = Usage(usage.used.copy(order="F"), usage.scored.copy(order="F"))
    start = time.perf_counter()
    got = decide_gangs(table, [probe], 0.0, options=options, usage=trial)
    return (time.perf_counter() - start) * 1000, bool(got.placed)


def run(arrivals: list[Arrival], packing: Packing) -> Result:
    table = build_cluster()
    options = GangOptions(packing, (("default", TopologyTree.from_labels(table, (BLOCK, RACK, HOST))),))
    usage = Usage.of(table)
    gpu_col = table.resource_index[GPU]
    total_gpus = int(table.allocatable[:, gpu_col].sum())
    run_of = {a.gang.uid: a.run_s for a in arrivals}
    by_uid = {a.gang.uid: a.gang for a in arrivals}
    ends: list[tuple[float, str, list[tuple[PodShape, IntArray]]]] = []
    running: dict[str, RunningGang] = {}
    preempt_ms: list[float] = []
    victims: list[int] = []
    waiting: list[Gang] = []
    next_arrival = 0
    now = 0.0
    core_s = 0.0
    placed = 0
    busy_time = 0.0
    frag_samples: list[float] = []
    probes: list[float] = []
    fit_probes: list[float] = []
    cycles = 0
    while next_arrival < len(arrivals) or waiting or ends:
        now += CYCLE_S
        busy_time += CYCLE_S * int(usage.used[:, gpu_col].sum())
        while ends and ends[0][0] <= now:
            _, uid, charges = heapq.heappop(ends)
            running.pop(uid, None)
            for s, ids in charges:
                charge(table, usage, s, ids, sign=-1)
        while next_arrival < len(arrivals) and arrivals[next_arrival].at <= now:
            waiting.append(arrivals[next_arrival].gang)
            next_arrival += 1
        if next_arrival >= len(arrivals) and not waiting:
            break  # the stream is over; what runs now only drains
        if not waiting:
            continue
        cycles += 1
        start = time.perf_counter()
        decisions = decide_gangs(table, waiting, now, options=options, usage=usage)
        core_s += time.perf_counter() - start
        done = {p.gang for p in decisions.placed}
        for p in decisions.placed:
            gang = by_uid[p.gang]
            charges = [(gang.pod_sets[0].shape, np.array([table.index[b.node] for b in p.bindings]))]
            heapq.heappush(ends, (now + run_of[p.gang], p.gang, charges))
            pods = tuple(RunningPod(b.pod, b.node, gang.pod_sets[0].shape) for b in p.bindings)
            running[p.gang] = RunningGang(p.gang, gang.priority, pods, gang.created)
        placed += len(done)
        waiting = [g for g in waiting if g.uid not in done]
        if waiting:
            shapes = [ps.shape for g in waiting for ps in g.pod_sets]
            frag_samples.append(fragmentation(table, usage.used, shapes).fraction)
        if cycles % 200 == 0:
            ms, n = time_preempt256(table, usage, options, list(running.values()))
            preempt_ms.append(ms)
            if n > 0:  # -1: the gang fits without evicting anything (or nothing would help)
                victims.append(n)
        if cycles % 20 == 0:
            ms, fit = time_gang256(table, usage, options)
            probes.append(ms)
            if fit:
                fit_probes.append(ms)
    return Result(
        packing,
        placed,
        core_s,
        statistics.median(probes) if probes else float("nan"),
        statistics.median(fit_probes) if fit_probes else float("nan"),
        len(fit_probes),
        len(probes),
        busy_time / (now * total_gpus) if now else 0.0,
        statistics.fmean(frag_samples) if frag_samples else 0.0,
        cycles,
        statistics.median(preempt_ms) if preempt_ms else float("nan"),
        statistics.fmean(victims) if victims else float("nan"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gangs", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    arrivals = stream(args.gangs, args.seed)
    # An empty-cluster baseline of the 256-GPU gang, for comparison with the stream's figure.
    table = build_cluster()
    options = GangOptions(
        Packing.BINPACK, (("default", TopologyTree.from_labels(table, (BLOCK, RACK, HOST))),)
    )
    empty = statistics.median(time_gang256(table, Usage.of(table), options)[0] for _ in range(50))
    print(f"empty cluster: gang256 {empty:.2f} ms")
    figures: list[str] = []
    for packing in (Packing.BINPACK, Packing.SPREAD):
        r = run(arrivals, packing)
        print(
            f"{packing}: {r.placed} gangs placed in {r.cycles} cycles, core {r.core_s:.2f} s "
            f"({r.placed / r.core_s:.0f} gangs/s); gang256 placed in {r.gang256_fit_ms:.2f} ms "
            f"(median of {r.gang256_fit} placements; {r.gang256_ms:.2f} ms over all "
            f"{r.gang256_tries} decisions, fit or not); utilization {r.utilization:.3f}; "
            f"fragmentation {r.fragmentation:.3f}; victims for a top-priority 256-GPU block gang "
            f"chosen in {r.preempt256_ms:.0f} ms (median; {r.preempt_victims:.1f} gangs evicted on average)"
        )
        figures += [
            f"{packing}_gangs_per_s={r.placed / r.core_s:.0f}",
            f"{packing}_gang256_ms={r.gang256_fit_ms:.2f}",
            f"{packing}_utilization={r.utilization:.3f}",
            f"{packing}_fragmentation={r.fragmentation:.3f}",
        ]
    print(" ".join(figures))


if __name__ == "__main__":
    main()
