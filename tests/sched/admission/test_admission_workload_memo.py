"""The incremental snapshot: a workload whose object did not change since the last snapshot is
not converted again, and what the memo returns is exactly what a fresh conversion gives."""

from __future__ import annotations

from typing import Any

from admissionkit import manifests, one_queue, workload

from kubehpc.sched.admission import build
from kubehpc.sched.admission.build import WorkloadMemo

Obj = dict[str, Any]


def queues(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    objs = manifests(text)
    flavors = {f.name: f for f in map(build.flavor_of, (o for o in objs if o["kind"] == "ResourceFlavor"))}
    cqs = {
        o["metadata"]["name"]: build.cluster_queue_of(o, flavors) for o in objs if o["kind"] == "ClusterQueue"
    }
    lqs = {lq.key: lq for lq in map(build.local_queue_of, (o for o in objs if o["kind"] == "LocalQueue"))}
    return lqs, cqs


def test_unchanged_workloads_are_not_converted_again() -> None:
    lqs, cqs = queues(one_queue())
    a, b = workload("a"), workload("b", created=1)
    memo = WorkloadMemo()
    first = memo.workloads([a, b], lqs, cqs)
    assert memo.converted == 2
    again = memo.workloads([a, b], lqs, cqs)
    assert memo.converted == 2
    assert [w.name for w in again] == ["a", "b"]
    assert again[0] is first[0] and again[1] is first[1]


def test_a_new_version_of_a_workload_is_converted_again() -> None:
    lqs, cqs = queues(one_queue())
    a, b = workload("a"), workload("b", created=1)
    memo = WorkloadMemo()
    first = memo.workloads([a, b], lqs, cqs)
    b2 = workload("b", created=1, admitted_in="cluster-queue", flavors={"cpu": "default-flavor"})
    out = memo.workloads([a, b2], lqs, cqs)
    assert memo.converted == 3  # a, b, then b's new version
    assert out[0] is first[0]
    assert out[1] == build.workload_of(b2, lqs, cqs)
    assert out[1].reserved is not None


def test_a_change_of_the_queues_converts_every_workload_again() -> None:
    lqs, cqs = queues(one_queue())
    a = workload("a")
    memo = WorkloadMemo()
    assert memo.workloads([a], lqs, cqs)[0].problem == ""
    out = memo.workloads([a], {}, cqs)  # the LocalQueue was deleted
    assert memo.converted == 2
    assert out[0].problem == "LocalQueueNotFound"


def test_finished_workloads_stay_out_without_being_converted_again() -> None:
    lqs, cqs = queues(one_queue())
    done = workload("done", finished=True)
    memo = WorkloadMemo()
    assert memo.workloads([done], lqs, cqs) == []
    assert memo.workloads([done], lqs, cqs) == []
    assert memo.converted == 1


def test_workloads_gone_from_the_objects_are_gone_from_the_snapshot() -> None:
    lqs, cqs = queues(one_queue())
    a, b = workload("a"), workload("b", created=1)
    memo = WorkloadMemo()
    memo.workloads([a, b], lqs, cqs)
    assert [w.name for w in memo.workloads([b], lqs, cqs)] == ["b"]
