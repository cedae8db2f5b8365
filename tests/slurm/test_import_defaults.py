"""kubehpc import slurm: untyped GPUs take a model from ``--gpu-model untyped=MODEL``, and a global
DefMemPerCPU becomes the default of every partition that does not set its own."""

from __future__ import annotations

from kubehpc.slurm.conf import parse_conf
from kubehpc.slurm.importer import import_slurm

UNTYPED = """\
ClusterName=hpc
NodeName=gpu[1-2] CPUs=32 RealMemory=128000 Gres=gpu:4
PartitionName=gpu Nodes=gpu[1-2] Default=YES
"""

GLOBAL_MEM = """\
ClusterName=hpc
DefMemPerCPU=1500
NodeName=cpu[01-04] CPUs=16 RealMemory=64000
PartitionName=batch Nodes=cpu[01-02] Default=YES
PartitionName=big Nodes=cpu[03-04] DefMemPerCPU=4000
"""


def test_untyped_gpus_are_left_out_and_the_report_names_the_option() -> None:
    result = import_slurm(parse_conf(UNTYPED, "slurm.conf"))
    assert "gpus" not in result.cluster_config["spec"]["nodePools"][0]
    assert "--gpu-model untyped=MODEL" in "\n".join(result.report)


def test_gpu_model_untyped_gives_untyped_gpus_that_model() -> None:
    result = import_slurm(parse_conf(UNTYPED, "slurm.conf"), gpu_models={"untyped": "A10"})
    pool = result.cluster_config["spec"]["nodePools"][0]
    assert pool["gpus"] == {"model": "A10", "count": 4}
    assert "untyped" not in "\n".join(result.report)


def test_a_global_def_mem_per_cpu_is_the_default_of_partitions_without_their_own() -> None:
    result = import_slurm(parse_conf(GLOBAL_MEM, "slurm.conf"))
    parts = result.mapping.partitions
    assert parts["batch"].def_mem_per_cpu == 1500
    assert parts["big"].def_mem_per_cpu == 4000
    assert "DefMemPerCPU" not in "\n".join(line for line in result.report if "no equivalent" in line)
