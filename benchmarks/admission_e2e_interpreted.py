"""Interpreted Python calls in ``admission_e2e.py``'s timed part: which functions of the hot
path still run in the interpreter around the compiled modules (``make native``).

A profile hook (``sys.setprofile`` and ``threading.setprofile``) sees a ``call`` event for
every interpreted function, and none for mypyc-compiled ones or C builtins, so it counts
exactly the calls that leave compiled code for bytecode: the standard library's pure-Python
parts (``copy.deepcopy``, ``threading.Condition``, ``queue.Queue``), dataclass-generated
methods, pydantic's callbacks into the CRD rules, other libraries. The hook slows the run
several times over; the counts, not the rate, are the figures. Prints the most called
functions, then ``name=value`` last.

    .venv/bin/python benchmarks/admission_e2e_interpreted.py [--jobs 1000] [--top 40]
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
SHAPE = ["--queues", "100", "--cohorts", "10", "--nodes", "150"]


def where(code: Any) -> str:
    """``file:line:function``, the file relative to its package root or the standard library."""
    path = re.sub(r"^.*?(site-packages/|/src/|/lib/python3\.\d+/)", "", str(code.co_filename))
    return f"{path}:{code.co_firstlineno}:{code.co_name}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    import admission_e2e as bench

    calls: collections.Counter[Any] = collections.Counter()
    counting = False

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if counting and event == "call":
            calls[frame.f_code] += 1

    def start(path: str) -> None:
        nonlocal counting
        counting = True

    def stop(proc: None) -> None:
        nonlocal counting
        counting = False

    sys.setprofile(hook)
    threading.setprofile(hook)
    bench.start_profile = start  # type: ignore[assignment]
    bench.stop_profile = stop  # type: ignore[assignment]
    sys.argv = ["admission_e2e.py", "--profile", "interpreted", "--jobs", str(args.jobs), *SHAPE]
    bench.main()
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]

    total = sum(calls.values())
    own = sum(n for code, n in calls.items() if "kubehpc" in str(code.co_filename))
    print(f"most called interpreted functions (per {args.jobs} Jobs):")
    for code, n in calls.most_common(args.top):
        print(f"{n:9d}  {where(code)}")
    print(
        f"jobs={args.jobs} interpreted_calls={total} interpreted_calls_per_workload={total / args.jobs:.0f} "
        f"kubehpc_interpreted_calls_per_workload={own / args.jobs:.0f}"
    )


if __name__ == "__main__":
    main()
