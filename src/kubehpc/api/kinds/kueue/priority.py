"""WorkloadPriorityClass: a priority for Workloads independent of pod priority."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kubehpc.api.kinds.kueue.common import Int32, KueueObject


class WorkloadPriorityClassV1Beta1(KueueObject):
    value: Int32
    description: str | None = None


class WorkloadPriorityClass(KueueObject):
    value: Int32
    description: Annotated[str, Field(max_length=2048)] | None = None
