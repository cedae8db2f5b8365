"""Objects that live for a while after their last write, as Events do in Kubernetes.

kube-apiserver stores every Event with an etcd lease of ``--event-ttl`` (one hour by default),
granted again on each write; when the lease runs out etcd deletes the key, whatever its
finalizers, and watchers see DELETED. Without it a busy cluster keeps every Event it ever
recorded (eight per batch Job here), and the store, which holds every object in memory,
only grows.

This module keeps the deadlines; the store deletes what is due (:meth:`Store.expire`). The
time to live of a kind is the same for all its objects, so deadlines come in the order of the
writes: the next to expire is always the oldest entry.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping

Key = tuple[str, str]  # (namespace, name)


class Deadlines:
    """When each object of the expiring resources is due, oldest write first."""

    def __init__(self, ttl_s: Mapping[str, float], clock: Callable[[], float]) -> None:
        for resource, seconds in ttl_s.items():
            if not seconds > 0:
                raise ValueError(f"the time to live of {resource} must be positive, not {seconds}")
        self.ttl_s = dict(ttl_s)
        self._clock = clock
        self._due: dict[str, OrderedDict[Key, float]] = {resource: OrderedDict() for resource in ttl_s}

    def __contains__(self, resource: str) -> bool:
        return resource in self._due

    def written(self, resource: str, namespace: str, name: str) -> None:
        """A write of the object: its lease starts again."""
        due = self._due[resource]
        key = (namespace, name)
        due[key] = self._clock() + self.ttl_s[resource]
        due.move_to_end(key)

    def deleted(self, resource: str, namespace: str, name: str) -> None:
        self._due[resource].pop((namespace, name), None)

    def take_due(self, limit: int) -> list[tuple[str, str, str]]:
        """Up to ``limit`` (resource, namespace, name) whose deadline has passed, forgotten here."""
        now = self._clock()
        out: list[tuple[str, str, str]] = []
        for resource, due in self._due.items():
            while due and len(out) < limit:
                key, deadline = next(iter(due.items()))
                if deadline > now:
                    break
                due.popitem(last=False)
                out.append((resource, *key))
        return out

    def pending(self, resource: str) -> int:
        """How many objects of ``resource`` have a deadline (for tests and metrics)."""
        return len(self._due[resource])
