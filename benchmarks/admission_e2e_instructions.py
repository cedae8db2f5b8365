"""Instructions of ``admission_e2e.py``'s timed part, counted by callgrind: a steadier figure
than its wall-clock rate, which moves by a fifth on a shared machine. The total still moves by
up to ~8 % between runs of one code (the controllers' threads batch their work differently from
run to run); the inclusive count of a function called once per object written moves by under
1 %, so compare those.

Runs the benchmark under ``valgrind --tool=callgrind`` with instrumentation switched on only
between its ``--profile`` hooks, writes the callgrind file (for ``callgrind_annotate
--inclusive=yes``) and prints ``name=value`` last. Needs valgrind (Debian
package ``valgrind``); about two minutes for 1,000 Jobs.

    .venv/bin/python benchmarks/admission_e2e_instructions.py [--jobs 1000] [--out FILE]

With ``--child`` it is the process under valgrind: the benchmark with the hooks replaced.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CALLGRIND_SLOWDOWN = 50  # e2e CPU per workload under callgrind / without (74 / 1.4 ms)
SHAPE = ["--queues", "100", "--cohorts", "10", "--nodes", "150"]


def child(args: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    import admission_e2e as bench

    def toggle(on: bool) -> None:
        state = "on" if on else "off"
        subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True)

    # The controllers close a write batch (and the admission loop a chunk of a cycle's results)
    # after 20 ms of wall time; under callgrind the code runs ~50 times slower, so that bound
    # would cut every batch to a sync or two and count the instructions of a different run.
    # Scaled, a batch holds what it holds at full speed.
    from kubehpc.controllers.job import workqueue
    from kubehpc.controllers.kueue import admission

    workqueue.WRITE_BATCH_S *= CALLGRIND_SLOWDOWN
    admission.WRITE_BATCH_S *= CALLGRIND_SLOWDOWN  # its own binding of the same bound

    bench.start_profile = lambda path: toggle(True)  # type: ignore[assignment,return-value]
    bench.stop_profile = lambda proc: toggle(False)  # type: ignore[assignment]
    sys.argv = ["admission_e2e.py", "--profile", "callgrind", *args]
    bench.main()


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--out", default="callgrind.admission_e2e.out")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("needs valgrind and callgrind_control (apt-get install valgrind)")
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={args.out}",
        sys.executable,
        __file__,
        "--child",
        "--jobs",
        str(args.jobs),
        *SHAPE,
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "KUBEHPC_NATIVE": "require"})
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(
            f"callgrind run failed ({run.returncode}):\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        )
    instructions = int(found.group(1).replace(",", ""))
    last = run.stdout.strip().splitlines()[-1]
    print(last)
    cycles = re.search(r"admission_cycles=(\d+)", last)
    print(
        f"jobs={args.jobs} instructions={instructions} admission_cycles={cycles.group(1) if cycles else '?'} "
        f"instructions_per_workload={instructions // args.jobs} callgrind_file={args.out}"
    )


if __name__ == "__main__":
    main()
