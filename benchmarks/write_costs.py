"""CPU per durable write, by the kinds of write one queued Job makes end to end
(``benchmarks/admission_e2e.py``): Pod creates (copied by the store, and handed over as the Job
controller hands over the pods it builds: ``WriteOptions.handed_over``), Workload creates (each
with a pod template of its own, as the job reconciler makes them), Events recorded through
the EventRecorder (handed over), and status updates. In process, in batches of 200 (as the
controllers write), SQLite-backed, with no watcher: the floor under what the control plane pays
per workload before any watch or controller work. Also the resident memory one kept encoded
Event costs, as orjson returns it and as the store keeps it (``records.encode``), each measured
in a fresh interpreter. Prints ``name=value`` last.

    .venv/bin/python benchmarks/write_costs.py [--writes 6000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from kubehpc.api.kinds import build_registry
from kubehpc.store.client import HANDED_OVER, READ_ONLY_RESULT
from kubehpc.store.events import EventRecorder
from kubehpc.store.records import encode
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


def workload(i: int) -> dict[str, Any]:
    """A Workload as the job reconciler creates one for Job ``i``: the Job's pod template,
    labelled with the Job's name, so that no two are alike."""
    labels = {"job-name": f"job-{i}", "batch.kubernetes.io/job-name": f"job-{i}"}
    template = {"metadata": {"labels": labels}, "spec": pod(i)["spec"]}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"job-job-{i}", "namespace": "default"},
        "spec": {
            "queueName": "lq",
            "priority": 100,
            "podSets": [{"name": "main", "count": 1, "template": template}],
        },
    }


def cpu_us_each(store: Store, n: int, write: Callable[[int], object]) -> float:
    start = time.process_time()
    for lo in range(0, n, BATCH):
        with store.batch():
            for i in range(lo, min(lo + BATCH, n)):
                write(i)
    return (time.process_time() - start) / n * 1e6


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def kept_bytes_each(n: int, encoder: Callable[[Any], bytes]) -> float:
    """Resident memory per encoded Event kept, ``n`` of them (growth of the process's RSS)."""
    event = orjson.loads(EVENT)
    before = resident_bytes()
    kept = [encoder({**event, "count": i}) for i in range(n)]
    grown = resident_bytes() - before
    assert len(kept) == n
    return grown / n


def kept_bytes_in_fresh_process(n: int, encoder: str) -> float:
    """:func:`kept_bytes_each` in a new interpreter, whose heap has no freed memory to reuse."""
    out = subprocess.run(
        [sys.executable, __file__, "--kept", encoder, "--writes", str(n)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout)


# An Event as the store keeps it (450 bytes of JSON; admission_e2e's Events are ~700).
EVENT = orjson.dumps(
    {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "job-0.18ee4a88d35057fe", "namespace": "default", "resourceVersion": "962"},
        "involvedObject": {"kind": "Job", "apiVersion": "batch/v1", "name": "job-0", "namespace": "default"},
        "reason": "CreatedWorkload",
        "message": "Created Workload: default/job-job-0-4cce7",
        "type": "Normal",
        "source": {"component": "kueue-job-reconciler"},
        "firstTimestamp": "2026-12-05T07:20:52Z",
        "lastTimestamp": "2026-12-05T07:20:52Z",
        "count": 1,
    }
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writes", type=int, default=6000, help="writes of each kind")
    parser.add_argument("--kept", choices=("orjson", "encode"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    n = args.writes
    if args.kept:  # the child of kept_bytes_in_fresh_process
        print(kept_bytes_each(n, orjson.dumps if args.kept == "orjson" else encode))
        return
    registry = build_registry(("kubehpc.api.kinds.core", "kubehpc.api.kinds.kueue"))
    with (
        tempfile.TemporaryDirectory(prefix="kubehpc-write-costs-") as tmp,
        Store(registry, Path(tmp) / "s.db") as store,
    ):
        create_us = cpu_us_each(store, n, lambda i: store.create(pod(i), READ_ONLY_RESULT))
        handed_us = cpu_us_each(store, n, lambda i: store.create(pod(i, "handed"), HANDED_OVER))
        workload_us = cpu_us_each(store, n, lambda i: store.create(workload(i), HANDED_OVER))
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
    kept_orjson = kept_bytes_in_fresh_process(n * 4, "orjson")
    kept_encoded = kept_bytes_in_fresh_process(n * 4, "encode")
    print(f"{n} of each, batches of {BATCH}, durable, no watcher; CPU per write:")
    print(
        f"  Pod create {create_us:.0f} us (handed over {handed_us:.0f} us), "
        f"Workload create {workload_us:.0f} us, Event recorded {event_us:.0f} us, "
        f"Pod status update {status_us:.0f} us"
    )
    print(
        f"resident memory per kept Event of {len(EVENT)} JSON bytes: {kept_orjson:.0f} B as orjson "
        f"returns it, {kept_encoded:.0f} B as the store keeps it"
    )
    print(
        f"pod_create_us={create_us:.0f} pod_create_handed_over_us={handed_us:.0f} "
        f"workload_create_us={workload_us:.0f} event_us={event_us:.0f} "
        f"status_update_us={status_us:.0f} kept_event_bytes_orjson={kept_orjson:.0f} "
        f"kept_event_bytes_encoded={kept_encoded:.0f} event_json_bytes={len(EVENT)} writes={n}"
    )


if __name__ == "__main__":
    main()
