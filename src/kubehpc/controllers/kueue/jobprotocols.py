"""What a job kind's adapter offers the generic reconciler, as protocols (Kueue's
``GenericJob``, ``JobWithPriorityClass`` and ``JobWithCustomStop``).

Kept apart from :mod:`kubehpc.controllers.kueue.jobframework`, which is compiled: mypyc turns
a Protocol into a plain class, and the optional capabilities are detected with ``isinstance``
against runtime-checkable ones, so these stay interpreted. The reconciler asks through
``jobframework.priority_class_of`` and ``custom_stop_of``, which remember the answer per
adapter class: a runtime-checkable ``isinstance`` looks up every method of the protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kubehpc.store.client import Client

if TYPE_CHECKING:
    from kubehpc.controllers.kueue.jobframework import PodSetInfo

Obj = dict[str, Any]


@runtime_checkable
class GenericJob(Protocol):
    """One job object of some kind, seen by the generic reconciler."""

    @property
    def object(self) -> Obj:
        """The wrapped object (mutated in place by suspend / run / restore)."""
        ...

    def is_suspended(self) -> bool: ...

    def suspend(self) -> None: ...

    def run_with_pod_set_info(self, infos: Sequence[PodSetInfo]) -> None:
        """Unsuspend, with each pod set's admitted flavors (nodeSelector, tolerations) and, for
        partial admission, its admitted count."""
        ...

    def restore_pod_set_info(self, infos: Sequence[PodSetInfo]) -> bool:
        """Undo ``run_with_pod_set_info``'s template and count changes; whether any changed."""
        ...

    def finished(self) -> tuple[str, bool, bool]:
        """(message, succeeded, finished)."""
        ...

    def pod_sets(self) -> list[Obj]:
        """The Workload's ``spec.podSets`` for this job as it is now. Read only: the templates
        are the job's own (most calls only compare them); copy them before changing them."""
        ...

    def is_active(self) -> bool:
        """Whether any of its pods may still be running (a stopped job waits for this to be
        False before its quota is released)."""
        ...


@runtime_checkable
class JobWithPriorityClass(Protocol):
    def priority_class(self) -> str:
        """The pods' PriorityClass name ("" for none)."""
        ...


@runtime_checkable
class JobWithCustomStop(Protocol):
    def stop(self, client: Client, infos: Sequence[PodSetInfo]) -> bool:
        """Suspend and restore through ``client`` in the kind's own safe order; returns
        whether the job was running before."""
        ...
