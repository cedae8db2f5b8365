"""Names Volcano's controllers use on the objects they make (labels, annotations, kinds)."""

from __future__ import annotations

JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
JOB_KIND = "Job"
PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
PODGROUP_KIND = "PodGroup"
QUEUE_API_VERSION = "scheduling.volcano.sh/v1beta1"
QUEUE_KIND = "Queue"
POD_API_VERSION = "v1"

SCHEDULER_NAME = "volcano"
DEFAULT_QUEUE = "default"
DEFAULT_TASK = "default"  # a task without a name is "default<index>" in the webhook; see view.py

# On pods (and on the PodGroup), as Volcano's job controller sets them.
JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
JOB_VERSION_KEY = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"

# Plugins.
ENV_TASK_INDEX = "VC_TASK_INDEX"
ENV_TASK_INDEX_LEGACY = "VK_TASK_INDEX"
SVC_MOUNT_PATH = "/etc/volcano"
SSH_MOUNT_PATH = "/root/.ssh"
SSH_SUBPATH = ".ssh"
SSH_PRIVATE_KEY = "id_rsa"
SSH_PUBLIC_KEY = "id_rsa.pub"
SSH_AUTHORIZED_KEYS = "authorized_keys"
SSH_CONFIG = "config"
KNOWN_PLUGINS = ("env", "svc", "ssh")

# Lifecycle: events (what happened) and actions (what a policy makes of it).
POD_FAILED = "PodFailed"
POD_EVICTED = "PodEvicted"
TASK_COMPLETED = "TaskCompleted"
TASK_FAILED = "TaskFailed"
ANY_EVENT = "*"
RESTART_JOB = "RestartJob"
ABORT_JOB = "AbortJob"
COMPLETE_JOB = "CompleteJob"
TERMINATE_JOB = "TerminateJob"
RESTART_TASK = "RestartTask"
RESTART_POD = "RestartPod"
SYNC_JOB = "SyncJob"
ACTIONS = (RESTART_JOB, ABORT_JOB, COMPLETE_JOB, TERMINATE_JOB, RESTART_TASK, RESTART_POD, SYNC_JOB)

# Job phases.
PENDING = "Pending"
RUNNING = "Running"
RESTARTING = "Restarting"
COMPLETING = "Completing"
COMPLETED = "Completed"
ABORTING = "Aborting"
ABORTED = "Aborted"
TERMINATING = "Terminating"
TERMINATED = "Terminated"
FAILED = "Failed"
FINISHED = (COMPLETED, TERMINATED, FAILED)

# PodGroup phases.
PG_PENDING = "Pending"
PG_INQUEUE = "Inqueue"
PG_RUNNING = "Running"
PG_UNKNOWN = "Unknown"
PG_COMPLETED = "Completed"
