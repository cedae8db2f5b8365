"""Slurm-style job ids, handed out by the control plane.

The counter lives in the ConfigMap ``kubehpc-system/slurm-job-ids`` (``data.next``). A caller
reads it and writes ``next + count`` back with the read ``resourceVersion``; a concurrent
writer makes that a 409 Conflict and the caller tries again, so two submissions never get the
same id. Arrays take one id for the array and one per task (task i runs as id + i).
"""

from __future__ import annotations

from typing import Any

from kubehpc.api.errors import AlreadyExists, Conflict, NotFound
from kubehpc.store.client import Client

NAMESPACE = "kubehpc-system"
NAME = "slurm-job-ids"
FIRST_ID = 1
ATTEMPTS = 50


def _ensure_namespace(client: Client) -> None:
    try:
        client.get("v1", "Namespace", NAMESPACE)
    except NotFound:
        try:
            client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        except AlreadyExists:
            pass


def allocate_ids(client: Client, count: int = 1) -> int:
    """Reserve ``count`` consecutive ids; returns the first."""
    _ensure_namespace(client)
    for _ in range(ATTEMPTS):
        try:
            cm: dict[str, Any] = client.get("v1", "ConfigMap", NAME, NAMESPACE)
        except NotFound:
            try:
                client.create(
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": NAME, "namespace": NAMESPACE},
                        "data": {"next": str(FIRST_ID + count)},
                    }
                )
                return FIRST_ID
            except AlreadyExists:
                continue
        first = int((cm.get("data") or {}).get("next", FIRST_ID))
        cm.setdefault("data", {})["next"] = str(first + count)
        try:
            client.update(cm)
        except Conflict:
            continue
        return first
    raise Conflict(f"could not allocate a Slurm job id after {ATTEMPTS} attempts")
