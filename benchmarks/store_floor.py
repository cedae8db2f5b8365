"""What the store's writes alone cost per workload, beside what the whole control plane costs for
the same workloads (issue 4): the split of ``admission_e2e.py``'s CPU between the store and the
controllers that drive it.

First the end-to-end run of ``admission_e2e.py`` (queue-labelled Jobs → Workloads → admitted →
pods bound, every controller running), its CPU per workload timed as there. Then every write
that run made, read back from its SQLite log in order, is made again into a fresh store with the
same admission hooks and no controller and no watcher, in batches of 64: creates as creates
(Events included), a pod gaining its node as a Binding, a change of nothing but status and
metadata as a status write, anything else as an update. That is the floor under the run: what
its 16 writes per workload cost the store (hooks, validation, defaulting, encoding, SQLite)
before any controller decides anything. ``--without-validation`` replays a second time with
each kind's schema validation switched off (metadata checks stay), to show validation's part.
Each write is timed on its own, by kind (process CPU; the timer costs ~1 µs per write). The
replayed Events are validated, where the plane's recorder vouches for its own and skips that
(``store/events.py``): the floor's Events cost ~15 µs more each than the plane's.

Each phase runs in a process of its own, one right after the other: their ratio holds in a
shared machine's slow and fast phases alike (``probe_ms`` says which it was), and no phase's
heap carries what an earlier one left. Prints ``name=value`` last.

    .venv/bin/python benchmarks/store_floor.py [--jobs 2000] [--without-validation]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from admission_e2e import Stages, job, node, spread_queues  # beside this script
from machine_probe import probe_ms

from kubehpc.api.errors import AlreadyExists
from kubehpc.api.kinds import default_registry
from kubehpc.api.registry import Registry
from kubehpc.cli.up import tune_gc
from kubehpc.controllers.kueue.webhooks import JobWebhook, PodPriorityHook
from kubehpc.runtime.controlplane import ControlPlane
from kubehpc.store.client import HANDED_OVER
from kubehpc.store.home import Home
from kubehpc.store.store import Store

Obj = dict[str, Any]
Row = tuple[int, str, str, bytes]

REPLAY_BATCH = 64
# What the store sets on a write: a replayed object must not carry the first run's.
SERVER_SET = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields")


def run_plane(home: Path, jobs: int) -> tuple[float, int]:
    """The end-to-end run; returns (CPU seconds of its timed part, the resourceVersion it began
    at)."""
    plane = ControlPlane(Home(home), nodes=False).start()
    tune_gc()
    store = plane.store
    # The replay reads every change back from the log, so none may be compacted away (the store
    # keeps the last 200,000; 15,000 Jobs make about 240,000).
    store._durable_history = 1 << 62
    stages = Stages(store)
    try:
        with store.batch():
            for i in range(150):
                store.create(node(i))
            for obj in spread_queues(100, 10, jobs):
                store.create(obj)
        time.sleep(1.0)  # let the loops see the queues and nodes
        stages.start(jobs)
        first_rv = store.resource_version
        cpu_start = time.process_time()
        for lo in range(0, jobs, 200):
            with store.batch():
                for i in range(lo, min(lo + 200, jobs)):
                    store.create(job(i, 100))
        if not stages.done.wait(600):
            raise SystemExit(f"only {len(stages.at['bound'])} of {jobs} pods bound in 600 s")
        cpu = time.process_time() - cpu_start
    finally:
        stages.stop()
        plane.stop()
    return cpu, first_rv


def read_log(db_path: Path, after: int, up_to: int | None = None) -> Iterator[list[Row]]:
    """The logged changes above ``after`` (and up to ``up_to``), in order, in lists of
    ``REPLAY_BATCH``: read as they are replayed, never all held (at 15,000 Jobs the log is a
    quarter of a million rows, whose memory slowed the writes replayed beside it by half)."""
    query = "SELECT rv, type, resource, data FROM events WHERE rv > ?"
    params: tuple[int, ...] = (after,)
    if up_to is not None:
        query += " AND rv <= ?"
        params += (up_to,)
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        cursor = db.execute(query + " ORDER BY rv", params)
        while rows := cursor.fetchmany(REPLAY_BATCH):
            yield rows


def _server_fields_dropped(obj: Obj) -> Obj:
    meta = obj["metadata"]
    for key in SERVER_SET:
        meta.pop(key, None)
    return obj


def _binding(pod: Obj) -> Obj:
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": pod["spec"]["nodeName"]},
    }


def _same_but_status(old: Obj, new: Obj) -> bool:
    def rest(obj: Obj) -> Obj:
        return {k: v for k, v in obj.items() if k not in ("metadata", "status")}

    return rest(old) == rest(new)


class Replay:
    """Makes a logged run's writes again, in order, into ``store``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.last: dict[tuple[str, str, str], Obj] = {}

    def apply(self, type_: str, resource: str, data: bytes) -> str:
        """Make one logged change; returns what kind of write it was."""
        obj = orjson.loads(data)
        meta = obj["metadata"]
        key = (resource, str(meta.get("namespace") or ""), str(meta["name"]))
        before = self.last.get(key)
        self.last[key] = obj
        short = resource.partition(".")[0]
        if type_ == "DELETED":
            self.store.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            return f"delete {short}"
        if type_ == "ADDED":
            self.store.create(_server_fields_dropped(obj), HANDED_OVER)
            return f"create {short}"
        node_before = ((before or {}).get("spec") or {}).get("nodeName")
        if resource == "pods" and not node_before and (obj.get("spec") or {}).get("nodeName"):
            self.store.create(_binding(obj), HANDED_OVER)
            return "bind pods"
        if before is not None and _same_but_status(before, obj):
            self.store.update_status(_server_fields_dropped(obj), HANDED_OVER)
            return f"status {short}"
        self.store.update(_server_fields_dropped(obj), HANDED_OVER)
        return f"update {short}"


def replay(
    log: Path, first_rv: int, registry: Registry, home: Path
) -> tuple[float, Counter[str], Counter[str]]:
    """CPU seconds of the timed part's writes made again; per kind of write, how many and
    their CPU seconds."""
    hooks = [JobWebhook(), PodPriorityHook(lambda: store)]
    store = Store(registry, Home(home).db_path, admission=hooks)
    counts: Counter[str] = Counter()
    cpu: Counter[str] = Counter()
    try:
        again = Replay(store)
        with store.batch():
            for _, type_, resource, data in itertools.chain.from_iterable(read_log(log, 0, first_rv)):
                try:
                    again.apply(type_, resource, data)
                except AlreadyExists:
                    pass  # what a new store makes itself (the default namespaces)
        start = time.process_time()
        for rows in read_log(log, first_rv):
            with store.batch():
                for _, type_, resource, data in rows:
                    t = time.process_time()
                    what = again.apply(type_, resource, data)
                    cpu[what] += time.process_time() - t
                    counts[what] += 1
        total = time.process_time() - start
    finally:
        store.close()
    return total, counts, cpu


def without_validation(registry: Registry) -> None:
    """Switch off every kind's schema validation (metadata checks stay): the benchmark's
    measuring instrument, never the product's. ``VersionSpec`` is frozen, hence the setattr."""

    def no_checks(obj: Obj, mode: Any, /, *, unchanged: frozenset[str] = frozenset()) -> list[str]:
        return []

    for rt in registry:
        for vs in rt.versions:
            object.__setattr__(vs, "validate", no_checks)


def child(args: argparse.Namespace) -> None:
    """One phase in this fresh process; its figures as JSON on the last line."""
    home = Path(args.dir)
    if args.phase == "plane":
        cpu, first_rv = run_plane(home / "plane", args.jobs)
        print(json.dumps({"cpu": cpu, "first_rv": first_rv}))
        return
    registry = default_registry()
    if args.phase == "bare":
        without_validation(registry)
    tune_gc()  # as the plane's process ran
    total, counts, cpu = replay(Home(home / "plane").db_path, args.first_rv, registry, home / args.phase)
    print(json.dumps({"total": total, "counts": counts, "cpu": cpu}))


def run_phase(*argv: str) -> Any:
    """Run one phase in a process of its own: each starts from a fresh heap, so none pays for
    what an earlier one left (a replay after the plane in one process ran a third slower, and
    its collections scanned the plane's leftovers)."""
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"store_floor phase {argv[:2]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--without-validation", action="store_true")
    # Internal: the phases, each run by main() in a child process.
    parser.add_argument("--phase", choices=("plane", "replay", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--first-rv", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        child(args)
        return
    machine_ms = probe_ms()
    per = args.jobs
    with tempfile.TemporaryDirectory(prefix="kubehpc-store-floor-") as tmp:
        plane = run_phase("--phase", "plane", "--dir", tmp, "--jobs", str(args.jobs))
        e2e_cpu, first_rv = plane["cpu"], plane["first_rv"]
        common = ("--dir", tmp, "--first-rv", str(first_rv))
        full = run_phase("--phase", "replay", *common)
        floor, counts, cpu = full["total"], Counter(full["counts"]), full["cpu"]
        bare = None
        if args.without_validation:
            stripped = run_phase("--phase", "bare", *common)
            bare, bare_cpu = stripped["total"], stripped["cpu"]
    writes = sum(counts.values())
    print(f"{args.jobs} Jobs end to end: {e2e_cpu:.2f}s CPU, {1000 * e2e_cpu / per:.3f} ms per workload")
    print(f"their {writes} writes ({writes / per:.1f} per workload) made again into a bare store:")
    for what, n in counts.most_common():
        each, share = 1e6 * cpu[what] / n, 1e6 * cpu[what] / per
        line = f"  {what:32} {n:6} x {each:6.1f} us = {share:5.0f} us per workload"
        if bare is not None:
            line += f"   (without validation {1e6 * bare_cpu[what] / n:6.1f} us)"
        print(line)
    tail = (
        f"workloads={args.jobs} e2e_cpu_ms_per_workload={1000 * e2e_cpu / per:.3f} "
        f"store_floor_ms_per_workload={1000 * floor / per:.3f} store_share={floor / e2e_cpu:.2f} "
        f"writes_per_workload={writes / per:.1f}"
    )
    if bare is not None:
        tail += f" floor_without_validation_ms_per_workload={1000 * bare / per:.3f}"
    print(tail + f" probe_ms={machine_ms:.1f}")


if __name__ == "__main__":
    main()
