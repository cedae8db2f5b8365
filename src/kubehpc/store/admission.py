"""Mutating admission: hooks the store runs on every create and update, after defaulting.

This is where behaviour that the API server gets from admission plugins and webhooks lives in
the embedded control plane: Kueue's webhook suspending a queued Job on create, the Priority
plugin resolving ``priorityClassName`` into ``spec.priority``. A hook mutates the object in
place or rejects the write by raising an ``ApiError``; the store itself stays free of any
particular kind's rules, and the runtime decides which hooks run.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from kubehpc.api.registry import ResourceType

Obj = dict[str, Any]
Operation = Literal["CREATE", "UPDATE"]


class AdmissionHook(Protocol):
    def __call__(self, operation: Operation, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        """Mutate ``obj`` (in its request version) or raise an ApiError to refuse the write.
        ``old`` is the stored object (storage version) on UPDATE, None on CREATE."""
        ...
