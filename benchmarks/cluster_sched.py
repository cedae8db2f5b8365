"""kubehpc beside the real kube-scheduler 1.20 on the same real API server (issue 7, point 6).

scripts/k8s-testenv starts etcd and kube-apiserver 1.20.2; this script creates ``--nodes``
plain Node objects (as kwok does: no kubelet, only room to schedule into), then for each
scheduler in turn a backlog of ``--pods`` pending pods in a namespace of its own (same spec,
only ``schedulerName`` differs), starts the scheduler, and watches the pods get bound:

* pods bound per second, first binding to last (the drain rate of the backlog);
* the decision time alone: kube-scheduler's own ``scheduler_scheduling_algorithm_duration_seconds``
  (from its metrics port), kubehpc's time inside ``decide``;
* CPU seconds of the scheduler process, of kube-apiserver and of etcd over the drain.

Both schedulers' client rate limits are raised (kube-scheduler: --kube-api-qps/--kube-api-burst),
so schedulers are compared, not client throttles. Last line:

    kubehpc_pods_per_s=… kube_scheduler_pods_per_s=… kubehpc_cpu_ms_per_pod=… kube_scheduler_cpu_ms_per_pod=…

Targets: kubehpc >= 2x kube-scheduler's pods/s, <= 1/20 of its scheduler CPU per pod.
``--profile FILE`` samples kubehpc's process with py-spy (GIL-holding samples, collapsed stacks).
``--baseline SRC`` also runs kubehpc from another source tree (e.g. a copy of an earlier
commit's ``src/``) as ``kubehpc-baseline``, so a change is measured against what it replaces
in the same run; its figures join the last line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubehpc.api.errors import AlreadyExists, ApiError
from kubehpc.kube.kubeconfig import load_client_config
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions

if TYPE_CHECKING:
    import subprocess

REPO = Path(__file__).resolve().parents[1]
TESTENV = REPO / "scripts" / "k8s-testenv"
TICK = os.sysconf("SC_CLK_TCK")
SCHEDULERS = {"kube-scheduler": "default-scheduler", "kubehpc": "kubehpc", "kubehpc-baseline": "kubehpc"}
"""``kubehpc-baseline`` is kubehpc from another source tree (``--baseline SRC``), measured in the
same run as the code under test."""
PROFILE_RATE = 1000
"""py-spy samples per second: its default (100) leaves a few hundred samples of a run."""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node(i: int, shape: str) -> dict[str, Any]:
    """A fake Node. ``kwok`` is the node of research/kube-scheduler-bench.md (where the issue's
    orientation figures for kube-scheduler were measured): kwok's labels, four zones, 8 GPUs as
    an extended resource, addresses and nodeInfo. ``plain`` is a bare 32-CPU node."""
    name = f"fake-{i:05d}"
    if shape == "plain":
        resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "type": "fake"}},
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake"}
                ],
            },
        }
    resources = {
        "cpu": "64",
        "memory": "256Gi",
        "pods": "110",
        "ephemeral-storage": "1Ti",
        "nvidia.com/gpu": "8",
    }
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
        "topology.kubernetes.io/zone": f"zone-{i % 4}",
    }
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{**ready, "lastHeartbeatTime": now, "lastTransitionTime": now}],
            "addresses": [
                {"type": "InternalIP", "address": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"}
            ],
            "nodeInfo": {
                "kubeletVersion": "fake",
                "architecture": "amd64",
                "operatingSystem": "linux",
                **dict.fromkeys(("machineID", "systemUUID", "bootID", "kernelVersion", "osImage"), ""),
                "containerRuntimeVersion": "",
                "kubeProxyVersion": "",
            },
        },
    }


def pod(i: int, namespace: str, scheduler: str, shape: str) -> dict[str, Any]:
    """A pending pod: ``kwok`` as research/kube-scheduler-bench.md's *cpu* pods (100m, 128Mi,
    pause:3.2, no grace period), ``gpu`` the same with one nvidia.com/gpu, ``plain`` 100m/100Mi."""
    requests: dict[str, str] = {"cpu": "100m", "memory": "100Mi" if shape == "plain" else "128Mi"}
    resources: dict[str, Any] = {"requests": requests}
    if shape == "gpu":
        requests["nvidia.com/gpu"] = "1"
        resources["limits"] = {"nvidia.com/gpu": "1"}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "main",
                "image": "pause" if shape == "plain" else "registry.k8s.io/pause:3.2",
                "resources": resources,
            }
        ],
    }
    if shape != "plain":
        spec["terminationGracePeriodSeconds"] = 0
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{i:05d}", "namespace": namespace, "labels": {"app": "bench"}},
        "spec": spec,
    }


def create_all(client: RestClient, objs: list[dict[str, Any]], workers: int = 16) -> float:
    # Imported here (as urllib below): the scheduler's process runs this file too, and what
    # the benchmark alone needs must not count as the scheduler's start-up.
    from concurrent.futures import ThreadPoolExecutor

    start = time.monotonic()

    def create(obj: dict[str, Any]) -> None:
        try:
            client.create(obj)
        except AlreadyExists:
            pass

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(create, objs))
    return time.monotonic() - start


class BindWatch:
    """Times each pod of a namespace getting its nodeName, from a watch of the benchmark's own."""

    def __init__(self, client: RestClient, namespace: str) -> None:
        listed = client.list("v1", "Pod", ListOptions(namespace=namespace))
        self.bound: dict[str, float] = {}
        for p in listed.items:
            if p["spec"].get("nodeName"):
                self.bound[p["metadata"]["name"]] = time.monotonic()
        self._watch = client.watch(
            "v1", "Pod", ListOptions(namespace=namespace, resource_version=listed.resource_version)
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self._watch:
                if (event.object.get("spec") or {}).get("nodeName"):
                    self.bound.setdefault(event.object["metadata"]["name"], time.monotonic())
        except Exception:
            return

    def stop(self) -> None:
        self._watch.stop()


@dataclass
class Result:
    name: str
    pods_per_s: float
    wall_s: float
    scheduler_cpu_s: float
    """The scheduler process from its start (start-up, first lists, the whole drain)."""
    drain_cpu_s: float
    """The scheduler process from the first binding seen to the last."""
    apiserver_cpu_s: float
    etcd_cpu_s: float
    decide_ms_per_pod: float
    bound: int
    events: int

    def line(self, pods: int) -> str:
        return (
            f"{self.name}: bound={self.bound} events={self.events} "
            f"pods_per_s={self.pods_per_s:.1f} wall_s={self.wall_s:.1f} "
            f"scheduler_cpu_ms_per_pod={1000 * self.scheduler_cpu_s / pods:.3f} "
            f"scheduler_drain_cpu_ms_per_pod={1000 * self.drain_cpu_s / pods:.3f} "
            f"decision_ms_per_pod={self.decide_ms_per_pod:.3f} "
            f"apiserver_cpu_ms_per_pod={1000 * self.apiserver_cpu_s / pods:.2f} "
            f"etcd_cpu_ms_per_pod={1000 * self.etcd_cpu_s / pods:.2f}"
        )


def scheduled_events(client: RestClient, namespace: str, pods: int, deadline: float) -> int:
    """Events in ``namespace`` (only the schedulers write there), polled until there is one per
    pod or ``deadline``; counted from one-item pages (``remainingItemCount``)."""
    while True:
        page = client.list("v1", "Event", ListOptions(namespace=namespace, limit=1))
        count = len(page.items) + int(page.remaining_item_count or 0)
        if count >= pods or time.monotonic() > deadline:
            return count
        time.sleep(0.5)


def child_of(proc: subprocess.Popen[bytes]) -> int:
    """The process ``proc`` started (the scheduler under py-spy)."""
    for _ in range(200):
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.01)
    raise SystemExit("py-spy did not start the scheduler")


def kube_scheduler_decision_s(port: int) -> float:
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith("scheduler_scheduling_algorithm_duration_seconds_sum"):
            return float(line.split()[-1])
    raise SystemExit("kube-scheduler's metrics have no scheduler_scheduling_algorithm_duration_seconds")


def run_one(
    which: str,
    env: Path,
    client: RestClient,
    pods: int,
    timeout_s: float,
    profile: str = "",
    baseline: str = "",
    shape: str = "kwok",
) -> Result:
    import subprocess  # as urllib below: only the benchmark's own process needs it

    namespace = f"bench-{which}"
    try:
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    except AlreadyExists:
        pass
    made = create_all(client, [pod(i, namespace, SCHEDULERS[which], shape) for i in range(pods)])
    print(f"{which}: {pods} pending pods created in {made:.1f}s", flush=True)
    watch = BindWatch(client, namespace)
    api_pid = int((env / "kube-apiserver.pid").read_text())
    etcd_pid = int((env / "etcd.pid").read_text())
    stats = env / f"{which}-stats.json"
    metrics_port = free_port()
    if which == "kube-scheduler":
        bin_dir = subprocess.run(
            [str(TESTENV), "bin"], capture_output=True, text=True, check=True
        ).stdout.strip()
        cmd = [
            f"{bin_dir}/kube-scheduler",
            "--kubeconfig", str(env / "kubeconfig"),
            "--leader-elect=false", f"--port={metrics_port}", "--secure-port=0",
            "--kube-api-qps=10000", "--kube-api-burst=10000",
        ]  # fmt: skip
    else:
        cmd = [sys.executable, __file__, "--kubehpc-child", str(env / "kubeconfig"), str(stats)]
        if profile and which == "kubehpc":
            # Sampled from outside (py-spy), so the CPU figures stay the scheduler's own.
            spy = str(Path(sys.executable).with_name("py-spy"))
            if not Path(spy).exists():
                raise SystemExit(f"--profile needs py-spy beside {sys.executable} (pip install py-spy)")
            cmd = [
                spy,
                "record",
                "--nonblocking",
                "--gil",
                "--threads",
                "--rate",
                str(PROFILE_RATE),
                "--format",
                "raw",
                "-o",
                profile,
                "--",
                *cmd,
            ]
    api0, etcd0 = cpu_seconds(api_pid), cpu_seconds(etcd_pid)
    start = time.monotonic()
    child_env = None
    if which == "kubehpc-baseline":
        child_env = {**os.environ, "PYTHONPATH": baseline}
    with open(env / f"{which}.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=child_env)
    pid = proc.pid
    if profile and which == "kubehpc":
        pid = child_of(proc)
    try:
        cpu_at_first = None  # the scheduler's CPU once started and synced: drain cost alone
        while len(watch.bound) < pods and time.monotonic() - start < timeout_s:
            if proc.poll() is not None:
                raise SystemExit(f"{which} exited early; see {env / (which + '.log')}")
            if cpu_at_first is None and watch.bound:
                cpu_at_first = cpu_seconds(pid)
            time.sleep(0.05)
        end = time.monotonic()
        # Both schedulers write their Events after the bindings (kubehpc once each binding
        # succeeded, behind the rest of its writes): their cost counts, so wait for them.
        events = scheduled_events(client, namespace, pods, time.monotonic() + 120)
        sched_cpu = cpu_seconds(pid)
        drain_cpu = sched_cpu - (cpu_at_first or 0.0)
        api_cpu, etcd_cpu = cpu_seconds(api_pid) - api0, cpu_seconds(etcd_pid) - etcd0
        decide_s = kube_scheduler_decision_s(metrics_port) if which == "kube-scheduler" else 0.0
    finally:
        os.kill(pid, signal.SIGTERM)
        proc.wait(60)
        watch.stop()
    if which != "kube-scheduler":
        child = json.loads(stats.read_text())
        decide_s = float(child["decide_s"])
        print(
            f"{which}: user_s={child['user_s']:.2f} system_s={child['system_s']:.2f} "
            f"gc_s={[round(s, 3) for s in child['gc_s']]} gc_runs={child['gc_runs']}",
            flush=True,
        )
    times = sorted(watch.bound.values())
    bound = len(times)
    rate = (bound - 1) / (times[-1] - times[0]) if bound > 1 and times[-1] > times[0] else 0.0
    return Result(
        which,
        rate,
        end - start,
        sched_cpu,
        drain_cpu,
        api_cpu,
        etcd_cpu,
        1000 * decide_s / max(1, bound),
        bound,
        events,
    )


def kubehpc_child(kubeconfig: str, stats_path: str) -> None:
    """The kubehpc scheduler alone (no CRDs, no admission, no election), its ``decide`` timed."""
    from kubehpc.controllers.scheduler import Scheduler
    from kubehpc.kube.controller import ClusterController, ClusterOptions
    from kubehpc.kube.leader import LeaseConfig
    from kubehpc.kube.ratelimit import CONTROLLER_BURST, CONTROLLER_QPS

    spent = [0.0]
    # Time in the cyclic garbage collector, per generation (where the drain's CPU goes).
    gc_s, gc_runs = [0.0, 0.0, 0.0], [0, 0, 0]
    gc_started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter()
        else:
            gc_s[info["generation"]] += time.perf_counter() - gc_started[0]
            gc_runs[info["generation"]] += 1

    gc.callbacks.append(on_gc)
    # The cycle is snapshot -> decide -> apply; time the decide step, whatever the loop calls
    # for it (the plain core, or the gang step around it).
    original = Scheduler.run_cycle

    def run_cycle(self: Scheduler) -> Any:
        target = getattr(self, "gangs", None)
        if target is not None and not getattr(target, "_timed", False):
            decide = target.decide

            def timed(*args: Any, **kwargs: Any) -> Any:
                t = time.perf_counter()
                try:
                    return decide(*args, **kwargs)
                finally:
                    spent[0] += time.perf_counter() - t

            target.decide = timed
            target._timed = True
        return original(self)

    Scheduler.run_cycle = run_cycle  # type: ignore[method-assign]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    client = RestClient(
        load_client_config(kubeconfig), qps=CONTROLLER_QPS, burst=CONTROLLER_BURST, max_connections=64
    )
    options = ClusterOptions(
        components=("scheduler",), install_crds=False, leader_elect=False, lease=LeaseConfig(identity="bench")
    )
    ClusterController(client, options).run(stop)
    times = os.times()
    figures = {
        "decide_s": spent[0],
        "user_s": times.user,
        "system_s": times.system,
        "gc_s": gc_s,
        "gc_runs": gc_runs,
    }
    Path(stats_path).write_text(json.dumps(figures))


def delete_pods(client: RestClient, namespace: str) -> None:
    """Empty ``namespace`` before the next scheduler runs; a collection of 10,000 outlasts one
    request's deadline, so ask again until none is left."""
    for _ in range(30):
        try:
            client.delete_collection("v1", "Pod", namespace, grace_period_seconds=0)
        except ApiError as err:
            print(f"deleting the pods of {namespace}: {err}; again", flush=True)
        if not client.list("v1", "Pod", ListOptions(namespace=namespace, limit=1)).items:
            return
    raise SystemExit(f"could not delete the pods of {namespace}")


def main() -> None:
    import subprocess
    import tempfile

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument(
        "--order",
        default="kube-scheduler,kubehpc",
        help="schedulers, in the order run (and kubehpc-baseline)",
    )
    parser.add_argument(
        "--shape",
        choices=("kwok", "gpu", "plain"),
        default="kwok",
        help="kwok: research/kube-scheduler-bench.md's nodes and cpu pods (default); gpu: its gpu pods; "
        "plain: bare 32-CPU nodes, 100m/100Mi pods (runs 2-20 in docs/performance.md)",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one drain may take")
    parser.add_argument("--profile", default="", help="py-spy the kubehpc process into this file")
    parser.add_argument(
        "--baseline",
        default="",
        metavar="SRC",
        help="also run kubehpc from this source tree (a copy's src/) as kubehpc-baseline, after the others",
    )
    parser.add_argument("--kubehpc-child", nargs=2, metavar=("KUBECONFIG", "STATS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.kubehpc_child:
        kubehpc_child(*args.kubehpc_child)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the control plane on the way out
    subprocess.run([str(TESTENV), "build"], check=True)
    # An installed kubehpc has its bytecode compiled (pip does it); a checkout run with
    # PYTHONDONTWRITEBYTECODE would otherwise compile every module it imports at each start.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "kubehpc")], check=True)
    order = args.order.split(",")
    baseline = ""
    if args.baseline:
        baseline = str(Path(args.baseline).resolve())
        if not Path(baseline, "kubehpc", "__init__.py").exists():
            raise SystemExit(f"--baseline {baseline}: no kubehpc package there")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(baseline, "kubehpc"))], check=True)
        if "kubehpc-baseline" not in order:
            order.append("kubehpc-baseline")
    elif "kubehpc-baseline" in order:
        raise SystemExit("--order names kubehpc-baseline: give its source tree with --baseline SRC")
    env = Path(tempfile.mkdtemp(prefix="cluster-sched-"))
    flags = "--delete-collection-workers=8 --max-requests-inflight=1000 --max-mutating-requests-inflight=500"
    subprocess.run(
        [str(TESTENV), "start", str(env)],
        check=True,
        env={**os.environ, "KUBEHPC_K8S_APISERVER_FLAGS": flags},
    )
    try:
        client = RestClient(load_client_config(str(env / "kubeconfig")), max_connections=32, timeout=120)
        made = create_all(client, [node(i, args.shape) for i in range(args.nodes)])
        print(f"{args.nodes} fake nodes created in {made:.1f}s", flush=True)
        results: dict[str, Result] = {}
        for which in order:
            results[which] = run_one(
                which, env, client, args.pods, args.timeout, args.profile, baseline, args.shape
            )
            print(results[which].line(args.pods), flush=True)
            delete_pods(client, f"bench-{which}")
        print(f"shape: {args.shape}; load: {Path('/proc/loadavg').read_text().strip()}")
        kh, ks = results.get("kubehpc"), results.get("kube-scheduler")
        figures = []
        if kh is not None:
            figures.append(f"kubehpc_pods_per_s={kh.pods_per_s:.1f}")
        if ks is not None:
            figures.append(f"kube_scheduler_pods_per_s={ks.pods_per_s:.1f}")
        if kh is not None:
            figures.append(f"kubehpc_cpu_ms_per_pod={1000 * kh.scheduler_cpu_s / args.pods:.3f}")
        if ks is not None:
            figures.append(f"kube_scheduler_cpu_ms_per_pod={1000 * ks.scheduler_cpu_s / args.pods:.3f}")
        base = results.get("kubehpc-baseline")
        if base is not None:
            figures.append(f"kubehpc_baseline_pods_per_s={base.pods_per_s:.1f}")
            figures.append(f"kubehpc_baseline_cpu_ms_per_pod={1000 * base.scheduler_cpu_s / args.pods:.3f}")
        print(" ".join(figures))
    finally:
        subprocess.run([str(TESTENV), "stop", str(env)], check=False)


if __name__ == "__main__":
    main()
