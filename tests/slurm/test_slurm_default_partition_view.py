"""A job sbatch'd without -p (and no default partition in the mapping) is in the partition that
sinfo lists every unlabelled node in, and squeue, sacct and scontrol say so, as Slurm always
names a job's partition."""

from __future__ import annotations

from viewkit import T0_EPOCH, finished, node, running, sbatch_job

from kubehpc.slurm.jobs import collect
from kubehpc.slurm.mapping import SlurmMapping
from kubehpc.slurm.nodes import node_records, sinfo_text
from kubehpc.slurm.select import Filter
from kubehpc.slurm.views import sacct_text, scontrol_job, squeue_text

NOW = T0_EPOCH + 60


def test_squeue_names_the_partition_sinfo_shows_for_a_job_without_p() -> None:
    job = sbatch_job(1, "-J hello", "-N 1")
    records = collect([job], running(job, ["n1"], 0))
    row = squeue_text(records, NOW, header=False).split()
    sinfo_partition = sinfo_text(node_records([node("n1")], [], SlurmMapping()), SlurmMapping()).splitlines()[
        1
    ]
    assert row[1] == "default"
    assert sinfo_partition.startswith("default* ")
    assert Filter(partitions={"default"}).matches(records[0])  # squeue -p default


def test_sacct_and_scontrol_name_the_default_partition_of_a_job_without_p() -> None:
    job = sbatch_job(2, "-J hello")
    records = collect([job], finished(job, "Complete", "CompletionsReached", 0, 30, 0))
    assert sacct_text(records, NOW, fmt="JobID,Partition", parsable="P", header=False, tz=0) == "2|default\n"
    assert "Partition=default\n" in scontrol_job(records[0], NOW)


def test_a_job_given_p_keeps_its_partition() -> None:
    job = sbatch_job(3, "-J hello", "-p batch")
    assert collect([job], [])[0].partition == "batch"
