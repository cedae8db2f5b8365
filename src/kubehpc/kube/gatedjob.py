"""The batch/v1 Job as a Kueue job on a Kubernetes 1.20 API server, which has no ``spec.suspend``.

Kueue holds a queued Job by suspending it, so the Job controller creates no pods until the
Workload is admitted. Kubernetes 1.20 drops ``spec.suspend`` (the field came in 1.21), so there
the Job controller creates the pods at once; kubehpc instead holds them at the scheduler: pods of a
queue-labelled Job are bound only once the Job carries ``kubehpc.io/admitted: "true"``, which this
adapter sets when the Workload is admitted and removes when it is evicted
(:mod:`kubehpc.kube.gate` reads it). "Suspended" here means "not admitted", so a new Job counts as
suspended from its first moment and nothing runs before admission.

What 1.20 cannot do: a Job's pod template is immutable, so a flavor's nodeSelector and
tolerations are not injected into the pods (admission still charges the flavor's quota); and a
stopped (evicted) Job's running pods are deleted — the Job controller makes new ones, which wait
at the gate again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubehpc.api.errors import NotFound
from kubehpc.controllers.kueue.jobframework import Integration, PodSetInfo
from kubehpc.controllers.kueue.jobs.batchjob import API_VERSION, KIND, BatchJob, min_parallelism
from kubehpc.kube.admitted import ADMITTED_ANNOTATION, is_admitted
from kubehpc.store.client import Client, DeleteOptions, ListOptions

Obj = dict[str, Any]
TERMINAL_PHASES = ("Succeeded", "Failed")
__all__ = ["ADMITTED_ANNOTATION", "GatedJob", "integration", "is_admitted"]


class GatedJob(BatchJob):
    def __init__(self, obj: Obj, client: Client) -> None:
        super().__init__(obj)
        self.client = client

    def _annotations(self) -> dict[str, Any]:
        meta = self.object.setdefault("metadata", {})
        annotations: dict[str, Any] = meta.setdefault("annotations", {})
        return annotations

    def is_suspended(self) -> bool:
        return not is_admitted(self.object)

    def suspend(self) -> None:
        self._annotations().pop(ADMITTED_ANNOTATION, None)

    def run_with_pod_set_info(self, infos: Sequence[PodSetInfo]) -> None:
        if len(infos) != 1:
            raise ValueError(f"a Job has 1 pod set, the admission has {len(infos)}")
        self._annotations()[ADMITTED_ANNOTATION] = "true"
        if min_parallelism(self.object) is not None:
            self._set_count(infos[0].count)  # parallelism is mutable on 1.20; the template is not

    def restore_pod_set_info(self, infos: Sequence[PodSetInfo]) -> bool:
        if not infos or min_parallelism(self.object) is None:
            return False
        if self.spec.get("parallelism") == infos[0].count:
            return False
        self._set_count(infos[0].count)
        return True

    def _pods(self) -> list[Obj]:
        uid = str((self.object.get("metadata") or {}).get("uid", ""))
        namespace = (self.object.get("metadata") or {}).get("namespace")
        listed = self.client.list(
            "v1", "Pod", ListOptions(namespace=namespace, label_selector=f"controller-uid={uid}")
        )
        return listed.items

    def is_active(self) -> bool:
        """Whether a pod of the Job is bound and not finished (1.20's ``status.active`` counts
        the pods held at the gate too, so it cannot tell)."""
        return any(
            (p.get("spec") or {}).get("nodeName")
            and (p.get("status") or {}).get("phase") not in TERMINAL_PHASES
            for p in self._pods()
        )

    def stop(self, client: Client, infos: Sequence[PodSetInfo]) -> bool:
        stopped_now = not self.is_suspended()
        changed = stopped_now
        self.suspend()
        changed = self.restore_pod_set_info(infos) or changed
        if changed:
            self._obj = client.update(self.object)
        if stopped_now:
            # Close the gate first, then take the running pods away; their replacements wait.
            for pod in self._pods():
                meta = pod.get("metadata") or {}
                if not (pod.get("spec") or {}).get("nodeName"):
                    continue
                try:
                    client.delete("v1", "Pod", str(meta.get("name")), meta.get("namespace"), DeleteOptions())
                except NotFound:
                    continue
        return stopped_now


def integration(client: Client) -> Integration:
    """Kueue's Job integration, gated at the scheduler (for API servers without Job suspend)."""
    return Integration(API_VERSION, KIND, lambda obj: GatedJob(obj, client))
