"""Backfill in the admission core: a ClusterQueue's backfill policy (annotation
``kubehpc.io/backfill`` or the scheduler config) reserves quota for the workload that does not fit,
from the running workloads' estimated ends (admitted at + runtime estimate).

The scene of most tests: a ClusterQueue of 10 cpus; ``running`` holds 6 since t=0 and is expected
to run 100 s; now is t=10. The head ``big`` (8 cpus) does not fit: its reservation (shadow time)
is t=100, when 10 cpus are free, leaving 2 extra.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from admissionkit import manifests, pending, snapshot, workload
from hypothesis import given, settings
from hypothesis import strategies as st

from kubehpc.sched.admission import AdmissionConfig, PendingCode, decide
from kubehpc.sched.admission.reservations import RUNTIME_ESTIMATE_ANNOTATION, runtime_estimate_of
from kubehpc.sched.backfill import Policy, Pool, decide_starts

NOW = 10.0
Obj = dict[str, Any]


def queue(policy: str | None) -> str:
    note = f"annotations: {{kubehpc.io/backfill: {policy}}}" if policy else ""
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: default-flavor}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cluster-queue
  {note}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources:
      - {{name: cpu, nominalQuota: 10}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: user-queue}}
spec: {{clusterQueue: cluster-queue}}
"""


def job(name: str, cpus: int, estimate: float | None, created: float, **kw: Any) -> Obj:
    wl = workload(name, requests={"cpu": str(cpus)}, created=created, **kw)
    if estimate is not None:
        wl["metadata"]["annotations"] = {RUNTIME_ESTIMATE_ANNOTATION: str(estimate)}
    return wl


def running(cpus: int = 6, estimate: float | None = 100) -> Obj:
    return job("running", cpus, estimate, 0.0, admitted_in="cluster-queue", admitted_at=0.0)


def admitted_names(policy: str | None, *workloads: Obj, config: AdmissionConfig | None = None) -> list[str]:
    d = decide(snapshot(queue(policy), running(), *workloads, config=config), NOW)
    return sorted(a.workload.split("/", 1)[1] for a in d.admissions)


def test_without_a_policy_a_small_workload_passes_the_blocked_head_as_kueue_does() -> None:
    got = admitted_names(None, job("big", 8, 50, 1), job("long", 4, 200, 2))
    assert got == ["long"]


def test_easy_holds_back_a_workload_that_would_delay_the_heads_reservation() -> None:
    d = decide(snapshot(queue("easy"), running(), job("big", 8, 50, 1), job("long", 4, 200, 2)), NOW)
    assert d.admissions == ()
    why = pending(d, "long")
    assert why.reason.code == PendingCode.WAITS_FOR_RESERVATION
    assert "default/big at 1970-01-01T00:01:40Z" in why.message


def test_easy_admits_a_workload_that_ends_by_the_shadow_time() -> None:
    assert admitted_names("easy", job("big", 8, 50, 1), job("short", 4, 90, 2)) == ["short"]


def test_easy_admits_a_long_workload_that_fits_in_the_extra_quota_and_consumes_it() -> None:
    # 2 extra cpus at t=100: the first long 2-cpu workload takes them, the second may not.
    got = admitted_names("easy", job("big", 8, 50, 1), job("long-a", 2, 500, 2), job("long-b", 2, 500, 3))
    assert got == ["long-a"]


def test_a_workload_without_estimate_backfills_only_into_the_extra_quota() -> None:
    assert admitted_names("easy", job("big", 8, 50, 1), job("unknown", 4, None, 2)) == []
    assert admitted_names("easy", job("big", 8, 50, 1), job("unknown", 2, None, 2)) == ["unknown"]


def test_a_running_workload_without_estimate_gives_the_head_no_reservation_and_blocks_no_one() -> None:
    # Nobody knows when the head will fit: EASY protects nothing (as with an infinite shadow time).
    d = decide(
        snapshot(queue("easy"), running(estimate=None), job("big", 8, 50, 1), job("long", 4, 900, 2)), NOW
    )
    assert [a.workload for a in d.admissions] == ["default/long"]


def test_conservative_protects_every_reservation_not_only_the_heads() -> None:
    # big reserved [100, 150); huge (10 cpus) reserved [150, 250). A 2-cpu workload running
    # [10, 210) fits in EASY's extra quota but would delay huge: conservative holds it back.
    queued = (job("big", 8, 50, 1), job("huge", 10, 100, 2), job("small", 2, 200, 3))
    assert admitted_names("easy", *queued) == ["small"]
    d = decide(snapshot(queue("conservative"), running(), *queued), NOW)
    assert d.admissions == ()
    assert pending(d, "small").reason.code == PendingCode.WAITS_FOR_RESERVATION


def test_conservative_admits_what_delays_no_reservation() -> None:
    queued = (job("big", 8, 50, 1), job("huge", 10, 100, 2), job("quick", 2, 80, 3))
    assert admitted_names("conservative", *queued) == ["quick"]


def test_the_scheduler_config_sets_the_policy_of_queues_that_name_none() -> None:
    queued = (job("big", 8, 50, 1), job("long", 4, 200, 2))
    assert admitted_names(None, *queued, config=AdmissionConfig(backfill="easy")) == []
    # The ClusterQueue's own annotation wins over the config.
    assert admitted_names("none", *queued, config=AdmissionConfig(backfill="easy")) == ["long"]


def test_a_backfill_policy_lets_workloads_pass_a_blocked_head_under_strict_fifo() -> None:
    setup = manifests(queue("easy"))
    setup[1]["spec"]["queueingStrategy"] = "StrictFIFO"
    d = decide(snapshot(setup, running(), job("big", 8, 50, 1), job("short", 4, 90, 2)), NOW)
    assert [a.workload for a in d.admissions] == ["default/short"]


def test_an_unknown_policy_makes_the_cluster_queue_inactive_naming_the_annotation() -> None:
    d = decide(snapshot(queue("sometimes"), job("short", 1, 10, 1)), NOW)
    assert d.admissions == ()
    state = d.cluster_queues[0]
    assert (state.active, state.reason) == (False, "InvalidBackfillPolicy")
    assert "kubehpc.io/backfill='sometimes'" in state.message


# --- estimated starts ------------------------------------------------------------------------------


def estimates(policy: str | None, *queued: Obj, setup: str | None = None) -> dict[str, float | None]:
    d = decide(snapshot(setup or queue(policy), running(), *queued), NOW, estimate=True)
    return {p.workload.split("/", 1)[1]: p.estimated_start for p in d.pending}


def test_every_pending_workload_gets_its_earliest_slot_behind_those_ahead_of_it() -> None:
    got = estimates("conservative", job("big", 8, 50, 1), job("huge", 10, 100, 2), job("small", 2, 200, 3))
    assert got == {"big": 100.0, "huge": 150.0, "small": 250.0}


def test_estimates_are_given_whatever_the_backfill_policy() -> None:
    got = estimates(None, job("big", 8, 50, 1), job("huge", 10, 100, 2))
    assert got == {"big": 100.0, "huge": 150.0}


def test_behind_a_workload_of_unknown_length_the_start_is_unknown() -> None:
    got = estimates(None, job("big", 8, None, 1), job("huge", 10, 100, 2))
    assert got == {"big": 100.0, "huge": None}


def test_a_workload_that_never_fits_has_no_estimate() -> None:
    got = estimates(None, job("giant", 11, 10, 1), job("big", 8, 50, 2))
    assert got == {"giant": None, "big": 100.0}


def test_under_strict_fifo_no_estimate_is_earlier_than_the_one_ahead() -> None:
    setup = manifests(queue(None))
    setup[1]["spec"]["queueingStrategy"] = "StrictFIFO"
    d = decide(snapshot(setup, running(), job("big", 8, 50, 1), job("tiny", 1, 5, 2)), NOW, estimate=True)
    got = {p.workload: p.estimated_start for p in d.pending}
    assert got == {"default/big": 100.0, "default/tiny": 100.0}


def test_decide_gives_no_estimates_unless_asked() -> None:
    d = decide(snapshot(queue(None), running(), job("big", 8, 50, 1)), NOW)
    assert pending(d, "big").estimated_start is None


# --- where the runtime estimate comes from ---------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "spec", "expected"),
    [
        ({RUNTIME_ESTIMATE_ANNOTATION: "600"}, {"maximumExecutionTimeSeconds": 900}, 600.0),
        ({}, {"maximumExecutionTimeSeconds": 900}, 900.0),
        (
            {},
            {"podSets": [{"template": {"spec": {"activeDeadlineSeconds": 300}}}, {"template": {"spec": {}}}]},
            300.0,
        ),
        ({RUNTIME_ESTIMATE_ANNOTATION: "soon"}, {"maximumExecutionTimeSeconds": 900}, 900.0),
        ({RUNTIME_ESTIMATE_ANNOTATION: "-5"}, {}, None),
        ({}, {}, None),
    ],
)
def test_the_runtime_estimate_comes_from_the_most_specific_source(
    annotations: dict[str, str], spec: dict[str, object], expected: float | None
) -> None:
    assert runtime_estimate_of({"annotations": annotations}, spec) == expected


def test_the_kueue_maximum_execution_time_is_the_estimate_of_a_running_workload() -> None:
    held = workload("running", requests={"cpu": "6"}, admitted_in="cluster-queue", admitted_at=0.0)
    held["spec"]["maximumExecutionTimeSeconds"] = 100
    d = decide(snapshot(queue("easy"), held, job("big", 8, 50, 1), job("long", 4, 200, 2)), NOW)
    assert pending(d, "long").reason.code == PendingCode.WAITS_FOR_RESERVATION


# --- one rule: the admission core's backfill is the simulator's on a one-queue pool ---------------

CAP = 8


@st.composite
def one_queue(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]], list[tuple[int, int, int]]]:
    """(now, queue of (cpus, estimate), running of (cpus, admitted at, estimate))."""
    now = draw(st.integers(10, 20))
    running = []
    used = 0
    for _ in range(draw(st.integers(0, 4))):
        cpus = draw(st.integers(1, CAP))
        if used + cpus > CAP:
            break
        used += cpus
        running.append((cpus, draw(st.integers(0, now)), draw(st.integers(1, 30))))
    queue = draw(st.lists(st.tuples(st.integers(1, CAP), st.integers(1, 30)), min_size=1, max_size=7))
    return now, queue, running


def cpu_queue(policy: str) -> str:
    return queue(policy).replace("nominalQuota: 10", f"nominalQuota: {CAP}")


@settings(max_examples=150, deadline=None)
@given(one_queue(), st.sampled_from(["easy", "conservative"]))
def test_the_admission_core_admits_what_the_simulators_policy_starts(
    case: tuple[int, list[tuple[int, int]], list[tuple[int, int, int]]], policy: str
) -> None:
    now, queued, running_jobs = case
    held = [
        job(f"run-{i}", cpus, est, 0.0, admitted_in="cluster-queue", admitted_at=float(at))
        for i, (cpus, at, est) in enumerate(running_jobs)
    ]
    waiting = [job(f"q-{i}", cpus, est, float(i + 1)) for i, (cpus, est) in enumerate(queued)]
    d = decide(snapshot(cpu_queue(policy), *held, *waiting), float(now))
    admitted = sorted(int(a.workload.rsplit("-", 1)[1]) for a in d.admissions)
    pool = Pool(
        now=float(now),
        capacity=np.array([CAP * 1000], dtype=np.int64),
        free=np.array([(CAP - sum(c for c, _, _ in running_jobs)) * 1000], dtype=np.int64),
        queue_sizes=np.array([[c * 1000] for c, _ in queued], dtype=np.int64).reshape(-1, 1),
        queue_estimates=np.array([e for _, e in queued], dtype=np.float64),
        running_ends=np.array([at + e for _, at, e in running_jobs], dtype=np.float64),
        running_sizes=np.array([[c * 1000] for c, _, _ in running_jobs], dtype=np.int64).reshape(-1, 1),
    )
    starts = decide_starts(Policy(policy), pool)
    assert admitted == [int(x) for x in starts.starts]
