"""Names, reasons and messages of the batch/v1 Job API, spelled as Kubernetes spells them."""

from __future__ import annotations

from typing import Final

JOB_API_VERSION: Final = "batch/v1"
# spec.managedBy: Jobs naming another controller are left alone (e.g. Kueue MultiKueue).
JOB_CONTROLLER_NAME: Final = "kubernetes.io/job-controller"
JOB_KIND: Final = "Job"
POD_API_VERSION: Final = "v1"
POD_KIND: Final = "Pod"

# Finalizer the Job controller puts on every pod it creates: while a pod carries it, the pod's
# outcome has not been counted in the Job's status yet. Counting happens exactly once because
# the pod's UID (or completion index) is written to the status before the finalizer goes.
TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"

COMPLETION_INDEX_KEY: Final = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT_ANNOTATION: Final = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: Final = "batch.kubernetes.io/job-index-ignored-failure-count"
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"

# Spec values.
INDEXED: Final = "Indexed"
NON_INDEXED: Final = "NonIndexed"
REPLACE_TERMINATING_OR_FAILED: Final = "TerminatingOrFailed"
REPLACE_FAILED: Final = "Failed"

# Condition types.
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
FAILURE_TARGET: Final = "FailureTarget"
SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"

# Condition reasons and messages.
REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
MESSAGE_BACKOFF_LIMIT_EXCEEDED: Final = "Job has reached the specified backoff limit"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
MESSAGE_DEADLINE_EXCEEDED: Final = "Job was active longer than specified deadline"
REASON_POD_FAILURE_POLICY: Final = "PodFailurePolicy"
REASON_MAX_FAILED_INDEXES_EXCEEDED: Final = "MaxFailedIndexesExceeded"
MESSAGE_MAX_FAILED_INDEXES_EXCEEDED: Final = "Job has exceeded the specified maximal number of failed indexes"
REASON_FAILED_INDEXES: Final = "FailedIndexes"
MESSAGE_FAILED_INDEXES: Final = "Job has failed indexes"
REASON_SUCCESS_POLICY: Final = "SuccessPolicy"
REASON_COMPLETIONS_REACHED: Final = "CompletionsReached"
MESSAGE_COMPLETIONS_REACHED: Final = "Reached expected number of succeeded pods"
REASON_JOB_SUSPENDED: Final = "JobSuspended"
MESSAGE_JOB_SUSPENDED: Final = "Job suspended"
REASON_JOB_RESUMED: Final = "JobResumed"
MESSAGE_JOB_RESUMED: Final = "Job resumed"

# Event reasons.
EVENT_SUCCESSFUL_CREATE: Final = "SuccessfulCreate"
EVENT_FAILED_CREATE: Final = "FailedCreate"
EVENT_SUCCESSFUL_DELETE: Final = "SuccessfulDelete"
EVENT_FAILED_DELETE: Final = "FailedDelete"
EVENT_COMPLETED: Final = "Completed"
EVENT_SUSPENDED: Final = "Suspended"
EVENT_RESUMED: Final = "Resumed"
EVENT_TOO_MANY_SUCCEEDED: Final = "TooManySucceededPods"

NORMAL: Final = "Normal"
WARNING: Final = "Warning"

# Defaults the API server applies (kept here too, so a Job read from a server that did not
# default a field is still handled as Kubernetes would).
DEFAULT_BACKOFF_LIMIT: Final = 6
MAX_INT32: Final = 2**31 - 1

# Generated names: the API server appends 5 random characters and caps names at 63.
MAX_GENERATED_NAME_LENGTH: Final = 63 - 5
