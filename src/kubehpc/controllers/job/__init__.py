"""The batch/v1 Job controller.

``plan.plan_job`` is the pure decision (Job + its pods + now -> actions); ``controller.
JobController`` applies it through a Client, either for one Job (``reconcile``) or watching
everything (``run``).
"""

from kubehpc.controllers.job.actions import JobEvent, JobPlan, PodDeletion
from kubehpc.controllers.job.backoff import BackoffPolicy
from kubehpc.controllers.job.clock import Clock, FakeClock, RealClock, ScaledClock
from kubehpc.controllers.job.controller import EventSink, JobController
from kubehpc.controllers.job.plan import plan_job

__all__ = [
    "BackoffPolicy",
    "Clock",
    "EventSink",
    "FakeClock",
    "JobController",
    "JobEvent",
    "JobPlan",
    "PodDeletion",
    "RealClock",
    "ScaledClock",
    "plan_job",
]
