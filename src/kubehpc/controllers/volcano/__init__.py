"""Volcano's controllers: the batch.volcano.sh Job controller and the queue loop (PodGroup
admission through Queues, reclaim, PodGroup and Queue status); and the status of the
scheduler-plugins coscheduling PodGroups."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubehpc.controllers.volcano.coscheduling import CoschedulingStatus
from kubehpc.controllers.volcano.job_controller import VolcanoJobController
from kubehpc.controllers.volcano.queues import VolcanoQueueController
from kubehpc.store.client import Client


def loops(client: Client) -> dict[str, Callable[[threading.Event], None]]:
    """The control loops a control plane runs for Volcano, by name."""
    return {
        "volcano-job": VolcanoJobController(client).run,
        "volcano-queues": VolcanoQueueController(client).run,
        "coscheduling-podgroups": CoschedulingStatus(client).run,
    }


__all__ = ["CoschedulingStatus", "VolcanoJobController", "VolcanoQueueController", "loops"]
