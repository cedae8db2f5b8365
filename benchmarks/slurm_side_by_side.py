"""The same GPU workload through a real Slurm 22.05, kubehpc's simulator and kubehpc live.

    .venv/bin/python benchmarks/slurm_side_by_side.py [--jobs 30] [--seed 1] [--nodes 8]
        [--gpus 4] [--cpus 8] [--no-live | --live-policies none,easy] [--out DIR]

1. A reproducible mix of sleep jobs (one-node jobs of 1/2/4 GPUs, 2-4-node and whole-cluster
   jobs of full nodes; time limits in whole minutes, above the run time as users write them).
2. Real Slurm (scripts/slurm_peer.py: N emulated nodes, FIFO priority, sched/backfill with
   bf_interval=1): every job is submitted held, then all are released at once (t0), so the
   replay is a burst with no submission skew. Slurm's records (jobcomp) become ``sacct -P``
   text, which kubehpc's own converter (``kubehpc import sacct``) turns into a simulator workload.
3. The simulator replays that workload — Slurm's measured run times, the same time limits, all
   submitted at t0 — on the pool of the cluster ``kubehpc import slurm`` made of the same
   slurm.conf, under FCFS, EASY and conservative backfill.
4. Live (unless --no-live), once per --live-policies entry (Kueue's own BestEffortFIFO, and
   kubehpc's EASY backfill on a StrictFIFO ClusterQueue): the same sbatch commands on the
   embedded cluster (``kubehpc up`` on the imported config and queues), held and released at
   once; times from ``kubehpc sacct``.

Per system: GPU utilisation over the makespan, mean / p95 wait (start - t0), jobs started by
backfill, makespan, scheduling time. Prints a table, writes DIR/side_by_side.json, and ends
with one line of ``name=value`` figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from kubehpc.sched.backfill import Policy
from kubehpc.sim.cluster import capacity_from_cluster
from kubehpc.sim.engine import SimOptions, simulate
from kubehpc.sim.metrics import summary
from kubehpc.sim.traces.workload import parse_workload, workload_trace
from kubehpc.slurm.accounting import convert_sacct

REPO = Path(__file__).resolve().parents[1]
LAUNCHER = REPO / "scripts" / "slurm_peer.py"
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class JobSpec:
    name: str
    nodes: int
    gpus: int  # per node
    cpus: int  # per node
    limit_min: int
    runtime_s: int

    def sbatch_args(self) -> list[str]:
        return [
            "-H",
            "-J",
            self.name,
            "-N",
            str(self.nodes),
            "--ntasks-per-node=1",
            f"--cpus-per-task={self.cpus}",
            f"--gres=gpu:{self.gpus}",
            "-t",
            str(self.limit_min),
            "-o",
            "/dev/null",
            "-e",
            "/dev/null",
            "--wrap",
            f"sleep {self.runtime_s}",
        ]


def make_workload(jobs: int, seed: int, nodes: int, gpus: int, cpus: int) -> list[JobSpec]:
    rnd = random.Random(seed)
    out = []
    for i in range(jobs):
        u = rnd.random()
        if u < 0.6:
            n, g, rt = 1, rnd.choice([g for g in (1, 2, 4) if g <= gpus]), rnd.randint(5, 30)
        elif u < 0.9:
            n, g, rt = rnd.choice([2, 2, 4]), gpus, rnd.randint(5, 25)
        else:
            n, g, rt = nodes, gpus, rnd.randint(5, 20)
        limit = max(1, math.ceil(rt * rnd.uniform(1.2, 3.0) / 60))
        out.append(JobSpec(f"j{i:03d}", min(n, nodes), g, max(1, cpus * g // gpus), limit, rt))
    return out


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])}...: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


# ----------------------------------------------------------------------- per-job figures


@dataclass
class Record:
    start: float  # seconds after t0
    end: float
    gpus: int  # in total


def figures(records: list[Record], total_gpus: int) -> dict[str, float]:
    waits = sorted(r.start for r in records)
    makespan = max(r.end for r in records)
    used = sum(r.gpus * (r.end - r.start) for r in records)
    p95 = waits[min(len(waits) - 1, round(0.95 * (len(waits) - 1)))]
    whole = [r.start for r in records if r.gpus == total_gpus]
    return {
        "jobs": len(records),
        "wait_whole_cluster_jobs_mean_s": statistics.mean(whole) if whole else 0.0,
        "wait_mean_s": statistics.mean(waits),
        "run_mean_s": statistics.mean(r.end - r.start for r in records),
        "wait_p95_s": p95,
        "makespan_s": makespan,
        "gpu_utilisation": used / (total_gpus * makespan) if makespan > 0 else 0.0,
    }


# ----------------------------------------------------------------------- real Slurm


def slurm_replay(
    specs: list[JobSpec], out: Path, args: argparse.Namespace
) -> tuple[list[dict[str, str]], float, str]:
    peer = out / "peer"
    run(
        [
            sys.executable,
            str(LAUNCHER),
            "start",
            "--dir",
            str(peer),
            "--nodes",
            str(args.nodes),
            "--cpus",
            str(args.cpus),
            "--gpus",
            str(args.gpus),
            "--mem",
            str(args.cpus * 2048),
            "--sched-params",
            "bf_interval=1",
        ]
    )
    env = {**os.environ, "SLURM_CONF": str(peer / "etc" / "slurm.conf")}
    ids = [run(["sbatch", "--parsable", *s.sbatch_args()], env).strip().split(";")[0] for s in specs]
    run(["sdiag", "--reset"], env)
    t0 = time.time()
    run(["scontrol", "release", ",".join(ids)], env)
    jobcomp = peer / "log" / "jobcomp.txt"
    deadline = time.time() + args.timeout
    recs: dict[str, dict[str, str]] = {}
    while time.time() < deadline:
        recs = read_jobcomp(jobcomp)
        if all(i in recs for i in ids):
            break
        time.sleep(1)
    sdiag = run(["sdiag"], env)
    return [recs[i] for i in ids if i in recs], t0, sdiag


def read_jobcomp(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            fields = {m.group(1): m.group(2) for m in re.finditer(r"(\w+)=(\S*)", line)}
            if "JobId" in fields:
                out[fields["JobId"]] = fields
    return out


def epoch(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()


def sdiag_figures(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    section = "main"
    for line in text.splitlines():
        if line.startswith("Backfilling stats"):
            section = "bf"
        elif line.startswith(("Latency", "Remote")):
            section = "other"
        m = re.match(r"\s*([A-Za-z][A-Za-z ()]+?):\s+(-?\d+)\s*$", line)
        if m and section in ("main", "bf"):
            out.setdefault(f"{section}.{m.group(1).strip()}", int(m.group(2)))
    return out


def as_sacct(recs: list[dict[str, str]], specs: dict[str, JobSpec], t0: float) -> str:
    """Slurm's records as ``sacct -P`` text; Submit is the release instant (the burst)."""
    submit = datetime.fromtimestamp(math.floor(t0)).strftime("%Y-%m-%dT%H:%M:%S")
    lines = ["JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocCPUS|AllocTRES|State|User"]
    for r in recs:
        spec = specs[r["Name"]]
        elapsed = int(epoch(r["EndTime"]) - epoch(r["StartTime"]))
        tres = f"cpu={spec.cpus * spec.nodes},node={spec.nodes},gres/gpu={spec.gpus * spec.nodes}"
        lines.append(
            f"{r['JobId']}|{submit}|{r['StartTime']}|{r['EndTime']}|"
            f"{elapsed // 3600:02d}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}|{spec.limit_min}|"
            f"{spec.nodes}|{spec.cpus * spec.nodes}|{tres}|{r['JobState']}|{r.get('UserId', 'root')}"
        )
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------- kubehpc live


def kubehpc(home: Path, *argv: str, timeout: float = 120) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "KUBECONFIG", "KUBEHPC_HOME"))}
    return run([sys.executable, "-m", "kubehpc.cli", "--home", str(home), *argv], env, timeout)


def admission_cycles(home: Path) -> tuple[int, float]:
    """How many admission cycles the live control plane ran, and their mean duration (s), from
    its /metrics (``kubehpc_admission_attempt_duration_seconds``)."""
    env = {**os.environ, "KUBECONFIG": str(home / "kubeconfig")}
    text = run(["kubectl", "get", "--raw", "/metrics"], env)
    total = count = 0.0
    for line in text.splitlines():
        if line.startswith("kubehpc_admission_attempt_duration_seconds_sum"):
            total += float(line.split()[-1])
        elif line.startswith("kubehpc_admission_attempt_duration_seconds_count"):
            count += float(line.split()[-1])
    return int(count), total / count if count else 0.0


def live_replay(
    specs: list[JobSpec], out: Path, imported: Path, timeout: float, policy: str
) -> tuple[list[Record], float, tuple[int, float]]:
    """``policy``: "none" (Kueue's BestEffortFIFO, as imported) or a kubehpc backfill policy
    ("easy", "conservative") on a StrictFIFO ClusterQueue (docs/backfill.md)."""
    home = out / f"kubehpc-home-{policy}"
    mapping = yaml.safe_load((imported / "slurm-mapping.yaml").read_text())
    queue = mapping["partitions"][mapping["defaultPartition"]]["localQueue"]
    home.mkdir(parents=True, exist_ok=True)
    (home / "slurm-mapping.yaml").write_text((imported / "slurm-mapping.yaml").read_text())
    kubehpc(home, "up", "-d", "--port", "0", "--cluster", str(imported / "cluster.yaml"))
    try:
        kubectl = {**os.environ, "KUBECONFIG": str(home / "kubeconfig")}
        kubehpc(home, "apply", "-f", str(imported / "queues.yaml"))
        if policy != "none":
            for cq in yaml.safe_load_all((imported / "queues.yaml").read_text()):
                if cq and cq.get("kind") == "ClusterQueue":
                    name = cq["metadata"]["name"]
                    run(
                        ["kubectl", "annotate", "clusterqueue", name, f"kubehpc.io/backfill={policy}"],
                        kubectl,
                    )
                    strict = '{"spec":{"queueingStrategy":"StrictFIFO"}}'
                    run(["kubectl", "patch", "clusterqueue", name, "--type", "merge", "-p", strict], kubectl)
        ids = [kubehpc(home, "sbatch", "--parsable", *s.sbatch_args()).strip().split(";")[0] for s in specs]
        # Released in two label-selected writes rather than `kubehpc scontrol release`: that
        # command unsuspends the Job in the same patch that gives the queue label back, which
        # the Kueue webhook refuses (a queue name may not change on a running Job); Kueue
        # itself unsuspends a queued Job once it admits it.
        selector = ["-l", "slurm.kubehpc.io/job-id"]
        run(["kubectl", "annotate", "jobs", *selector, "slurm.kubehpc.io/hold-"], kubectl)
        t0 = time.time()
        run(["kubectl", "label", "jobs", *selector, f"kueue.x-k8s.io/queue-name={queue}"], kubectl)
        fields = "JobID,Start,End,State"
        deadline = time.time() + timeout
        rows: dict[str, dict[str, str]] = {}
        while time.time() < deadline:
            text = kubehpc(home, "sacct", "-a", "-P", "-o", fields)
            lines = text.splitlines()
            rows = {}
            for line in lines[1:]:
                row = dict(zip(fields.split(","), line.split("|"), strict=False))
                rows[row["JobID"]] = row
            if all(
                rows.get(i, {}).get("State", "").startswith(("COMPLETED", "FAILED", "TIMEOUT")) for i in ids
            ):
                break
            time.sleep(2)
        by_id = dict(zip(ids, specs, strict=True))
        records = [
            Record(
                epoch(rows[i]["Start"]) - math.floor(t0),
                epoch(rows[i]["End"]) - math.floor(t0),
                by_id[i].gpus * by_id[i].nodes,
            )
            for i in ids
            if rows.get(i, {}).get("End", "Unknown") not in ("Unknown", "", "None")
        ]
        return records, t0, admission_cycles(home)
    finally:
        kubehpc(home, "down")


# ----------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--cpus", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--no-live", action="store_true")
    ap.add_argument(
        "--live-policies", default="none,easy", help="live runs: none (Kueue), easy, conservative"
    )
    ap.add_argument("--out", default="/tmp/kubehpc-slurm-side-by-side")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    specs = make_workload(args.jobs, args.seed, args.nodes, args.gpus, args.cpus)
    by_name = {s.name: s for s in specs}
    total_gpus = args.nodes * args.gpus
    results: dict[str, dict[str, Any]] = {}

    try:
        recs, t0, sdiag = slurm_replay(specs, out, args)
        imported = out / "imported"
        peer = out / "peer" / "etc"
        kubehpc(
            out, "import", "slurm", "--conf", str(peer / "slurm.conf"), "--gres", str(peer / "gres.conf"),
            "-o", str(imported),
        )  # fmt: skip
    finally:
        # Stopped before the live replay, so its daemons do not share the cores with it.
        subprocess.run([sys.executable, str(LAUNCHER), "stop", "--dir", str(out / "peer")], check=False)
    (out / "slurm-jobcomp.json").write_text(json.dumps({"t0": t0, "records": recs, "sdiag": sdiag}))
    live: dict[str, tuple[list[Record], float, tuple[int, float]]] = {}
    live_error = ""
    for policy in [] if args.no_live else args.live_policies.split(","):
        try:
            live[policy] = live_replay(specs, out, imported, args.timeout, policy)
        except SystemExit as exc:  # keep the other systems' figures; fail at the end
            live_error += f"{policy}: {exc}; "

    base = math.floor(t0)
    slurm_records = [
        Record(
            epoch(r["StartTime"]) - base,
            epoch(r["EndTime"]) - base,
            by_name[r["Name"]].gpus * by_name[r["Name"]].nodes,
        )
        for r in recs
    ]
    sd = sdiag_figures(sdiag)
    results["slurm"] = {
        **figures(slurm_records, total_gpus),
        "backfilled": sd.get("bf.Total backfilled jobs (since last stats cycle start)", 0),
        "sched_main_mean_us": sd.get("main.Mean cycle", 0),
        "sched_backfill_mean_us": sd.get("bf.Mean cycle", 0),
        "sched_cycles": sd.get("main.Total cycles", 0) + sd.get("bf.Total cycles", 0),
    }

    sacct_text = as_sacct(recs, by_name, t0)
    (out / "slurm-sacct.txt").write_text(sacct_text)
    workload, notes = convert_sacct(sacct_text, str(out / "slurm-sacct.txt"))
    (out / "workload.yaml").write_text(yaml.safe_dump(workload, sort_keys=False))
    trace = workload_trace(parse_workload(workload, "slurm-sacct"))
    capacity = capacity_from_cluster(trace, out / "imported" / "cluster.yaml")
    gpu_col = trace.resources.index(GPU)
    for policy in (Policy.FCFS, Policy.EASY, Policy.CONSERVATIVE):
        sim = simulate(trace, capacity, SimOptions(policy=policy))
        s = summary(sim)
        records = [
            Record(
                float(st - sim.trace.submit.min()), float(st + rn - sim.trace.submit.min()), int(sz[gpu_col])
            )
            for st, rn, sz in zip(sim.start, sim.run, sim.trace.sizes, strict=True)
        ]
        results[f"sim_{policy}"] = {
            **figures(records, total_gpus),
            "backfilled": s["backfilled_jobs"],
            "sched_per_decision_us": 1e6 * sim.policy_seconds / max(1, sim.decisions),
            "sched_cycles": sim.decisions,
        }
    for policy, (records, _, (cycles, mean_s)) in live.items():
        results[f"live_{policy}"] = {
            **figures(records, total_gpus),
            "backfilled": None,
            "sched_cycles": cycles,
            "sched_admission_mean_us": 1e6 * mean_s,
        }

    (out / "side_by_side.json").write_text(json.dumps({"notes": notes, "results": results}, indent=2))
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"workload: {len(specs)} jobs on {args.nodes} nodes x {args.gpus} GPUs "
        f"(seed {args.seed}); load {load}"
    )
    header = ("system", "jobs", "util", "wait mean", "wait p95", "whole-cluster wait", "makespan", "backfill")
    print("{:18s} {:>4s} {:>6s} {:>9s} {:>8s} {:>18s} {:>8s} {:>8s}".format(*header))
    for name, r in results.items():
        backfilled = "n/a" if r["backfilled"] is None else str(r["backfilled"])
        print(
            f"{name:18s} {r['jobs']:4d} {r['gpu_utilisation']:6.3f} {r['wait_mean_s']:9.1f} "
            f"{r['wait_p95_s']:8.0f} {r['wait_whole_cluster_jobs_mean_s']:18.1f} "
            f"{r['makespan_s']:8.0f} {backfilled:>8s}"
        )
    line = []
    for name, r in results.items():
        line += [
            f"{name}_util={r['gpu_utilisation']:.3f}",
            f"{name}_wait_mean_s={r['wait_mean_s']:.1f}",
            f"{name}_wait_p95_s={r['wait_p95_s']:.0f}",
        ]
        if r["backfilled"] is not None:
            line.append(f"{name}_backfilled={r['backfilled']}")
    line.append(f"slurm_sched_main_mean_us={results['slurm']['sched_main_mean_us']}")
    line.append(f"slurm_sched_backfill_mean_us={results['slurm']['sched_backfill_mean_us']}")
    line.append(f"sim_easy_sched_per_decision_us={results['sim_easy']['sched_per_decision_us']:.1f}")
    for policy in live:
        mean_us = results[f"live_{policy}"]["sched_admission_mean_us"]
        line.append(f"live_{policy}_admission_cycle_mean_us={mean_us:.0f}")
    print(" ".join(line))
    if live_error:
        sys.exit(f"live replay failed: {live_error}")


if __name__ == "__main__":
    main()
