"""Speed and fairness of Volcano queue admission in the pure core (``sched/volcano``).

* ``admit``: 1,024 nodes x 8 GPUs (64 CPUs each); 32 queues of weights 1-4 (four capped, four
  with a guarantee); 10,000 pending PodGroups of 1-64 GPUs (8 CPUs per GPU) at three
  priorities, every one pending at once: one ``decide`` (shares, admission order, capacity).
  ``fairness``: for queues that still have gangs waiting, the smallest admitted/deserved GPU
  ratio (1.0 = every queue got its whole deserved share).
* ``reclaim``: half the queues hold the whole cluster with 2,000 running gangs; 2,000 gangs
  of the other half wait: one ``decide`` including the choice of victims.

Prints one line per case and, last, ``name=value`` pairs.

    python benchmarks/volcano_queues.py [--groups 10000] [--queues 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from fractions import Fraction

from kubehpc.sched.volcano import GroupInfo, QueueInfo, Snapshot, decide

GPU = "nvidia.com/gpu"
NODES = 1024


def needs(gpus: int) -> dict[str, int]:
    return {GPU: gpus, "cpu": gpus * 8000}


def cluster() -> dict[str, int]:
    return {GPU: NODES * 8, "cpu": NODES * 64000}


def queues(n: int) -> tuple[QueueInfo, ...]:
    out = []
    for i in range(n):
        capability = needs(512) if i % 8 == 1 else None
        guarantee = needs(128) if i % 8 == 2 else {}
        out.append(QueueInfo(f"q{i}", weight=1 + i % 4, capability=capability, guarantee=guarantee))
    return tuple(out)


def pending(rng: random.Random, n: int, qs: tuple[QueueInfo, ...], phase: str = "Pending") -> list[GroupInfo]:
    out = []
    for i in range(n):
        gpus = rng.choice((1, 2, 4, 8, 8, 16, 32, 64))
        q = qs[rng.randrange(len(qs))].name
        held = needs(gpus) if phase == "Running" else {}
        stamp = f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"
        out.append(
            GroupInfo(
                f"ns/{phase}-{i}", q, phase, needs(gpus), needs(gpus), held, rng.choice((0, 50, 100)), stamp
            )
        )
    return out


def timed(snap: Snapshot, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = decide(snap)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--queues", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(5)
    qs = queues(args.queues)

    groups = pending(rng, args.groups, qs)
    snap = Snapshot(cluster(), qs, tuple(groups))
    seconds, d = timed(snap, args.repeat)
    admitted = set(d.admit)  # type: ignore[attr-defined]
    got: dict[str, Fraction] = {}
    waiting: set[str] = set()
    for g in groups:
        if g.key in admitted:
            got[g.queue] = got.get(g.queue, Fraction(0)) + g.min_resources[GPU]
        else:
            waiting.add(g.queue)
    figures = d.queues  # type: ignore[attr-defined]
    ratios = [
        float(got.get(q, Fraction(0)) / figures[q].deserved[GPU])
        for q in waiting
        if figures[q].deserved.get(GPU)
    ]
    fairness = min(ratios) if ratios else 1.0
    used = sum(got.values(), Fraction(0)) / cluster()[GPU]
    print(
        f"admit: {len(groups)} pending gangs, {len(qs)} queues: decide {seconds * 1000:.0f} ms, "
        f"{len(admitted)} admitted, GPUs handed out {float(used):.3f}, fairness {fairness:.3f}"
    )

    half = qs[: len(qs) // 2]
    others = qs[len(qs) // 2 :]
    running: list[GroupInfo] = []
    total = Fraction(0)
    for g in pending(rng, 4 * args.groups, half, "Running"):
        if total + g.min_resources[GPU] > cluster()[GPU]:
            continue
        running.append(g)
        total += g.min_resources[GPU]
        if len(running) >= 2000:
            break
    waiting_groups = pending(rng, 2000, others)
    snap = Snapshot(cluster(), qs, (*running, *waiting_groups))
    reclaim_seconds, r = timed(snap, args.repeat)
    victims = len(r.reclaim)  # type: ignore[attr-defined]
    print(
        f"reclaim: {len(running)} running gangs (GPUs {float(total / cluster()[GPU]):.3f} held), "
        f"{len(waiting_groups)} waiting: decide {reclaim_seconds * 1000:.0f} ms, {victims} gangs reclaimed, "
        f"{len(r.admit)} admitted"  # type: ignore[attr-defined]
    )
    print(
        f"decide_ms={seconds * 1000:.0f} groups_per_s={len(groups) / seconds:.0f} "
        f"fairness={fairness:.3f} reclaim_ms={reclaim_seconds * 1000:.0f} reclaimed={victims}"
    )


if __name__ == "__main__":
    main()
