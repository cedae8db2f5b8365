"""Names, reasons and messages of Kueue's API and controllers, spelled as Kueue spells them."""

from __future__ import annotations

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
WORKLOAD = "Workload"
CLUSTER_QUEUE = "ClusterQueue"
LOCAL_QUEUE = "LocalQueue"
COHORT = "Cohort"
RESOURCE_FLAVOR = "ResourceFlavor"
WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
PRIORITY_CLASS_API_VERSION = "scheduling.k8s.io/v1"
PRIORITY_CLASS = "PriorityClass"

# Labels and annotations on jobs.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-completions-equal-parallelism"
STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"
# On Workloads: the uid of the job that owns it (Kueue's JobUIDLabel).
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
# kubehpc's own: where a pending Workload stands in its ClusterQueue (1 = next).
POSITION_ANNOTATION = "kubehpc.io/queue-position"

DEFAULT_POD_SET = "main"

# Workload condition types.
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
FINISHED = "Finished"

# Workload condition reasons.
REASON_QUOTA_RESERVED = "QuotaReserved"
REASON_ADMITTED = "Admitted"
REASON_PENDING = "Pending"
REASON_INADMISSIBLE = "Inadmissible"
REASON_NO_RESERVATION = "NoReservation"
REASON_EVICTED_BY_PREEMPTION = "Preempted"
REASON_SUCCEEDED = "Succeeded"
REASON_FAILED = "Failed"

# Preemption reasons (the Preempted condition's reason, the metric's label).
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
HUMAN_PREEMPTION_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
    "": "UNKNOWN",
}

# Messages.
MESSAGE_ADMITTED = "The workload is admitted"
MESSAGE_NO_RESERVATION = "The workload has no reservation"

# Queue condition (Active) reasons and messages.
ACTIVE = "Active"
REASON_READY = "Ready"
CQ_READY_MESSAGE = "Can admit new workloads"
LQ_READY_MESSAGE = "Can submit new workloads to localQueue"
LQ_CQ_MISSING_REASON = "ClusterQueueDoesNotExist"
LQ_CQ_INACTIVE_REASON = "ClusterQueueIsInactive"
LQ_CQ_UNUSABLE_MESSAGE = "Can't submit new workloads to clusterQueue"
LQ_STOPPED_REASON = "Stopped"
LQ_STOPPED_MESSAGE = "LocalQueue is stopped"

# Events.
EVENT_CREATED_WORKLOAD = "CreatedWorkload"
EVENT_WORKLOAD_COMPOSE_ERROR = "ErrWorkloadCompose"
EVENT_STARTED = "Started"
EVENT_STOPPED = "Stopped"
EVENT_SUSPENDED = "Suspended"
EVENT_QUOTA_RESERVED = "QuotaReserved"
EVENT_ADMITTED = "Admitted"
EVENT_PENDING = "Pending"
EVENT_PREEMPTED = "Preempted"
EVENT_FINISHED = "FinishedWorkload"

COMPONENT = "kueue-admission"
JOB_RECONCILER_COMPONENT = "kueue-job-reconciler"
