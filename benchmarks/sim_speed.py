"""Replay speed of the simulator: HPC2N (202,876 jobs, 240 processors) with FCFS and with EASY.

    .venv/bin/python benchmarks/sim_speed.py [--trace FILE] [--policies fcfs,easy]

jobs_per_s = jobs replayed / wall seconds of the replay (the event loop and every policy
decision; reading and parsing the trace is timed apart as load_s); cpu_jobs_per_s divides by
the process's CPU seconds instead, which a busy shared machine disturbs less. Peak RSS covers
the whole process.
Targets (issue 6): >= 50,000 jobs/s FCFS, >= 30,000 jobs/s EASY, < 2 GiB. The last line is
``name=value ...``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

from kubehpc.sched.backfill import Policy
from kubehpc.sim.engine import SimOptions, simulate
from kubehpc.sim.metrics import summary
from kubehpc.sim.traces import read_trace

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "traces" / "swf" / "HPC2N-2002-2.1-cln.swf.gz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=str(DEFAULT))
    parser.add_argument("--policies", default="fcfs,easy")
    args = parser.parse_args()
    t0 = time.perf_counter()
    trace = read_trace(args.trace)
    load_s = time.perf_counter() - t0
    if trace.machine is None:
        print("the trace declares no machine size", file=sys.stderr)
        return 1
    figures: dict[str, str] = {"jobs": str(len(trace)), "load_s": f"{load_s:.2f}"}
    print(
        f"trace {Path(args.trace).name}: {len(trace):,} jobs on {int(trace.machine[0])} processors, "
        f"read in {load_s:.2f} s"
    )
    for name in args.policies.split(","):
        policy = Policy(name)
        cpu0 = time.process_time()
        result = simulate(trace, trace.machine, SimOptions(policy=policy))
        cpu_s = time.process_time() - cpu0
        s = summary(result)
        rate = len(result.start) / result.wall_seconds
        print(
            f"{name:>12}: {result.wall_seconds:6.2f} s, {rate:>9,.0f} jobs/s "
            f"({result.decisions:,} decisions, {result.policy_seconds:.2f} s in the policy); "
            f"avg wait {s['avg_wait_s']:,.1f} s, avg bsld {s['avg_bsld']:,.2f}, "
            f"max wait {s['max_wait_s']:,.0f} s"
        )
        figures[f"{name}_jobs_per_s"] = f"{rate:.0f}"
        # On a shared machine wall time includes waiting for a core; CPU time does not.
        figures[f"{name}_cpu_jobs_per_s"] = f"{len(result.start) / cpu_s:.0f}"
        figures[f"{name}_sim_s"] = f"{result.wall_seconds:.2f}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    figures["peak_rss_mib"] = f"{peak:.0f}"
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
