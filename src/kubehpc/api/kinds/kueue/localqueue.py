"""LocalQueue: the namespaced queue users submit to, backed by a ClusterQueue."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from kubehpc.api.errors import Cause
from kubehpc.api.kinds.kueue.clusterqueue import StopPolicy
from kubehpc.api.kinds.kueue.common import (
    Condition,
    Conditions,
    DNSSubdomain,
    FairSharing,
    FairSharingStatus,
    Int32,
    KueueModel,
    KueueObject,
    Quantity,
    Taint,
)


class LocalQueueSpec(KueueModel):
    cluster_queue: DNSSubdomain | None = None
    stop_policy: StopPolicy = "None"
    fair_sharing: FairSharing | None = None


class LocalQueueResourceUsage(KueueModel):
    name: str
    total: Quantity | None = None


class LocalQueueFlavorUsage(KueueModel):
    name: DNSSubdomain
    resources: Annotated[list[LocalQueueResourceUsage], Field(max_length=64)]


LocalQueueFlavorUsages = Annotated[list[LocalQueueFlavorUsage], Field(max_length=64)]


class _LocalQueueStatusBase(KueueModel):
    pending_workloads: Int32 | None = None
    reserving_workloads: Int32 | None = None
    admitted_workloads: Int32 | None = None
    flavors_reservation: LocalQueueFlavorUsages | None = None
    fair_sharing: FairSharingStatus | None = None


class LocalQueueStatus(_LocalQueueStatusBase):
    conditions: Conditions | None = None
    flavors_usage: LocalQueueFlavorUsages | None = None


class TopologyInfo(KueueModel):
    name: DNSSubdomain
    levels: Annotated[list[str], Field(min_length=1, max_length=16)]


class LocalQueueFlavorStatus(KueueModel):
    name: DNSSubdomain
    resources: Annotated[list[str], Field(max_length=64)] | None = None
    node_labels: Annotated[dict[str, str], Field(max_length=8)] | None = None
    node_taints: Annotated[list[Taint], Field(max_length=8)] | None = None
    topology: TopologyInfo | None = None


class LocalQueueStatusV1Beta1(_LocalQueueStatusBase):
    conditions: list[Condition] | None = None
    flavor_usage: LocalQueueFlavorUsages | None = None
    flavors: Annotated[list[LocalQueueFlavorStatus], Field(max_length=64)] | None = None


class LocalQueue(KueueObject):
    spec: LocalQueueSpec | None = None
    status: LocalQueueStatus | None = None


class LocalQueueV1Beta1(KueueObject):
    spec: LocalQueueSpec | None = None
    status: LocalQueueStatusV1Beta1 | None = None


def local_queue_update_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    before = (old.get("spec") or {}).get("clusterQueue")
    after = (new.get("spec") or {}).get("clusterQueue")
    # A CEL transition rule on an optional field applies only when both versions set it.
    if before is not None and after is not None and before != after:
        return [Cause("spec.clusterQueue", "field is immutable")]
    return []
