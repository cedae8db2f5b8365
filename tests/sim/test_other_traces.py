"""The Philly GPU trace columns and kubehpc's workload YAML."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kubehpc.sim.cluster import capacity_from_cluster, capacity_from_procs
from kubehpc.sim.traces import TraceError, read_trace
from kubehpc.sim.traces.common import MALFORMED, NO_RUNTIME, NO_SIZE, TOO_LARGE
from kubehpc.sim.traces.philly import parse_philly
from kubehpc.sim.traces.workload import parse_workload, workload_trace

PHILLY = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:00:10,66.0,1,66.0,vc1
2017-10-09 07:00:00,100.0,8,800.0,vc2
2017-10-09 07:00:05,10.0,0,0.0,vc1
not-a-date,10.0,1,10.0,vc1
"""


def test_philly_rows_become_gpu_jobs_with_the_virtual_cluster_as_queue() -> None:
    t = parse_philly(PHILLY)
    assert t.resources == ("nvidia.com/gpu",)
    assert t.submit.tolist() == [0.0, 10.0]
    assert t.sizes[:, 0].tolist() == [8, 1]
    assert [t.queue_names[q] for q in t.queues] == ["vc2", "vc1"]
    assert np.isnan(t.requested).all()
    assert t.skipped == {MALFORMED: 1, NO_SIZE: 1}


def test_philly_rows_with_infinite_or_absurd_values_are_counted_not_replayed() -> None:
    """inf GPUs is not a number of GPUs; an inf duration is no run time; 1e30 GPUs parse but
    are larger than any machine."""
    text = (
        PHILLY.splitlines()[0]
        + "\n"
        + "\n".join(
            [
                "2017-10-09 07:00:00,10.0,inf,0.0,vc1",
                "2017-10-09 07:00:00,inf,1,0.0,vc1",
                "2017-10-09 07:00:00,10.0,1e30,0.0,vc1",
                "2017-10-09 07:00:00,10.0,2,20.0,vc1",
            ]
        )
    )
    t = parse_philly(text)
    assert t.skipped == {MALFORMED: 1, NO_RUNTIME: 1}
    fitted = t.fit_to(np.array([8]))
    assert fitted.sizes[:, 0].tolist() == [2]
    assert fitted.skipped[TOO_LARGE] == 1


def test_a_csv_without_the_philly_columns_is_rejected_naming_them() -> None:
    with pytest.raises(TraceError, match="num_gpus"):
        parse_philly("a,b\n1,2\n")


def test_the_shared_philly_trace_reads_whole(shared_dir: Path) -> None:
    t = read_trace(shared_dir / "traces" / "gpu" / "pollux_philly.csv")
    assert t.records == 82_247
    assert len(t) + sum(t.skipped.values()) == 82_247


WORKLOAD = {
    "apiVersion": "kubehpc.io/v1alpha1",
    "kind": "SimWorkload",
    "metadata": {"name": "demo"},
    "spec": {
        "jobs": [
            {
                "name": "train",
                "submit": 10,
                "runtime": 3600,
                "requestedTime": 7200,
                "queue": "team-a",
                "priority": 5,
                "user": "alice",
                "podSets": [
                    {"name": "workers", "count": 4, "requests": {"cpu": "2", "nvidia.com/gpu": 1}},
                    {"name": "launcher", "requests": {"cpu": "500m"}},
                ],
            },
            {"name": "small", "submit": 0, "runtime": 60, "podSets": [{"requests": {"cpu": 1}}]},
        ]
    },
}


def test_a_workload_jobs_request_is_the_sum_over_its_pod_sets_in_kubehpc_units() -> None:
    t = workload_trace(parse_workload(WORKLOAD))
    assert t.resources == ("cpu", "nvidia.com/gpu")
    assert t.sizes.tolist() == [[1000, 0], [8500, 4]]
    assert t.requested[1] == 7200 and np.isnan(t.requested[0])
    assert t.priority.tolist() == [0, 5]
    assert [t.user_names[u] for u in t.users] == ["unknown", "alice"]
    assert [t.queue_names[q] for q in t.queues] == ["default", "team-a"]


def test_workload_errors_name_the_field() -> None:
    bad = {**WORKLOAD, "spec": {"jobs": [{"name": "x", "submit": 0, "runtime": -1, "podSets": []}]}}
    with pytest.raises(TraceError) as err:
        parse_workload(bad, "w.yaml")
    assert "w.yaml: spec.jobs[0].runtime" in str(err.value)
    assert "spec.jobs[0].podSets" in str(err.value)


def test_workload_times_must_be_finite_numbers() -> None:
    job = {"name": "x", "submit": 0, "runtime": float("inf"), "podSets": [{"requests": {"cpu": 1}}]}
    with pytest.raises(TraceError, match=r"spec.jobs\[0\].runtime"):
        parse_workload({**WORKLOAD, "spec": {"jobs": [job]}})


def test_workload_quantities_are_checked() -> None:
    job = {"name": "x", "submit": 0, "runtime": 1, "podSets": [{"requests": {"nvidia.com/gpu": "0.5"}}]}
    with pytest.raises(TraceError, match=r"nvidia\.com/gpu"):
        parse_workload({**WORKLOAD, "spec": {"jobs": [job]}})


def test_duplicate_job_names_are_rejected() -> None:
    job = {"name": "x", "submit": 0, "runtime": 1, "podSets": [{"requests": {"cpu": 1}}]}
    with pytest.raises(TraceError, match=r"spec.jobs\[1\].name: duplicate"):
        parse_workload({**WORKLOAD, "spec": {"jobs": [job, job]}})


def test_procs_for_a_workload_counts_whole_cpus() -> None:
    t = workload_trace(parse_workload({**WORKLOAD, "spec": {"jobs": [WORKLOAD["spec"]["jobs"][1]]}}))  # type: ignore[index]
    assert capacity_from_procs(t, 4).tolist() == [4000]


def test_procs_cannot_size_a_pool_of_two_resources() -> None:
    with pytest.raises(TraceError, match="--cluster"):
        capacity_from_procs(workload_trace(parse_workload(WORKLOAD)), 4)


def test_a_cluster_config_gives_the_pool_its_totals(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "apiVersion: kubehpc.io/v1alpha1\nkind: ClusterConfig\nspec:\n  nodePools:\n"
        "    - {name: gpu, count: 2, cpu: '8', memory: 32Gi, gpus: {model: A100-80GB, count: 4}}\n"
    )
    t = workload_trace(parse_workload(WORKLOAD))
    assert capacity_from_cluster(t, tmp_path / "c.yaml").tolist() == [16000, 8]
