"""The two marks the 1.20 Job gate reads: Kueue's queue label and kubehpc's admitted annotation.

Apart from :mod:`kubehpc.kube.gatedjob` (the Kueue adapter that writes the annotation) so the
scheduler reads them without importing the Kueue controllers at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubehpc.controllers.kueue.constants import QUEUE_NAME_LABEL

ADMITTED_ANNOTATION = "kubehpc.io/admitted"


def is_admitted(job: Mapping[str, Any]) -> bool:
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(ADMITTED_ANNOTATION, "")).lower() == "true"


def gate_open(job: Mapping[str, Any]) -> bool:
    """A Job's pods may be scheduled: it has no queue, or its Workload is admitted."""
    labels = (job.get("metadata") or {}).get("labels") or {}
    return not labels.get(QUEUE_NAME_LABEL) or is_admitted(job)
