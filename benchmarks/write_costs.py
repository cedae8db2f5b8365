"""CPU per durable write, by the kinds of write one queued Job makes end to end
(``benchmarks/admission_e2e.py``): Pod creates (copied by the store, and handed over as the Job
controller hands over the pods it builds: ``WriteOptions.handed_over``), Events recorded through
the EventRecorder (handed over), and status updates. In process, in batches of 200 (as the
controllers write), SQLite-backed, with no watcher: the floor under what the control plane pays
per workload before any watch or controller work. Prints ``name=value`` last.

    .venv/bin/python benchmarks/write_costs.py [--writes 6000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubehpc.api.kinds import build_registry
from kubehpc.store.client import HANDED_OVER, READ_ONLY_RESULT
from kubehpc.store.events import EventRecorder
from kubehpc.store.store import Store

BATCH = 200


def pod(i: int, prefix: str = "pod") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{prefix}-{i}", "namespace": "default", "labels": {"job-name": f"job-{i}"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }


def cpu_us_each(store: Store, n: int, write: Callable[[int], object]) -> float:
    start = time.process_time()
    for lo in range(0, n, BATCH):
        with store.batch():
            for i in range(lo, min(lo + BATCH, n)):
                write(i)
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writes", type=int, default=6000, help="writes of each kind")
    n = parser.parse_args().writes
    registry = build_registry(("kubehpc.api.kinds.core",))
    with (
        tempfile.TemporaryDirectory(prefix="kubehpc-write-costs-") as tmp,
        Store(registry, Path(tmp) / "s.db") as store,
    ):
        create_us = cpu_us_each(store, n, lambda i: store.create(pod(i), READ_ONLY_RESULT))
        handed_us = cpu_us_each(store, n, lambda i: store.create(pod(i, "handed"), HANDED_OVER))
        pods = [store.get("v1", "Pod", f"pod-{i}", "default", read_only=True) for i in range(n)]
        recorder = EventRecorder(store, "write-costs")
        event_us = cpu_us_each(
            store, n, lambda i: recorder.record(pods[i], "Normal", "Scheduled", f"assigned pod-{i}")
        )
        status_us = cpu_us_each(
            store,
            n,
            lambda i: store.update_status({**pods[i], "status": {"phase": "Pending"}}, READ_ONLY_RESULT),
        )
    print(f"{n} of each, batches of {BATCH}, durable, no watcher; CPU per write:")
    print(
        f"  Pod create {create_us:.0f} us (handed over {handed_us:.0f} us), "
        f"Event recorded {event_us:.0f} us, Pod status update {status_us:.0f} us"
    )
    print(
        f"pod_create_us={create_us:.0f} pod_create_handed_over_us={handed_us:.0f} event_us={event_us:.0f} "
        f"status_update_us={status_us:.0f} writes={n}"
    )


if __name__ == "__main__":
    main()
