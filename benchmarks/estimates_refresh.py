"""One pass of the estimated-start loop (``controllers/kueue/estimates.py``) after a single
Workload changed, on a store holding many: with the loop's kept memo of converted Workloads
(each pass converts only what changed) against a fresh memo per pass (every Workload converted
again, as before the memo).

    .venv/bin/python benchmarks/estimates_refresh.py [--admitted 10000] [--pending 2000] [--repeat 5]

The store is in memory with the Kueue kinds; one ClusterQueue with quota for the admitted
workloads (1 cpu each, runtime estimates of 1-2 hours), and pending ones behind them so every
pass estimates their starts. Each timed pass follows a label patch on one admitted Workload (so
the pass is due); times are medians of ``--repeat`` passes, with the garbage collector tuned as
``kubehpc up`` tunes it. The last line is ``name=value``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from backfill_live import workload as queued_workload

from kubehpc.api.kinds import build_registry
from kubehpc.cli.up import tune_gc
from kubehpc.controllers.kueue.estimates import EstimateLoop
from kubehpc.sched.admission import build
from kubehpc.store.client import PatchType
from kubehpc.store.store import Store

Obj = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"


def workload(i: int, admitted: bool, now: float) -> Obj:
    """Workload ``i`` in the shape of ``backfill_live.py``'s (1 cpu, a runtime estimate of 1-2
    hours), admitted a minute ago or pending."""
    obj = queued_workload(f"wl-{i}", 1, 3600 + i % 3600, now - 120, now - 60 if admitted else None)
    return {"apiVersion": KUEUE, "kind": "Workload", **obj}


def fill(store: Store, admitted: int, pending: int, now: float) -> None:
    store.create({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "f"}})
    quota = {"name": "f", "resources": [{"name": "cpu", "nominalQuota": admitted}]}
    store.create(
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [quota]}],
            },
        }
    )
    store.create(
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        }
    )
    with store.batch():
        for i in range(admitted + pending):
            obj = workload(i, i < admitted, now)
            status = obj.pop("status", None)
            created = store.create(obj)
            if status is not None:
                store.update_status({**created, "status": status})


def timed_pass(store: Store, loop: EstimateLoop, n: int, fresh_memo: bool) -> float:
    patch = {"metadata": {"labels": {"pass": str(n)}}}
    store.patch(KUEUE, "Workload", "wl-0", patch, PatchType.MERGE, "default")
    if fresh_memo:
        loop._memo = build.WorkloadMemo()  # as the loop was: nothing kept between passes
    start = time.perf_counter()
    loop.refresh()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admitted", type=int, default=10000)
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    store = Store(build_registry(), None)
    fill(store, args.admitted, args.pending, time.time())
    tune_gc()  # the collector as `kubehpc up` sets it, as the loop runs there
    loop = EstimateLoop(store)
    loop.refresh()  # the first pass writes every pending estimate: not timed
    loop.refresh()  # converts again what the first pass wrote
    times: dict[str, list[float]] = {"kept": [], "fresh": []}
    for n in range(args.repeat):  # interleaved, so load changes hit both alike
        times["fresh"].append(timed_pass(store, loop, 2 * n, fresh_memo=True))
        times["kept"].append(timed_pass(store, loop, 2 * n + 1, fresh_memo=False))
    kept, fresh = statistics.median(times["kept"]), statistics.median(times["fresh"])
    total = args.admitted + args.pending
    print(f"{total} Workloads ({args.admitted} admitted, {args.pending} pending), one changed per pass:")
    print(f"  fresh memo per pass (every Workload converted): {1000 * fresh:8.1f} ms")
    print(f"  kept memo (only the changed one converted):     {1000 * kept:8.1f} ms")
    print(
        f"workloads={total} refresh_fresh_ms={1000 * fresh:.1f} refresh_kept_ms={1000 * kept:.1f} "
        f"speedup={fresh / kept:.2f}"
    )


if __name__ == "__main__":
    main()
