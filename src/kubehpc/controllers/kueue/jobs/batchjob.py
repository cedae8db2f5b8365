"""The batch/v1 Job as a Kueue job (Kueue's ``pkg/controller/jobs/job``).

One pod set, ``main``, of min(parallelism, completions) pods. Partial admission: with the
``kueue.x-k8s.io/job-min-parallelism`` annotation the pod set gets ``minCount`` and the Job
runs with the admitted count as its parallelism (and completions too with
``kueue.x-k8s.io/job-completions-equal-parallelism``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mypy_extensions import mypyc_attr

from kubehpc.api import fields as F
from kubehpc.api.errors import Conflict
from kubehpc.controllers.kueue import constants as k
from kubehpc.controllers.kueue.jobframework import (
    Integration,
    PodSetInfo,
    SpecJob,
    merge_into_template,
    restore_template,
)
from kubehpc.store.client import Client

Obj = dict[str, Any]
API_VERSION = "batch/v1"
KIND = "Job"
_WRITE_TRIES = 5


def min_parallelism(obj: Obj) -> int | None:
    """The annotation's value; None when absent or not a number (the webhook refuses those)."""
    value = F.annotations(obj).get(k.MIN_PARALLELISM_ANNOTATION)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def pods_count(spec: Obj) -> int:
    parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
    completions = spec.get("completions")
    return min(parallelism, int(completions)) if completions is not None else parallelism


# Subclassed outside the compiled modules: cluster mode's GatedJob (kube/gatedjob.py).
@mypyc_attr(allow_interpreted_subclasses=True)
class BatchJob(SpecJob):
    def _completions_follow_parallelism(self) -> bool:
        annotations = F.annotations(self._obj)
        return str(annotations.get(k.COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION, "")).lower() == "true"

    def _set_count(self, count: int) -> None:
        self.spec["parallelism"] = count
        if self._completions_follow_parallelism():
            self.spec["completions"] = count

    def run_with_pod_set_info(self, infos: Sequence[PodSetInfo]) -> None:
        if len(infos) != 1:
            raise ValueError(f"a Job has 1 pod set, the admission has {len(infos)}")
        info = infos[0]
        self.spec["suspend"] = False
        if min_parallelism(self._obj) is not None:
            self._set_count(info.count)
        merge_into_template(self.spec.setdefault("template", {}), info)

    def restore_pod_set_info(self, infos: Sequence[PodSetInfo]) -> bool:
        if not infos:
            return False
        info = infos[0]
        changed = False
        if min_parallelism(self._obj) is not None and self.spec.get("parallelism") != info.count:
            self._set_count(info.count)
            changed = True
        return restore_template(self.spec.setdefault("template", {}), info) or changed

    def finished(self) -> tuple[str, bool, bool]:
        for cond in F.object_list(F.status(self._obj), "conditions"):
            if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
                success = cond["type"] == "Complete"
                message = str(cond.get("message") or "")
                if not message:
                    message = "Job finished successfully" if success else "Job failed"
                return message, success, True
        return "", False, False

    def pod_sets(self) -> list[Obj]:
        pod_set: Obj = {
            "name": k.DEFAULT_POD_SET,
            "template": self.spec.get("template") or {},
            "count": pods_count(self.spec),
        }
        minimum = min_parallelism(self._obj)
        if minimum is not None:
            pod_set["minCount"] = minimum
        return [pod_set]

    def is_active(self) -> bool:
        return int(F.status(self._obj).get("active") or 0) != 0

    def priority_class(self) -> str:
        return str(F.spec(F.obj_field(self.spec, "template")).get("priorityClassName") or "")

    def stop(self, client: Client, infos: Sequence[PodSetInfo]) -> bool:
        """Kueue's order for Jobs: suspend (marked ``stopping``), clear ``status.startTime`` so
        the API allows template changes again, then restore the template and unmark."""
        stopped_now = False
        meta = self._obj.setdefault("metadata", {})
        if not self.is_suspended():
            self.suspend()
            meta.setdefault("annotations", {})[k.STOPPING_ANNOTATION] = "true"
            self._obj = client.update(self._obj)
            stopped_now = True
        if F.status(self._obj).get("startTime"):
            for _ in range(_WRITE_TRIES):
                status = dict(F.status(self._obj))
                status.pop("startTime", None)
                try:
                    self._obj = client.update_status({**self._obj, "status": status})
                    break
                except Conflict:
                    # The Job controller writes this status too (it is deleting the pods).
                    self._obj = client.get(API_VERSION, KIND, meta["name"], meta.get("namespace"))
                    if not F.status(self._obj).get("startTime"):
                        break
            else:
                raise Conflict(f"could not reset the start time of Job {meta.get('name')}")
        annotations = F.annotations(self._obj)
        changed = self.restore_pod_set_info(infos)
        if k.STOPPING_ANNOTATION in annotations:
            del annotations[k.STOPPING_ANNOTATION]
            changed = True
        if changed:
            self._obj = client.update(self._obj)
        return stopped_now


def new_job(obj: Obj) -> BatchJob:
    return BatchJob(obj)


INTEGRATION: Integration = Integration(API_VERSION, KIND, new_job)
