"""kubehpc's own workload file (``kind: SimWorkload``): jobs as a platform team describes them.

Example::

    apiVersion: kubehpc.io/v1alpha1
    kind: SimWorkload
    metadata: {name: demo}
    spec:
      jobs:
        - name: train-1          # unique within the file
          submit: 0              # seconds after the start of the workload
          runtime: 3600          # how long the job really runs, in seconds (> 0)
          requestedTime: 7200    # the user's time limit / estimate in seconds; optional
          queue: team-a          # optional, default "default" (a LocalQueue name)
          priority: 0            # optional; higher goes first
          user: alice            # optional
          podSets:               # at least one; the job's request is the sum over pod sets
            - name: workers
              count: 4           # pods in the set (>= 1)
              requests: {cpu: "8", memory: 32Gi, nvidia.com/gpu: 1}
              requiredTopology: topology.kubehpc.io/rack   # optional, or preferredTopology

Requests use Kubernetes quantities and kubehpc's resource units (cpu in millicores, memory in
bytes, extended resources as whole counts). Unknown fields are errors, named with their path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from kubehpc.api.names import qualified_name
from kubehpc.api.quantity import resource_units
from kubehpc.sim.traces.common import JobPods, PodSetSpec, Trace, TraceError, build_trace, codes

API_VERSION = "kubehpc.io/v1alpha1"
KIND = "SimWorkload"


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, allow_inf_nan=False
    )


class SimPodSet(_Model):
    name: str = "main"
    count: int = Field(default=1, ge=1)
    requests: dict[str, str | int | float] = Field(min_length=1)
    required_topology: str | None = None
    """Kueue's ``podset-required-topology``: a node label naming a topology level."""
    preferred_topology: str | None = None
    """Kueue's ``podset-preferred-topology``."""

    @field_validator("required_topology", "preferred_topology")
    @classmethod
    def _level(cls, value: str | None) -> str | None:
        if value is not None:
            problems = qualified_name(value) if value else ["must not be empty"]
            if problems:
                raise ValueError(f"not a node label: {'; '.join(problems)}")
        return value

    @model_validator(mode="after")
    def _one_topology(self) -> SimPodSet:
        if self.required_topology is not None and self.preferred_topology is not None:
            raise ValueError("requiredTopology and preferredTopology are mutually exclusive")
        return self

    @field_validator("requests")
    @classmethod
    def _quantities(cls, value: dict[str, str | int | float]) -> dict[str, str | int | float]:
        for resource, amount in value.items():
            units = resource_units(resource, amount)  # raises ValueError naming the resource
            if units < 0:
                raise ValueError(f"{resource}: must not be negative")
        return value

    def units(self) -> dict[str, int]:
        return {r: resource_units(r, v) * self.count for r, v in self.requests.items()}

    def spec(self) -> PodSetSpec:
        per_pod = tuple(sorted((r, resource_units(r, v)) for r, v in self.requests.items()))
        return PodSetSpec(self.name, self.count, per_pod, self.required_topology, self.preferred_topology)


class SimJob(_Model):
    name: str = Field(min_length=1)
    submit: float = Field(ge=0)
    runtime: float = Field(gt=0)
    requested_time: float | None = Field(default=None, gt=0)
    queue: str = "default"
    priority: int = 0
    user: str = "unknown"
    pod_sets: list[SimPodSet] = Field(min_length=1)


class Metadata(_Model):
    name: str = "workload"


class SimWorkloadSpec(_Model):
    jobs: list[SimJob]


class SimWorkload(_Model):
    api_version: str = Field(pattern=f"^{API_VERSION}$")
    kind: str = Field(pattern=f"^{KIND}$")
    metadata: Metadata = Field(default_factory=Metadata)
    spec: SimWorkloadSpec


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_workload(data: Any, source: str = "workload") -> SimWorkload:
    try:
        workload = SimWorkload.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: {_where(e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise TraceError("\n".join(lines)) from None
    seen: set[str] = set()
    for i, job in enumerate(workload.spec.jobs):
        if job.name in seen:
            raise TraceError(f"{source}: spec.jobs[{i}].name: duplicate job name {job.name!r}")
        seen.add(job.name)
        sets: set[str] = set()
        for k, pod_set in enumerate(job.pod_sets):
            if pod_set.name in sets:
                raise TraceError(
                    f"{source}: spec.jobs[{i}].podSets[{k}].name: duplicate pod set {pod_set.name!r}"
                )
            sets.add(pod_set.name)
    return workload


def workload_trace(workload: SimWorkload, source: str = "workload") -> Trace:
    jobs = workload.spec.jobs
    per_job = [_sum_units(job) for job in jobs]
    resources = tuple(sorted({r for units in per_job for r in units}, key=lambda r: (r != "cpu", r)))
    resources = resources or ("cpu",)
    sizes = np.array([[units.get(r, 0) for r in resources] for units in per_job], dtype=np.int64)
    user_codes, user_names = codes([j.user for j in jobs])
    queue_codes, queue_names = codes([j.queue for j in jobs])
    return build_trace(
        workload.metadata.name,
        resources,
        np.arange(1, len(jobs) + 1, dtype=np.int64),
        np.array([j.submit for j in jobs], dtype=np.float64),
        np.array([j.runtime for j in jobs], dtype=np.float64),
        np.array([np.nan if j.requested_time is None else j.requested_time for j in jobs]),
        sizes.reshape(len(jobs), len(resources)),
        users=user_codes,
        user_names=user_names,
        queues=queue_codes,
        queue_names=queue_names,
        priority=np.array([j.priority for j in jobs], dtype=np.int64),
        whole_unit=1000 if resources[:1] == ("cpu",) else 1,
        pods=[
            JobPods(j.name, f"{source}: spec.jobs[{i}]", tuple(ps.spec() for ps in j.pod_sets))
            for i, j in enumerate(jobs)
        ],
    )


def _sum_units(job: SimJob) -> dict[str, int]:
    total: dict[str, int] = {}
    for pod_set in job.pod_sets:
        for r, amount in pod_set.units().items():
            total[r] = total.get(r, 0) + amount
    return total


def read_workload(path: str | Path) -> Trace:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except OSError as exc:
        raise TraceError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise TraceError(f"{p}: not valid YAML: {exc}") from exc
    return workload_trace(parse_workload(data, str(p)), str(p))
