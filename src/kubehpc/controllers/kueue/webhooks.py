"""Kueue's job webhooks, and the Priority admission plugin, as the store's admission hooks.

* :class:`JobWebhook` — a job of a managed kind labelled ``kueue.x-k8s.io/queue-name`` is
  created suspended (Kueue's mutating webhook), so no pod starts before its Workload is
  admitted; the validating part refuses a bad ``job-min-parallelism`` annotation and a queue
  change while the job runs.
* :class:`PodPriorityHook` — resolves a new pod's ``priorityClassName`` into ``spec.priority``
  (:func:`kubehpc.controllers.scheduling.priority.admit_pod_priority`).

Hooks run inside the store's write, so they read through the same Client (reads do not take
the write path) and never write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import Cause, invalid
from kubehpc.api.registry import ResourceType
from kubehpc.controllers.kueue import constants as k
from kubehpc.controllers.kueue.jobframework import Integration, queue_name
from kubehpc.controllers.kueue.jobs import batchjob, mpijob, raycluster, rayjob
from kubehpc.controllers.scheduling.priority import admit_pod_priority
from kubehpc.store.admission import Operation
from kubehpc.store.client import Client, ListOptions

Obj = dict[str, Any]
DEFAULT_INTEGRATIONS: tuple[Integration, ...] = (
    batchjob.INTEGRATION,
    mpijob.INTEGRATION,
    rayjob.INTEGRATION,
    raycluster.INTEGRATION,
)
_MIN_PARALLELISM_FIELD = f"metadata.annotations[{k.MIN_PARALLELISM_ANNOTATION}]"


class JobWebhook:
    def __init__(self, integrations: Sequence[Integration] = DEFAULT_INTEGRATIONS) -> None:
        self.integrations = {(i.api_version, i.kind): i for i in integrations}
        # Every write of every kind passes here: most are of no job kind, told by one lookup.
        self._kinds = frozenset(i.kind for i in integrations)

    def __call__(self, operation: Operation, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        if rt.kind not in self._kinds:
            return
        integration = self.integrations.get((str(obj.get("apiVersion")), rt.kind))
        if integration is None:
            return
        queue = queue_name(obj)
        if not queue and not (old is not None and queue_name(old)):
            return
        job = integration.new_job(obj)
        causes = self._validate(rt, obj, old, job.is_suspended())
        if causes:
            meta = F.metadata(obj)
            raise invalid(rt.kind, str(meta.get("name", "")), causes, group=rt.group)
        if operation == "CREATE" and queue and not job.is_suspended():
            job.suspend()

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None, suspended: bool) -> list[Cause]:
        causes: list[Cause] = []
        if old is not None and not suspended and queue_name(old) != queue_name(obj):
            causes.append(
                Cause(
                    f"metadata.labels[{k.QUEUE_NAME_LABEL}]",
                    "must not update queue name when job is unsuspended",
                    "FieldValueInvalid",
                )
            )
        if rt.kind == batchjob.KIND and (old is None or _min_parallelism(old) != _min_parallelism(obj)):
            # Checked when set, not on every update: a Job partially admitted runs with
            # parallelism = the admitted count, which may equal the minimum.
            causes += _partial_admission_causes(obj)
        return causes


def _min_parallelism(obj: Obj) -> object:
    return F.annotations(obj).get(k.MIN_PARALLELISM_ANNOTATION)


def _partial_admission_causes(obj: Obj) -> list[Cause]:
    annotations = F.annotations(obj)
    if k.MIN_PARALLELISM_ANNOTATION not in annotations:
        return []
    raw = annotations[k.MIN_PARALLELISM_ANNOTATION]
    try:
        value = int(str(raw))
    except ValueError:
        return [
            Cause(
                _MIN_PARALLELISM_FIELD,
                f'Invalid value: "{raw}": strconv.Atoi: parsing "{raw}": invalid syntax',
                "FieldValueInvalid",
            )
        ]
    count = batchjob.pods_count(F.spec(obj))
    if value <= 0 or value >= count:
        return [
            Cause(
                _MIN_PARALLELISM_FIELD,
                f"Invalid value: {value}: should be between 0 and {count - 1}",
                "FieldValueInvalid",
            )
        ]
    return []


class PodPriorityHook:
    """The Priority admission plugin: PriorityClasses are read when a pod is created.

    ``client`` may be a callable returning the Client: the store that runs this hook is made
    after the hook (``PodPriorityHook(lambda: plane.store)``).
    """

    def __init__(self, client: Client | Callable[[], Client]) -> None:
        self._client = client

    def __call__(self, operation: Operation, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        if operation != "CREATE" or rt.kind != "Pod" or rt.group != "":
            return
        client = self._client() if callable(self._client) else self._client
        listed = client.list(k.PRIORITY_CLASS_API_VERSION, k.PRIORITY_CLASS, ListOptions(read_only=True))
        classes = {str(pc["metadata"]["name"]): pc for pc in listed.items}
        admit_pod_priority(obj, classes)
