"""The long views (``squeue -l``, ``sinfo -l``, ``sinfo -N -l``) and scontrol's times, against
output captured from a real Slurm 22.05 (scripts/slurm_peer.py: two nodes of 4 CPUs, 8 GiB)
holding the same jobs: a running job with ``-t 60`` (1), a held job with ``-t 2-00:00:00``
(2), and an array ``0-3%1`` with ``-t 5`` whose task 0 runs (3), all seen 15 s in."""

from __future__ import annotations

from viewkit import T0_EPOCH, busy_pod, node, pod, running, sbatch_job

from kubehpc.slurm.jobs import SlurmJob, collect
from kubehpc.slurm.mapping import parse_mapping
from kubehpc.slurm.nodes import SINFO_LONG, SINFO_NODES_LONG, node_records, scontrol_partition, sinfo_text
from kubehpc.slurm.views import SQUEUE_LONG, scontrol_job, squeue_order, squeue_text

SLURM_SQUEUE_LONG = """\
             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)
         3_[1-3%1]     batch     wrap     root  PENDING       0:00      5:00      1 (JobArrayTaskLimit)
                 2     batch     wrap     root  PENDING       0:00 2-00:00:00      1 (JobHeldUser)
                 1     batch       tl     root  RUNNING       0:15   1:00:00      1 cpu-0
               3_0     batch     wrap     root  RUNNING       0:15      5:00      1 cpu-0
"""
SLURM_SINFO_LONG = """\
PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST
batch*       up   infinite 1-infinite   no       NO        all      1       mixed cpu-0
batch*       up   infinite 1-infinite   no       NO        all      1        idle cpu-1
"""
# S:C:T is 2:2:1 there: Slurm knows the sockets from slurm.conf; a Kubernetes node reports only
# its CPUs (kubehpc prints 1:CPUS:1), so that one column is compared as "S:C:T".
SLURM_SINFO_NODES_LONG = (
    "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON              \n"  # noqa: E501
    "cpu-0          1    batch*       mixed 4       S:C:T   8192        0      1   (null) none                \n"  # noqa: E501
    "cpu-1          1    batch*        idle 4       S:C:T   8192        0      1   (null) none                \n"  # noqa: E501
)


def jobs() -> list[SlurmJob]:
    tl = sbatch_job(1, "-J tl", "-t 60", "-p batch", user="root")
    held = sbatch_job(2, "-J wrap", "-t 2-00:00:00", "--hold", "-p batch", user="root")
    arr = sbatch_job(3, "-J wrap", "--array=0-3%1", "-t 5", "-p batch", user="root")
    pods = [*running(tl, ["cpu-0"], 0), pod(arr, 0, "cpu-0")]
    arr["status"] = {"startTime": "2026-12-02T12:00:00Z", "active": 1}
    return squeue_order(collect([tl, held, arr], pods))


def nodes() -> list:
    mapping = parse_mapping({"defaultPartition": "batch"}, "m")
    ns = [node(f"cpu-{i}", cpus=4, partitions=("batch",)) for i in range(2)]
    for n in ns:
        n["status"]["allocatable"]["memory"] = "8Gi"
    return node_records(ns, [busy_pod("cpu-0", 2)], mapping)


MAPPING = parse_mapping(
    {"defaultPartition": "batch", "partitions": {"batch": {"maxTime": 60, "defaultTime": 30}}}, "m"
)


def test_squeue_long_matches_real_slurm_with_a_limit_wider_than_its_column() -> None:
    assert squeue_text(jobs(), T0_EPOCH + 15, SQUEUE_LONG) == SLURM_SQUEUE_LONG


def test_sinfo_long_matches_real_slurm() -> None:
    assert (
        sinfo_text(nodes(), parse_mapping({"defaultPartition": "batch"}, "m"), SINFO_LONG) == SLURM_SINFO_LONG
    )


def test_sinfo_nodes_long_matches_real_slurm_but_for_sockets() -> None:
    text = sinfo_text(
        nodes(), parse_mapping({"defaultPartition": "batch"}, "m"), SINFO_NODES_LONG, node_oriented=True
    )
    lines = text.splitlines(keepends=True)
    assert all(" 1:4:1 " in line for line in lines[1:])
    assert "".join(lines).replace(" 1:4:1 ", " S:C:T ") == SLURM_SINFO_NODES_LONG


def test_scontrol_prints_times_as_hh_mm_ss_as_real_slurm_does() -> None:
    by_id = {r.job_id: r for r in jobs()}
    assert "   RunTime=00:00:15 TimeLimit=01:00:00\n" in scontrol_job(by_id["1"], T0_EPOCH + 15, tz=0)
    assert "   RunTime=00:00:00 TimeLimit=2-00:00:00\n" in scontrol_job(by_id["2"], T0_EPOCH + 15, tz=0)
    part = scontrol_partition("batch", nodes(), MAPPING)
    assert "DefaultTime=00:30:00" in part and "MaxTime=01:00:00" in part
