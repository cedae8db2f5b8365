"""What one pass of the Job controller wants done, in the order it must be done."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubehpc.controllers.job.backoff import BackoffRecord

Obj = dict[str, Any]


@dataclass(frozen=True)
class PodDeletion:
    name: str
    uid: str
    # True when the controller takes the pod away (suspend, scale down): its tracking
    # finalizer is stripped first, so the pod is not counted as a failure.
    remove_finalizer: bool


@dataclass(frozen=True)
class JobEvent:
    type: str
    reason: str
    message: str

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per Event a Job's reconcile records).
    def __init__(
        self,
        type: str,
        reason: str,
        message: str,
    ) -> None:
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "message", message)


@dataclass
class JobPlan:
    create: list[Obj] = field(default_factory=list)
    delete: list[PodDeletion] = field(default_factory=list)
    status: Obj | None = None
    """The Job's new status; None when it is unchanged."""
    remove_finalizers: list[str] = field(default_factory=list)
    """Pods whose tracking finalizer goes, strictly after ``status`` is stored."""
    events: list[JobEvent] = field(default_factory=list)
    """Recorded once ``status`` is stored."""
    requeue_after: float | None = None
    backoff_record: BackoffRecord | None = None
    """The Job's failure record after this pass, to remember once the pass is applied."""
    delete_job: bool = False
    """ttlSecondsAfterFinished has expired: delete the Job (foreground propagation)."""

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per Job per reconcile).
    def __init__(
        self,
        create: list[Obj] | None = None,
        delete: list[PodDeletion] | None = None,
        status: Obj | None = None,
        remove_finalizers: list[str] | None = None,
        events: list[JobEvent] | None = None,
        requeue_after: float | None = None,
        backoff_record: BackoffRecord | None = None,
        delete_job: bool = False,
    ) -> None:
        self.create = [] if create is None else create
        self.delete = [] if delete is None else delete
        self.status = status
        self.remove_finalizers = [] if remove_finalizers is None else remove_finalizers
        self.events = [] if events is None else events
        self.requeue_after = requeue_after
        self.backoff_record = backoff_record
        self.delete_job = delete_job

    @property
    def idle(self) -> bool:
        return not (self.create or self.delete or self.status is not None or self.remove_finalizers) and not (
            self.delete_job
        )

    def requeue(self, seconds: float) -> None:
        if seconds > 0 and (self.requeue_after is None or seconds < self.requeue_after):
            self.requeue_after = seconds
