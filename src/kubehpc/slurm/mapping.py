"""The admin's mapping from Slurm names to Kubernetes ones (``SlurmMapping``).

``kubehpc sbatch --mapping FILE``, else ``$KUBEHPC_HOME/slurm-mapping.yaml`` when it exists,
else the defaults below. ``kubehpc import slurm`` writes one from slurm.conf. Format::

    apiVersion: kubehpc.io/v1alpha1
    kind: SlurmMapping
    clusterName: hpc                  # SLURM_CLUSTER_NAME
    defaultPartition: batch           # the partition of jobs without -p (slurm.conf Default=YES)
    image: ubuntu:24.04               # the batch pods' container image
    partitions:                       # -p NAME -> kueue.x-k8s.io/queue-name (default: NAME itself)
      gpu: {localQueue: gpu, defaultTime: 60, defMemPerCpu: 4096}   # minutes / MiB
    qos:                              # -q NAME -> priorityClassName (default: NAME itself)
      high: {priorityClassName: slurm-high}
    features:              # -C NAME -> a node label (default feature.slurm.kubehpc.io/NAME=true)
      a100: {key: nvidia.com/gpu.product, value: NVIDIA-A100-SXM4-80GB}
    gpuTypes:              # --gres=gpu:TYPE:N -> node label (default slurm.kubehpc.io/gpu-type=TYPE)
      v100: {key: nvidia.com/gpu.product, value: Tesla-V100-SXM2-16GB}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

FEATURE_LABEL_PREFIX = "feature.slurm.kubehpc.io/"
GPU_TYPE_LABEL = "slurm.kubehpc.io/gpu-type"
DEFAULT_IMAGE = "ubuntu:24.04"
GPU_RESOURCE = "nvidia.com/gpu"


class MappingError(ValueError):
    pass


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class PartitionMapping(_Model):
    local_queue: str | None = None
    default_time: int | None = Field(default=None, ge=1)
    """Minutes; the time limit of jobs without -t (slurm.conf DefaultTime)."""
    max_time: int | None = Field(default=None, ge=1)
    def_mem_per_cpu: int | None = Field(default=None, ge=1)
    """MiB per CPU for jobs without a memory option (slurm.conf DefMemPerCPU)."""


class QosMapping(_Model):
    priority_class_name: str | None = None
    workload_priority_class: str | None = None
    """When set, the kueue.x-k8s.io/priority-class label instead of a pod priority class."""


class LabelMapping(_Model):
    key: str
    value: str = "true"


# The partition sinfo shows for nodes without a partition label, and squeue/sacct for jobs
# submitted without -p, when the mapping names no default partition.
FALLBACK_PARTITION = "default"


class SlurmMapping(_Model):
    api_version: Literal["kubehpc.io/v1alpha1"] = "kubehpc.io/v1alpha1"
    kind: Literal["SlurmMapping"] = "SlurmMapping"
    cluster_name: str = "kubehpc"
    default_partition: str | None = None
    image: str = DEFAULT_IMAGE
    gpu_resource: str = GPU_RESOURCE
    partitions: dict[str, PartitionMapping] = Field(default_factory=dict)
    qos: dict[str, QosMapping] = Field(default_factory=dict)
    features: dict[str, LabelMapping] = Field(default_factory=dict)
    gpu_types: dict[str, LabelMapping] = Field(default_factory=dict)

    def partition(self, name: str) -> PartitionMapping:
        return self.partitions.get(name) or PartitionMapping()

    def queue_for(self, partition: str) -> str:
        return self.partition(partition).local_queue or partition

    def qos_for(self, qos: str) -> QosMapping:
        found = self.qos.get(qos)
        if found is None or not (found.priority_class_name or found.workload_priority_class):
            return QosMapping(priority_class_name=qos)
        return found

    def feature_label(self, feature: str) -> LabelMapping:
        return self.features.get(feature) or LabelMapping(key=FEATURE_LABEL_PREFIX + feature)

    def gpu_type_label(self, gpu_type: str) -> LabelMapping:
        return self.gpu_types.get(gpu_type) or LabelMapping(key=GPU_TYPE_LABEL, value=gpu_type)


def parse_mapping(data: Any, source: str) -> SlurmMapping:
    try:
        return SlurmMapping.model_validate(data or {})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
            lines.append(f"{source}: {loc}: {msg}")
        raise MappingError("\n".join(lines)) from None


def load_mapping(path: str | Path) -> SlurmMapping:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except OSError as exc:
        raise MappingError(f"{p}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise MappingError(f"{p}: invalid YAML: {exc}") from None
    return parse_mapping(data, str(p))


def mapping_document(mapping: SlurmMapping) -> dict[str, Any]:
    return mapping.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False)
