"""``squeue --start``: pending jobs with the scheduler's estimated start, in Slurm's own format
for it (``%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R``), sorted by start time."""

from __future__ import annotations

from typing import Any

from viewkit import T0, T0_EPOCH, at, running, sbatch_job

from kubehpc.api.kinds.kueue.workload import ESTIMATED_START_ANNOTATION
from kubehpc.slurm.jobs import collect
from kubehpc.slurm.views import SQUEUE_START, estimated_starts_of, squeue_text, with_estimated_starts

Obj = dict[str, Any]


def workload_of(job: Obj, start: str | None) -> Obj:
    meta: Obj = {
        "name": f"job-{job['metadata']['name']}-abcde",
        "namespace": "default",
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"]}],
    }
    if start is not None:
        meta["annotations"] = {ESTIMATED_START_ANNOTATION: start}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta}


def queue() -> tuple[list[Obj], list[Obj], list[Obj]]:
    run = sbatch_job(10, "-J run", "-p batch", "-t 60")
    later = sbatch_job(11, "-J later", "-p batch", "-N 2", "-t 30")
    sooner = sbatch_job(12, "-J sooner", "-p batch", "-t 5")
    unknown = sbatch_job(13, "-J unknown", "-p batch")
    for job in (later, sooner, unknown):
        job["spec"]["suspend"] = True  # waiting for Kueue
    pods = running(run, ["n1"], 0)
    workloads = [
        workload_of(run, None),
        workload_of(later, at(3600)),
        workload_of(sooner, at(600)),
        workload_of(unknown, None),
    ]
    return [run, later, sooner, unknown], pods, workloads


def test_squeue_start_shows_pending_jobs_by_estimated_start_in_slurms_format() -> None:
    jobs, pods, workloads = queue()
    records = with_estimated_starts(collect(jobs, pods), estimated_starts_of(workloads))
    lines = squeue_text(records, T0_EPOCH, SQUEUE_START, tz=0).splitlines()
    assert lines == [
        "             JOBID PARTITION     NAME     USER ST          START_TIME  NODES SCHEDNODES           NODELIST(REASON)",  # noqa: E501
        "                13     batch  unknown    alice PD                 N/A      1 (null)               (Priority)",  # noqa: E501
        "                12     batch   sooner    alice PD 2026-12-02T12:10:00      1 (null)               (Priority)",  # noqa: E501
        "                11     batch    later    alice PD 2026-12-02T13:00:00      2 (null)               (Priority)",  # noqa: E501
    ]


def test_estimates_are_matched_to_jobs_through_the_workloads_owner() -> None:
    jobs, _, workloads = queue()
    got = estimated_starts_of(workloads)
    assert got == {
        ("default", jobs[1]["metadata"]["name"]): T0_EPOCH + 3600,
        ("default", jobs[2]["metadata"]["name"]): T0_EPOCH + 600,
    }
    assert at(0) == T0


def test_an_unreadable_estimate_reads_as_unknown() -> None:
    jobs, _, _ = queue()
    assert estimated_starts_of([workload_of(jobs[1], "soon")]) == {}
