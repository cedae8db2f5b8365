"""Pod start latency and the cost of a 1,000-pod Job on the embedded cluster (`kubehpc up`).

Run: ``.venv/bin/python benchmarks/runtime.py [--single N] [--completions N] [--parallelism N]``

It starts the real ``kubehpc up`` as a subprocess on a temporary ClusterConfig (one node with
room for the whole Job: 64 CPUs, 256Gi, 1,100 pods) in a throw-away home and talks to it over
HTTPS, as kubectl would.

What "pod start latency" means here (bound -> process running):

* **bound** is the moment this script's watch sees ``spec.nodeName`` appear on the pod. The
  PodScheduled condition's ``lastTransitionTime`` would be the scheduler's own stamp, but
  Kubernetes writes it with one-second resolution, useless for a ~100 ms figure. The watch
  stamp is *late* by the watch delivery delay (same machine, a few ms), so it errs towards
  a shorter latency by that much; it is printed beside the create -> running figure (which
  has no such error) so the two can be compared.
* **running**, for the pods started one at a time, is a timestamp the process itself takes:
  each pod runs ``sh -c 'date +%s%N'`` and prints its wall clock (same host clock) to its log.
  That is the honest end point — the container's ``state.running.startedAt`` is the agent's
  stamp, taken before the fork and exec and again only to the second. The shell and ``date``
  start-up (~2 ms) is counted against us.
* **within the big Job** the pods run ``true``, which cannot stamp anything; there the end
  point is the moment the watch first sees the container ``running`` or ``terminated`` in the
  pod's status: it includes the agent's status write and the watch delivery, so it is an
  upper bound on the true bound -> exec time.

``job1000_s`` is the wall time from creating the Job to its Complete condition, as the
watch sees it. ``cp_cpu_s`` is the CPU time (user + system, from ``/proc/<pid>/stat``,
children excluded) the ``kubehpc up`` process spent over that interval: API server, store,
Job controller, scheduler and node agent together — the pods' own CPU is not in it.

The last line is machine-readable:
``pod_start_p50_ms=… pod_start_p99_ms=… job1000_s=… cp_cpu_s=…``
where the pod start figures are those of the pods started one at a time.
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubehpc.kube.kubeconfig import load_client_config
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions
from kubehpc.store.home import Home

CLUSTER = """\
apiVersion: kubehpc.io/v1alpha1
kind: ClusterConfig
metadata: {name: runtime-bench}
spec:
  nodePools:
    - name: bench
      count: 1
      cpu: "64"
      memory: 256Gi
      pods: 1100
"""
NS = "default"


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` itself (children excluded), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the ")" ending comm, field 3 (state) is index 0: utime is field 14, stime field 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Cluster:
    """A `kubehpc up` subprocess on the benchmark's cluster config."""

    def __init__(self, root: Path) -> None:
        self.home = Home(root / "home")
        cfg = root / "cluster.yaml"
        cfg.write_text(CLUSTER)
        self.out = root / "up.out"
        args = [sys.executable, "-m", "kubehpc.cli", "--home", str(self.home.root), "up", "--port", "0"]
        with self.out.open("ab") as out:
            self.process = subprocess.Popen(
                [*args, "--cluster", str(cfg)], stdout=out, stderr=subprocess.STDOUT
            )
        kubeconfig = self.home.root / "kubeconfig"
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"kubehpc up exited: {self.out.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise SystemExit(f"kubehpc up not ready in 60 s: {self.out.read_text()[-3000:]}")
            if kubeconfig.exists():
                server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
                try:
                    if httpx.get(server + "/readyz", verify=False, timeout=1).text == "ok":
                        break
                except httpx.HTTPError:
                    pass
            time.sleep(0.05)
        self.client = RestClient(load_client_config(str(kubeconfig)))
        # The node must be registered before the first pod, or its scheduling waits on it.
        while not self.client.list("v1", "Node").items:
            time.sleep(0.05)

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


class PodWatch:
    """Stamps, as a watch on the namespace's pods sees them: when each pod was first seen
    bound, first seen with a started container, and (for Jobs) when a Job completed."""

    def __init__(self, client: RestClient) -> None:
        self.bound: dict[str, float] = {}
        self.started: dict[str, float] = {}
        self.events: queue.Queue[tuple[str, str]] = queue.Queue()
        rv = client.list("v1", "Pod", ListOptions(NS)).resource_version
        self._watch = client.watch("v1", "Pod", ListOptions(NS, resource_version=rv))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self._watch:
                now = time.time()
                pod: dict[str, Any] = event.object
                name = pod.get("metadata", {}).get("name", "")
                if not name:
                    continue
                if pod.get("spec", {}).get("nodeName") and name not in self.bound:
                    self.bound[name] = now
                statuses = pod.get("status", {}).get("containerStatuses") or []
                if name not in self.started and any(
                    "running" in (s.get("state") or {}) or "terminated" in (s.get("state") or {})
                    for s in statuses
                ):
                    self.started[name] = now
                if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                    self.events.put(("done", name))
        except Exception:  # the stream ends when the cluster stops
            return

    def stop(self) -> None:
        self._watch.stop()


def stamp_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "date +%s%N"]}],
        },
    }


def single_pods(
    cluster: Cluster, watch: PodWatch, count: int
) -> tuple[list[float], list[float], list[float]]:
    """Start ``count`` pods one after the other; per pod: bound -> process stamp,
    created -> process stamp, bound -> status shows it started (all ms)."""
    bound_ms, created_ms, status_ms = [], [], []
    for i in range(count):
        name = f"single-{i}"
        created = time.time()
        cluster.client.create(stamp_pod(name))
        log = cluster.home.pod_log_path(NS, name, "c")
        deadline = time.monotonic() + 30
        while True:
            text = log.read_text().strip() if log.exists() else ""
            if text.isdigit() and name in watch.bound and name in watch.started:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"pod {name} did not run in 30 s (log: {text!r})")
            time.sleep(0.002)
        ran = int(text) / 1e9
        bound_ms.append((ran - watch.bound[name]) * 1000)
        created_ms.append((ran - created) * 1000)
        status_ms.append((watch.started[name] - watch.bound[name]) * 1000)
        cluster.client.delete("v1", "Pod", name, NS)
    return bound_ms, created_ms, status_ms


def big_job(
    cluster: Cluster, watch: PodWatch, completions: int, parallelism: int
) -> tuple[float, float, list[float]]:
    """Run a Job of ``true``; its wall time, the control plane's CPU seconds over it, and the
    bound -> status-shows-started latency of each of its pods (ms)."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job1000", "namespace": NS},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
                }
            },
        },
    }
    pid = cluster.process.pid
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    cluster.client.create(job)
    deadline = t0 + 600
    while True:
        status = cluster.client.get("batch/v1", "Job", "job1000", NS).get("status", {})
        kinds = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
        if "Complete" in kinds or "Failed" in kinds:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"the Job did not finish in 600 s: {status}")
        time.sleep(0.05)
    wall, cpu = time.monotonic() - t0, cpu_seconds(pid) - cpu0
    if "Failed" in kinds:
        raise SystemExit(f"the Job failed: {status}")
    pods = cluster.client.list("v1", "Pod", ListOptions(NS, label_selector="job-name=job1000")).items
    names = [p["metadata"]["name"] for p in pods]
    latencies = [
        (watch.started[n] - watch.bound[n]) * 1000 for n in names if n in watch.started and n in watch.bound
    ]
    return wall, cpu, latencies


def summary(label: str, values: list[float]) -> str:
    return (
        f"{label:<44} n={len(values):<5} p50={percentile(values, 50):7.1f} ms  "
        f"p99={percentile(values, 99):7.1f} ms  mean={statistics.fmean(values):7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--single", type=int, default=100, help="pods started one at a time")
    parser.add_argument("--completions", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="keep the temporary home (for profiling)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="kubehpc-runtime-bench-"))
    cluster = Cluster(root)
    try:
        watch = PodWatch(cluster.client)
        cluster.client.create(stamp_pod("warm-up"))  # first-use costs (imports, caches) aside
        while "warm-up" not in watch.started:
            time.sleep(0.01)
        single, created, single_status = single_pods(cluster, watch, args.single)
        wall, cpu, in_job = big_job(cluster, watch, args.completions, args.parallelism)
        watch.stop()
    finally:
        cluster.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"home kept at {root}")

    print(summary("pod start, one at a time (bound -> process)", single))
    print(summary("pod start, one at a time (created -> process)", created))
    print(summary("pod start, one at a time (bound -> status)", single_status))
    print(summary(f"pod start, in the {args.completions}-pod Job (bound -> status)", in_job))
    print(
        f"{args.completions}-completion Job of `true`, parallelism {args.parallelism}: {wall:.2f} s wall, "
        f"{cpu:.2f} s control-plane CPU ({args.completions / wall:.0f} pods/s)"
    )
    print(
        f"pod_start_p50_ms={percentile(single, 50):.1f} pod_start_p99_ms={percentile(single, 99):.1f} "
        f"job1000_s={wall:.2f} cp_cpu_s={cpu:.2f}"
    )


if __name__ == "__main__":
    main()
