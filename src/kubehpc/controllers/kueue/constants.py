"""Names, reasons and messages of Kueue's API and controllers, spelled as Kueue spells them."""

from __future__ import annotations

from typing import Final

KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_API_VERSION: Final = "kueue.x-k8s.io/v1beta2"
WORKLOAD: Final = "Workload"
CLUSTER_QUEUE: Final = "ClusterQueue"
LOCAL_QUEUE: Final = "LocalQueue"
COHORT: Final = "Cohort"
RESOURCE_FLAVOR: Final = "ResourceFlavor"
WORKLOAD_PRIORITY_CLASS: Final = "WorkloadPriorityClass"
PRIORITY_CLASS_API_VERSION: Final = "scheduling.k8s.io/v1"
PRIORITY_CLASS: Final = "PriorityClass"

# Labels and annotations on jobs.
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
MIN_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-min-parallelism"
COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-completions-equal-parallelism"
STOPPING_ANNOTATION: Final = "kueue.x-k8s.io/stopping"
# On Workloads: the uid of the job that owns it (Kueue's JobUIDLabel).
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
# kubehpc's own: where a pending Workload stands in its ClusterQueue (1 = next).
POSITION_ANNOTATION: Final = "kubehpc.io/queue-position"

DEFAULT_POD_SET: Final = "main"

# Workload condition types.
QUOTA_RESERVED: Final = "QuotaReserved"
ADMITTED: Final = "Admitted"
EVICTED: Final = "Evicted"
PREEMPTED: Final = "Preempted"
REQUEUED: Final = "Requeued"
FINISHED: Final = "Finished"

# Workload condition reasons.
REASON_QUOTA_RESERVED: Final = "QuotaReserved"
REASON_ADMITTED: Final = "Admitted"
REASON_PENDING: Final = "Pending"
REASON_INADMISSIBLE: Final = "Inadmissible"
REASON_NO_RESERVATION: Final = "NoReservation"
REASON_EVICTED_BY_PREEMPTION: Final = "Preempted"
REASON_SUCCEEDED: Final = "Succeeded"
REASON_FAILED: Final = "Failed"

# Preemption reasons (the Preempted condition's reason, the metric's label).
IN_CLUSTER_QUEUE: Final = "InClusterQueue"
IN_COHORT_RECLAMATION: Final = "InCohortReclamation"
IN_COHORT_FAIR_SHARING: Final = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "InCohortReclaimWhileBorrowing"
HUMAN_PREEMPTION_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
    "": "UNKNOWN",
}

# Messages.
MESSAGE_ADMITTED: Final = "The workload is admitted"
MESSAGE_NO_RESERVATION: Final = "The workload has no reservation"

# Queue condition (Active) reasons and messages.
ACTIVE: Final = "Active"
REASON_READY: Final = "Ready"
CQ_READY_MESSAGE: Final = "Can admit new workloads"
LQ_READY_MESSAGE: Final = "Can submit new workloads to localQueue"
LQ_CQ_MISSING_REASON: Final = "ClusterQueueDoesNotExist"
LQ_CQ_INACTIVE_REASON: Final = "ClusterQueueIsInactive"
LQ_CQ_UNUSABLE_MESSAGE: Final = "Can't submit new workloads to clusterQueue"
LQ_STOPPED_REASON: Final = "Stopped"
LQ_STOPPED_MESSAGE: Final = "LocalQueue is stopped"

# Events.
EVENT_CREATED_WORKLOAD: Final = "CreatedWorkload"
EVENT_WORKLOAD_COMPOSE_ERROR: Final = "ErrWorkloadCompose"
EVENT_STARTED: Final = "Started"
EVENT_STOPPED: Final = "Stopped"
EVENT_SUSPENDED: Final = "Suspended"
EVENT_QUOTA_RESERVED: Final = "QuotaReserved"
EVENT_ADMITTED: Final = "Admitted"
EVENT_PENDING: Final = "Pending"
EVENT_PREEMPTED: Final = "Preempted"
EVENT_FINISHED: Final = "FinishedWorkload"

COMPONENT: Final = "kueue-admission"
JOB_RECONCILER_COMPONENT: Final = "kueue-job-reconciler"
