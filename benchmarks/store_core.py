"""Durable store throughput and watch latency, in process (no HTTP).

Creates N real Pods (validated against the official schema by the core kinds) in a fresh
SQLite-backed store: in batches (``store.batch()``) and one by one, while a watcher thread
records when each ADDED event reaches it. Prints figures, the last line as ``name=value``.

    .venv/bin/python benchmarks/store_core.py [--pods 10000] [--batch 500]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kubehpc.api.kinds import build_registry
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store


def make_pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"worker-{i}",
            "namespace": "default",
            "labels": {"app": "train", "job-name": f"job-{i // 8}", "index": str(i % 8)},
            "annotations": {"kubehpc.io/bench": "store_core"},
        },
        "spec": {
            "restartPolicy": "Never",
            "schedulerName": "kubehpc",
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11",
                    "command": ["python", "-c", "print('hello')"],
                    "env": [{"name": "RANK", "value": str(i % 8)}, {"name": "WORLD_SIZE", "value": "8"}],
                    "resources": {
                        "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
                        "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                    },
                }
            ],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def run_batched(store: Store, n: int, batch: int) -> tuple[float, float]:
    """Creates per wall-clock second, and per second of this process's CPU time (the figure
    to trust on a machine other work is loading)."""
    pods = [make_pod(i) for i in range(n)]
    start, cpu_start = time.perf_counter(), time.process_time()
    for lo in range(0, n, batch):
        with store.batch():
            for p in pods[lo : lo + batch]:
                store.create(p)
    return n / (time.perf_counter() - start), n / (time.process_time() - cpu_start)


def run_one_by_one(store: Store, n: int) -> tuple[float, list[float]]:
    """Creates/s, and per event the ms from the create call to a watcher thread having it."""
    pods = [make_pod(i) for i in range(n)]
    sent: dict[str, float] = {}
    latencies: list[float] = []
    w = store.watch("v1", "Pod", ListOptions(resource_version=str(store.resource_version)))
    done = threading.Event()

    def consume() -> None:
        for ev in w:
            t = time.perf_counter()
            latencies.append((t - sent[ev.object["metadata"]["name"]]) * 1000)
            if len(latencies) == n:
                done.set()
                return

    consumer = threading.Thread(target=consume)
    consumer.start()
    start = time.perf_counter()
    for p in pods:
        sent[p["metadata"]["name"]] = time.perf_counter()
        store.create(p)
    rate = n / (time.perf_counter() - start)
    done.wait(60)
    w.stop()
    consumer.join(5)
    return rate, latencies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=500)
    args = ap.parse_args()
    registry = build_registry(("kubehpc.api.kinds.core",))
    with tempfile.TemporaryDirectory() as tmp:
        with Store(registry, Path(tmp) / "batched.db") as store:
            batched, batched_cpu = run_batched(store, args.pods, args.batch)
        start = time.perf_counter()
        with Store(registry, Path(tmp) / "batched.db") as store:
            reload_s = time.perf_counter() - start
            assert len(store.list("v1", "Pod").items) == args.pods
        with Store(registry, Path(tmp) / "single.db") as store:
            single, latencies = run_one_by_one(store, args.pods)
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pods={args.pods} batch={args.batch}")
    print(f"batched creates/s: {batched:,.0f} (per CPU second: {batched_cpu:,.0f})")
    print(f"one-by-one creates/s (with a watcher): {single:,.0f}")
    print(f"watch delivery latency ms: p50 {p50:.2f} p99 {p99:.2f} (events received: {len(latencies)})")
    print(f"reload of {args.pods} pods at startup: {reload_s:.2f}s")
    print(f"peak RSS: {rss_mb:.0f} MiB")
    print(
        f"writes_per_s_batched={batched:.0f} writes_per_cpu_s_batched={batched_cpu:.0f} "
        f"writes_per_s_single={single:.0f} "
        f"watch_p50_ms={p50:.2f} watch_p99_ms={p99:.2f} reload_s={reload_s:.2f} peak_rss_mb={rss_mb:.0f}"
    )


if __name__ == "__main__":
    main()
