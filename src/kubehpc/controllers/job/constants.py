"""Names, reasons and messages of the batch/v1 Job API, spelled as Kubernetes spells them."""

from __future__ import annotations

JOB_API_VERSION = "batch/v1"
# spec.managedBy: Jobs naming another controller are left alone (e.g. Kueue MultiKueue).
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"
JOB_KIND = "Job"
POD_API_VERSION = "v1"
POD_KIND = "Pod"

# Finalizer the Job controller puts on every pod it creates: while a pod carries it, the pod's
# outcome has not been counted in the Job's status yet. Counting happens exactly once because
# the pod's UID (or completion index) is written to the status before the finalizer goes.
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"

COMPLETION_INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-ignored-failure-count"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"

# Spec values.
INDEXED = "Indexed"
NON_INDEXED = "NonIndexed"
REPLACE_TERMINATING_OR_FAILED = "TerminatingOrFailed"
REPLACE_FAILED = "Failed"

# Condition types.
COMPLETE = "Complete"
FAILED = "Failed"
SUSPENDED = "Suspended"
FAILURE_TARGET = "FailureTarget"
SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"

# Condition reasons and messages.
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
MESSAGE_BACKOFF_LIMIT_EXCEEDED = "Job has reached the specified backoff limit"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
MESSAGE_DEADLINE_EXCEEDED = "Job was active longer than specified deadline"
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_MAX_FAILED_INDEXES_EXCEEDED = "MaxFailedIndexesExceeded"
MESSAGE_MAX_FAILED_INDEXES_EXCEEDED = "Job has exceeded the specified maximal number of failed indexes"
REASON_FAILED_INDEXES = "FailedIndexes"
MESSAGE_FAILED_INDEXES = "Job has failed indexes"
REASON_SUCCESS_POLICY = "SuccessPolicy"
REASON_COMPLETIONS_REACHED = "CompletionsReached"
MESSAGE_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"
REASON_JOB_SUSPENDED = "JobSuspended"
MESSAGE_JOB_SUSPENDED = "Job suspended"
REASON_JOB_RESUMED = "JobResumed"
MESSAGE_JOB_RESUMED = "Job resumed"

# Event reasons.
EVENT_SUCCESSFUL_CREATE = "SuccessfulCreate"
EVENT_FAILED_CREATE = "FailedCreate"
EVENT_SUCCESSFUL_DELETE = "SuccessfulDelete"
EVENT_FAILED_DELETE = "FailedDelete"
EVENT_COMPLETED = "Completed"
EVENT_SUSPENDED = "Suspended"
EVENT_RESUMED = "Resumed"
EVENT_TOO_MANY_SUCCEEDED = "TooManySucceededPods"

NORMAL = "Normal"
WARNING = "Warning"

# Defaults the API server applies (kept here too, so a Job read from a server that did not
# default a field is still handled as Kubernetes would).
DEFAULT_BACKOFF_LIMIT = 6
MAX_INT32 = 2**31 - 1

# Generated names: the API server appends 5 random characters and caps names at 63.
MAX_GENERATED_NAME_LENGTH = 63 - 5
