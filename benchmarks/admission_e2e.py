"""Kueue admission end to end through the embedded control plane (issue 4): queue-labelled
batch/v1 Jobs created in the store → Workloads → admitted → Jobs unsuspended → pods created by
the Job controller → pods bound by the scheduler. Workloads per second = Jobs whose pod is
bound, divided by the time from the first create to the last bind.

The control plane runs in process with every controller (Job webhook, Kueue reconciler and
admission loop, Job controller, scheduler, GC) but no node agent: the nodes are plain Node
objects, as kwok registers them, so pods are bound and never run. The garbage collector is
tuned as ``kubehpc up`` tunes it (``cli.up.tune_gc``), so the figures are the served control
plane's: with CPython's default thresholds, full collections over the store's heap took a
quarter of the CPU. ``--profile FILE`` samples the timed part only with py-spy (GIL-holding
samples, one line per thread and stack). Prints ``name=value`` last.

By default the Jobs go to one ClusterQueue. ``--queues 100 --cohorts 10`` is the issue's
shape (that of ``benchmarks/admission.py``): 100 ClusterQueues in 10 cohorts, half of each
cohort borrowing from the other half, Jobs spread over the queues and three priorities, with
quota for all of them in the end.

``probe_ms`` (``benchmarks/machine_probe.py``, timed before the plane starts) says how fast this
machine's one core was just then, on this interpreter build (``python`` names it), to tell runs
on different machines or builds, or in a shared machine's slow and fast phases, apart.
``written_kb_per_workload``: what the process handed to ``write()`` in the timed part
(``/proc/self/io``: the SQLite log's pages, almost all of it).

``admission_cycles``: the admission cycles of the timed part that decided anything; a run's
instructions move with it (``admission_e2e_instructions.py`` prints it too).

``--other-writer-ms 20``: another thread creates a ConfigMap every 20 ms through the run, as a
user's ``kubectl`` would, and the last line adds how long those creates took (``other_write_*``:
the wait for the store's lock while the controllers write in batches).

    .venv/bin/python benchmarks/admission_e2e.py [--jobs 2000] [--queues 100 --cohorts 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from machine_probe import probe_ms  # beside this script

import kubehpc
from kubehpc.cli.up import tune_gc
from kubehpc.controllers.kueue.metrics import INADMISSIBLE, PREFIX, SUCCESS
from kubehpc.runtime.controlplane import ControlPlane
from kubehpc.store.client import ListOptions
from kubehpc.store.home import Home
from kubehpc.store.store import Store

Obj = dict[str, Any]


def node(i: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


QUEUES: list[Obj] = [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "default",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "100000"},
                                {"name": "memory", "nominalQuota": "100Ti"},
                            ],
                        }
                    ],
                }
            ],
        },
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "default"},
        "spec": {"clusterQueue": "cq"},
    },
]


PRIORITIES = (50, 100, 200)


def spread_queues(queues: int, cohorts: int, jobs: int) -> list[Obj]:
    """The shape of ``benchmarks/admission.py`` (and of Kueue's large-scale test), sized so every
    Job is admitted in the end: ``queues`` ClusterQueues in ``cohorts`` cohorts, half of each
    cohort lending (nominal quota twice its own demand), half borrowing (a third of its demand
    nominal, the rest from the cohort up to borrowingLimit); a LocalQueue per ClusterQueue and
    WorkloadPriorityClasses for the three priorities."""
    per_queue = -(-jobs // queues)  # Jobs per queue, rounded up; each asks 100m cpu and 64Mi
    cpu_m, mem_mi = 100 * per_queue, 64 * per_queue
    objs: list[Obj] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    ]
    objs += [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": f"p{p}"},
            "value": p,
        }
        for p in PRIORITIES
    ]
    for q in range(queues):
        lends = (q // cohorts) % 2 == 0
        cpu: Obj = {"name": "cpu", "nominalQuota": f"{2 * cpu_m if lends else cpu_m // 3}m"}
        mem: Obj = {"name": "memory", "nominalQuota": f"{2 * mem_mi if lends else mem_mi // 3}Mi"}
        if not lends:
            cpu["borrowingLimit"] = f"{cpu_m}m"
            mem["borrowingLimit"] = f"{mem_mi}Mi"
        objs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": f"cq-{q:03d}"},
                "spec": {
                    "namespaceSelector": {},
                    "cohortName": f"cohort-{q % cohorts}",
                    "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [{"name": "default", "resources": [cpu, mem]}],
                        }
                    ],
                },
            }
        )
        objs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": f"lq-{q:03d}", "namespace": "default"},
                "spec": {"clusterQueue": f"cq-{q:03d}"},
            }
        )
    return objs


def job(i: int, queues: int = 0) -> Obj:
    """Job ``i``; with ``queues``, spread over the LocalQueues of :func:`spread_queues` and
    over the three priority classes, else in the one queue ``lq``."""
    labels = {"kueue.x-k8s.io/queue-name": f"lq-{i % queues:03d}" if queues else "lq"}
    if queues:
        labels["kueue.x-k8s.io/priority-class"] = f"p{PRIORITIES[(i // queues) % 3]}"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"job-{i}", "labels": labels},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "command": ["true"],
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        }
                    ],
                }
            }
        },
    }


def admission_cycles(plane: ControlPlane) -> int:
    """Admission cycles the plane has run that decided anything (Kueue's admission attempts,
    both results). A run's instructions move with how many cycles its arrivals fell into:
    compare instruction counts at equal cycles."""
    total = 0.0
    for result in (SUCCESS, INADMISSIBLE):
        value = plane.metrics.get_sample_value(f"{PREFIX}admission_attempts_total", {"result": result})
        total += value or 0.0
    return int(total)


class Stages:
    """When each workload reached each stage, seen from watches (the benchmark's own threads:
    it never lists, so what it measures is the control plane, not its own polling)."""

    NAMES = ("workload", "admitted", "started", "pod", "bound")

    def __init__(self, store: Store) -> None:
        self.store = store
        self.at: dict[str, dict[str, float]] = {name: {} for name in self.NAMES}
        self.done = threading.Event()
        self.want = 0
        self._watches: list[Any] = []
        self._threads: list[threading.Thread] = []

    def start(self, want: int) -> None:
        self.want = want
        for av, kind in (("kueue.x-k8s.io/v1beta2", "Workload"), ("batch/v1", "Job"), ("v1", "Pod")):
            watch = self.store.watch(av, kind, ListOptions(namespace="default", read_only=True))
            self._watches.append(watch)
            thread = threading.Thread(target=self._follow, args=(kind, watch), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _mark(self, stage: str, key: str) -> None:
        self.at[stage].setdefault(key, time.perf_counter())

    def _follow(self, kind: str, watch: Any) -> None:
        for event in watch:
            obj = event.object
            meta = obj.get("metadata") or {}
            if kind == "Workload":
                owner = next(iter(meta.get("ownerReferences") or ()), {}).get("name", "")
                self._mark("workload", owner)
                if (obj.get("status") or {}).get("admission"):
                    self._mark("admitted", owner)
            elif kind == "Job":
                if (obj.get("spec") or {}).get("suspend") is False:
                    self._mark("started", meta.get("name", ""))
            else:
                job_name = (meta.get("labels") or {}).get("job-name", "")
                self._mark("pod", job_name)
                if (obj.get("spec") or {}).get("nodeName"):
                    self._mark("bound", job_name)
                    if len(self.at["bound"]) >= self.want:
                        self.done.set()

    def stop(self) -> None:
        for watch in self._watches:
            watch.stop()
        for thread in self._threads:
            thread.join(5)


class OtherWriter:
    """Another writer during the run, as a user's ``kubectl`` is: creates a ConfigMap every
    ``every_s`` and times each create, to show how long a write waits for the store's lock
    while the controllers write in batches."""

    def __init__(self, store: Store, every_s: float) -> None:
        self.store = store
        self.every_s = every_s
        self.waits: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.wait(self.every_s):
            cm = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"other-writer-{i}", "namespace": "default"},
                "data": {"n": str(i)},
            }
            began = time.perf_counter()
            self.store.create(cm)
            self.waits.append(time.perf_counter() - began)
            i += 1

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def summary(self) -> str:
        waits = sorted(self.waits)
        if not waits:
            return "other_writes=0"

        def ms(q: float) -> float:
            return 1000 * waits[min(len(waits) - 1, int(q * len(waits)))]

        return (
            f"other_writes={len(waits)} other_write_p50_ms={ms(0.5):.1f} "
            f"other_write_p99_ms={ms(0.99):.1f} other_write_max_ms={1000 * waits[-1]:.1f}"
        )


def written_bytes() -> int:
    """Bytes this process has passed to write() so far (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))
    except (OSError, StopIteration):
        return 0


def start_profile(path: str) -> subprocess.Popen[bytes] | None:
    """py-spy attached to this process, sampling from now until :func:`stop_profile`."""
    if not path:
        return None
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        raise SystemExit(f"--profile needs py-spy beside {sys.executable} (pip install py-spy)")
    cmd = [
        str(spy),
        "record",
        "--nonblocking",
        "--pid",
        str(os.getpid()),
        "-g",
        "-t",
        "-r",
        "200",
        "-f",
        "raw",
        "-o",
        path,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # py-spy attaches before the timed part begins
    return proc


def stop_profile(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is not None:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument(
        "--queues", type=int, default=0, help="ClusterQueues in cohorts, as admission.py (0: one queue)"
    )
    parser.add_argument("--cohorts", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--profile", default="", help="py-spy the timed part into this file")
    parser.add_argument(
        "--other-writer-ms",
        type=float,
        default=0,
        help="another writer creates a ConfigMap this often (ms) and reports its waits (0: none)",
    )
    args = parser.parse_args()
    machine_ms = probe_ms()
    with tempfile.TemporaryDirectory(prefix="kubehpc-admission-e2e-") as tmp:
        plane = ControlPlane(Home(Path(tmp)), nodes=False).start()
        tune_gc()  # as `kubehpc up` does right after starting its plane
        store = plane.store
        stages = Stages(store)
        other = OtherWriter(store, args.other_writer_ms / 1000) if args.other_writer_ms > 0 else None
        try:
            with store.batch():
                for i in range(args.nodes):
                    store.create(node(i))
                for obj in spread_queues(args.queues, args.cohorts, args.jobs) if args.queues else QUEUES:
                    store.create(obj)
            time.sleep(1.0)  # let the loops see the queues and nodes
            stages.start(args.jobs)
            if other is not None:
                other.start()
            cycles_start = admission_cycles(plane)
            spy = start_profile(args.profile)
            start = time.perf_counter()
            cpu_start = time.process_time()
            rv_start = store.resource_version
            written_start = written_bytes()
            batch = 200
            for lo in range(0, args.jobs, batch):
                with store.batch():
                    for i in range(lo, min(lo + batch, args.jobs)):
                        store.create(job(i, args.queues))
            created_s = time.perf_counter() - start
            stages.done.wait(args.timeout)
            elapsed = time.perf_counter() - start
            if other is not None:
                other.stop()
            cpu = time.process_time() - cpu_start
            written = written_bytes() - written_start
            stop_profile(spy)
            cycles = admission_cycles(plane) - cycles_start
            writes = store.resource_version - rv_start
            events = len(store.list("v1", "Event", ListOptions(namespace="default")).items)
        finally:
            if other is not None:
                other.stop()
            stages.stop()
            plane.stop()
    bound = len(stages.at["bound"])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rate = bound / elapsed
    shape = f"{args.queues} ClusterQueues in {args.cohorts} cohorts" if args.queues else "one ClusterQueue"
    print(f"{args.jobs} queue-labelled Jobs, {shape}, {args.nodes} nodes: created in {created_s:.2f}s")
    print("stage: when the last workload reached it (s after the first create), workloads")
    for name in Stages.NAMES:
        times = stages.at[name].values()
        print(f"  {name:9} {max(times, default=start) - start:7.2f}s {len(times):6}")
    print(
        f"pods bound: {bound} in {elapsed:.2f}s -> {rate:.0f} workloads/s ({cpu:.1f}s CPU, "
        f"{1000 * cpu / max(bound, 1):.1f} ms CPU per workload)"
    )
    per = max(bound, 1)
    print(
        f"store writes: {writes} ({writes / per:.1f} per workload, of them {events / per:.1f} Events), "
        f"{written / per / 1024:.1f} KB written per workload"
    )
    print(
        f"workloads={args.jobs} queues={max(args.queues, 1)} bound={bound} e2e_workloads_per_s={rate:.0f} "
        f"elapsed_s={elapsed:.2f} cpu_s={cpu:.1f} cpu_ms_per_workload={1000 * cpu / per:.1f} "
        f"writes_per_workload={writes / per:.1f} written_kb_per_workload={written / per / 1024:.1f} "
        f"peak_rss_mb={rss_mb:.0f} admission_cycles={cycles} "
        f"native={'yes' if kubehpc.NATIVE_OFF_REASON is None else 'no'} probe_ms={machine_ms:.1f} "
        f"python={sys.version.split()[0]}:{getattr(sys, '_base_executable', sys.executable)}"
        + (f" {other.summary()}" if other is not None else "")
    )


if __name__ == "__main__":
    main()
