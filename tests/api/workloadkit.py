"""Kueue Workloads as the API tests write them: one object, named ``w`` in ``default`` and
queued in ``lq``, of the pod sets and status a test gives."""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

BUSYBOX: Obj = {"name": "c", "image": "busybox"}


def pod_set(container: Obj = BUSYBOX, count: int = 1) -> Obj:
    """The pod set ``main``: ``count`` pods of one container (a copy of ``container``)."""
    return {"name": "main", "count": count, "template": {"spec": {"containers": [copy.deepcopy(container)]}}}


def workload(*pod_sets: Obj, status: Obj | None = None) -> Obj:
    """A v1beta2 Workload of ``pod_sets``, with ``status`` when one is given."""
    obj: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"queueName": "lq", "podSets": list(pod_sets)},
    }
    if status is not None:
        obj["status"] = status
    return obj
