"""``kubehpc sim``: replay a trace through the scheduling core on a virtual clock.

    kubehpc sim --trace KTH-SP2-1996-2.1-cln.swf.gz --policy fcfs --json
    kubehpc sim --trace KTH-SP2-1996-2.1-cln.swf.gz --policy fcfs --policy easy \\
        --policy conservative --report out/kth

No control plane is needed. The pool is ``--procs N``, the totals of ``--cluster FILE``, or
the machine size the trace's header declares. ``--queues FILE`` (Kueue queue and quota
manifests) sends every job through the admission core instead (``sim/queues.py``).
``--placement nodes`` places every pod of a workload YAML on the cluster config's nodes, each
job as a gang, through the gang core (``sim/nodes.py``).
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

import numpy as np

from kubehpc.cli.session import CliError, Session
from kubehpc.sched.backfill import Policy
from kubehpc.sim.cluster import capacity_from_cluster, capacity_from_header, capacity_from_procs
from kubehpc.sim.engine import NodePolicy, Placement, SimOptions, SimResult, simulate
from kubehpc.sim.estimates import EstimateSource
from kubehpc.sim.metrics import summary
from kubehpc.sim.nodecluster import NodeCluster, load_node_cluster, read_topology
from kubehpc.sim.nodes import POLICIES as NODE_POLICIES
from kubehpc.sim.nodes import simulate_nodes
from kubehpc.sim.queues import read_queues, simulate_queues
from kubehpc.sim.report import write_jobs_csv, write_report
from kubehpc.sim.traces import Trace, TraceError, read_trace


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "sim",
        parents=[common],
        help="replay a workload trace (SWF, Philly GPU CSV, workload YAML) through the scheduler",
    )
    p.add_argument("--trace", required=True, help="trace file: .swf, .swf.gz, .csv (Philly GPU) or .yaml")
    pool = p.add_mutually_exclusive_group()
    pool.add_argument("--procs", type=int, help="one pool of N processors (GPUs for a GPU trace)")
    pool.add_argument("--cluster", help="cluster config (as for `kubehpc up`): the pool is its totals")
    p.add_argument(
        "--queues",
        metavar="FILE",
        help="Kueue ResourceFlavors, Cohorts, ClusterQueues and LocalQueues: jobs go through the "
        "admission core, to the LocalQueue named by their queue",
    )
    p.add_argument(
        "--placement",
        choices=[str(x) for x in Placement],
        default=str(Placement.POOL),
        help="pool: one bin per resource (default); nodes: every pod on a node of --cluster, "
        "each job as a gang, with its pod sets' topology requests (workload YAML only)",
    )
    p.add_argument(
        "--topology",
        metavar="FILE",
        help="with --placement nodes: a Kueue Topology whose levels (node labels) pod sets may "
        "require or prefer (default: the cluster config's block and rack)",
    )
    p.add_argument(
        "--policy",
        action="append",
        choices=[str(x) for x in Policy] + [str(x) for x in NodePolicy],
        help="queue policy; repeat to compare several (default: fcfs). With --placement nodes: "
        "fcfs or first-fit (every job that fits starts, as the live gang scheduler does)",
    )
    p.add_argument(
        "--estimate",
        choices=[str(x) for x in EstimateSource],
        default=str(EstimateSource.REQUESTED),
        help="runtime estimates the policies plan with (default: requested)",
    )
    p.add_argument("--kill-at-limit", action="store_true", help="end jobs at their requested time")
    p.add_argument(
        "--start-estimates",
        action="store_true",
        help="record each job's estimated start at submit and report their accuracy (slower)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--csv", help="write the per-job results to this CSV file (one policy only)")
    p.add_argument("--report", metavar="DIR", help="write an HTML report, plots, CSVs and summary.json")
    p.set_defaults(run=run)


def _capacity(trace: Trace, args: argparse.Namespace) -> np.ndarray:
    if args.procs is not None:
        return capacity_from_procs(trace, args.procs)
    if args.cluster:
        return capacity_from_cluster(trace, args.cluster)
    return capacity_from_header(trace)


def _table(s: dict[str, Any]) -> list[str]:
    def fmt(v: Any) -> str:
        if v is None:
            return "-"
        return f"{v:,.2f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)

    rows = [
        ("policy", s["policy"]),
        ("jobs", s["jobs"]),
        ("skipped", s["skipped"]),
        ("avg wait (s)", s["avg_wait_s"]),
        ("p95 wait (s)", s["wait_s"]["p95"]),
        ("max wait (s)", s["max_wait_s"]),
        ("avg bounded slowdown", s["avg_bsld"]),
        ("utilisation", s["utilization"]),
        ("backfilled jobs", s["backfilled_jobs"]),
        ("sim seconds", s["sim_seconds"]),
    ]
    lines = [f"{name:<22} {fmt(value)}" for name, value in rows]
    for reason, count in (s["skipped_by_reason"] or {}).items():
        lines.append(f"  skipped: {reason}: {count:,}")
    return lines


def _policies(args: argparse.Namespace) -> list[Policy | NodePolicy]:
    names = args.policy or [str(Policy.FCFS)]
    policies: list[Policy | NodePolicy] = [
        NodePolicy(p) if p in {str(x) for x in NodePolicy} else Policy(p) for p in names
    ]
    if args.placement == str(Placement.NODES):
        if not args.cluster:
            raise CliError("--placement nodes: give the nodes with --cluster FILE")
        if args.queues:
            raise CliError(
                "--placement nodes: --queues is not modelled on nodes yet (quotas replay on the pool)"
            )
        if args.start_estimates:
            raise CliError(
                "--placement nodes: --start-estimates is not modelled (no node-level reservations)"
            )
        for policy in policies:
            if policy not in NODE_POLICIES:
                raise CliError(
                    f"--policy {policy}: not modelled with --placement nodes (backfill needs "
                    "reservations on nodes and topology domains, which the core does not plan); "
                    f"use {' or '.join(map(str, NODE_POLICIES))}"
                )
    else:
        for policy in policies:
            if isinstance(policy, NodePolicy):
                raise CliError(f"--policy {policy}: needs --placement nodes")
        if args.topology:
            raise CliError("--topology: needs --placement nodes")
    return policies


def run(session: Session, args: argparse.Namespace) -> int:
    policies = _policies(args)
    if args.csv and len(policies) > 1:
        raise CliError("--csv takes one --policy; with several, use --report DIR (one CSV per policy)")
    nodes: NodeCluster | None = None
    try:
        trace = read_trace(args.trace)
        if args.placement == str(Placement.NODES):
            levels = read_topology(args.topology) if args.topology else None
            nodes = load_node_cluster(args.cluster, levels)
            capacity = nodes.capacity(trace.resources)
        else:
            capacity = _capacity(trace, args)
        queues = read_queues(args.queues) if args.queues else None
    except TraceError as exc:
        raise CliError(str(exc)) from None
    results: list[SimResult] = []
    for policy in policies:
        options = SimOptions(
            policy=policy,
            estimate=EstimateSource(args.estimate),
            kill_at_limit=args.kill_at_limit,
            start_estimates=args.start_estimates,
        )
        if nodes is not None:
            try:
                results.append(simulate_nodes(trace, nodes, options))
            except TraceError as exc:
                raise CliError(str(exc)) from None
        elif queues is not None:
            results.append(simulate_queues(trace, capacity, queues, options))
        else:
            results.append(simulate(trace, capacity, options))
    summaries = [summary(r) for r in results]
    if args.csv:
        write_jobs_csv(results[0], Path(args.csv))
    if args.report:
        command = "kubehpc sim " + " ".join(shlex.quote(a) for a in _argv(args))
        index = write_report(results, args.report, command)
        if not args.json:
            print(f"report: {index}", file=session.stderr)
    if args.json:
        payload: dict[str, Any] = summaries[0] if len(summaries) == 1 else {"runs": summaries}
        print(json.dumps(payload), file=session.stdout)
    else:
        for i, s in enumerate(summaries):
            if i:
                print(file=session.stdout)
            print("\n".join(_table(s)), file=session.stdout)
    return 0


def _argv(args: argparse.Namespace) -> list[str]:
    out = ["--trace", args.trace]
    if args.procs is not None:
        out += ["--procs", str(args.procs)]
    if args.cluster:
        out += ["--cluster", args.cluster]
    if args.queues:
        out += ["--queues", args.queues]
    if args.placement != str(Placement.POOL):
        out += ["--placement", args.placement]
    if args.topology:
        out += ["--topology", args.topology]
    for p in args.policy or []:
        out += ["--policy", p]
    if args.estimate != str(EstimateSource.REQUESTED):
        out += ["--estimate", args.estimate]
    if args.kill_at_limit:
        out.append("--kill-at-limit")
    if args.start_estimates:
        out.append("--start-estimates")
    out += ["--report", args.report]
    return out
