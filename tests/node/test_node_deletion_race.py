"""A pod deleted just as its agent writes its final status still goes: the status write
returns the pod already marked for deletion, and the watch events that carry the mark are
then no newer than what the agent holds, so the agent must act on the mark it got back."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from test_node_agent import CLUSTER  # the node tests' cluster config

from kubehpc.api.cluster_config import parse_cluster_config, resolve_nodes
from kubehpc.api.errors import NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.node.agent import NodeAgent
from kubehpc.store.home import Home
from kubehpc.store.store import Store


class DeleteBeforeFinalStatus:
    """The store, except that the first write of a finished pod's status is preceded by a
    graceful delete of that pod (a Job controller deleting pods it no longer needs)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.deleted = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def update_status(self, obj: dict[str, Any], options: Any = None) -> dict[str, Any]:
        if not self.deleted and obj["status"].get("phase") in ("Succeeded", "Failed"):
            self.deleted = True
            self.store.delete("v1", "Pod", obj["metadata"]["name"], "default")
        return self.store.update_status(obj, options)


def test_a_pod_deleted_while_its_final_status_is_written_is_removed(tmp_path: Path) -> None:
    store = Store(build_registry(("kubehpc.api.kinds.core",)), None)
    config = parse_cluster_config(CLUSTER)
    client = DeleteBeforeFinalStatus(store)
    agent = NodeAgent(
        client, config, resolve_nodes(config), Home(tmp_path / "home"), heartbeat_s=0.2, subreaper=False
    )
    agent.start()
    try:
        store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "quick", "namespace": "default"},
                "spec": {
                    "nodeName": "gpu-0",
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "exit 1"]}],
                },
            }
        )
        deadline = time.monotonic() + 15
        while True:
            try:
                pod = store.get("v1", "Pod", "quick", "default")
            except NotFound:
                break
            assert time.monotonic() < deadline, f"the pod stays Terminating: {pod['metadata']}"
            time.sleep(0.05)
        assert client.deleted
    finally:
        agent.stop(kill_pods=True)
        store.close()
