"""Status writes are guarded by resourceVersion; a 409 Conflict means plan again."""

from __future__ import annotations

from typing import Any

from jobkit import NS, Cluster, job_manifest

from kubehpc.api.errors import Forbidden
from kubehpc.controllers.job import JobController
from kubehpc.store.events import EventRecorder
from kubehpc.store.store import Store


class InterferingClient:
    """Delegates to the Store, but the first status write of a Job is preceded by someone
    else's update of that Job, so the controller's resourceVersion is stale."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.conflicts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def update_status(self, obj: dict[str, Any], options: Any = None) -> dict[str, Any]:
        if obj.get("kind") == "Job" and self.conflicts == 0:
            self.conflicts += 1
            self.store.patch(
                "batch/v1", "Job", obj["metadata"]["name"], {"metadata": {"labels": {"x": "y"}}}, namespace=NS
            )
        return self.store.update_status(obj, options)


def test_a_stale_status_write_is_retried_from_fresh_state_without_duplicating_pods() -> None:
    k = Cluster()
    client = InterferingClient(k.store)
    controller = JobController(client, clock=k.clock, events=lambda *a: None)
    k.create(job_manifest("c", parallelism=2, completions=2))
    controller.reconcile(NS, "c")
    assert client.conflicts == 1
    assert len(k.pods("c")) == 2
    assert k.status("c")["active"] == 2
    assert k.job("c")["metadata"]["labels"]["x"] == "y"  # the other writer's change survives


def test_status_is_not_rewritten_when_nothing_changed() -> None:
    k = Cluster()
    k.create(job_manifest("quiet", parallelism=2, completions=2))
    k.sync("quiet")
    version = k.job("quiet")["metadata"]["resourceVersion"]
    k.sync("quiet")
    k.sync("quiet")
    assert k.job("quiet")["metadata"]["resourceVersion"] == version


class RefusingClient(InterferingClient):
    """Refuses every pod creation, as an exhausted ResourceQuota would."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.conflicts = 1  # no interference from the parent class

    def create(self, obj: dict[str, Any], options: Any = None) -> dict[str, Any]:
        if obj.get("kind") == "Pod":
            raise Forbidden('pods "x" is forbidden: exceeded quota')
        return self.store.create(obj, options)


def test_refused_pod_creation_is_retried_with_a_growing_delay() -> None:
    k = Cluster()
    controller = JobController(
        RefusingClient(k.store), clock=k.clock, events=EventRecorder(k.store, "jc").record
    )
    k.create(job_manifest("quota", parallelism=2, completions=2))
    delays = [controller.reconcile(NS, "quota") for _ in range(3)]
    assert delays == [1.0, 2.0, 4.0]
    assert k.pods("quota") == []
    assert k.status("quota").get("active", 0) == 0
    reasons = {reason for reason, _ in k.events("quota")}
    assert "FailedCreate" in reasons
