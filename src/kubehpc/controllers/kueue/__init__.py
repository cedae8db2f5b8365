"""Kueue admission, the runtime side: jobs held, queued, admitted, started, stopped, explained.

* ``webhooks``     — admission hooks for the store: queued jobs are created suspended (Kueue's
  job webhook); pods get their PriorityClass's priority (the Priority plugin).
* ``jobframework`` — the per-kind adapter protocol (Kueue's GenericJob) and the pod-set info
  injected on start and restored on stop; ``jobs/`` holds one adapter per kind (batch/v1 Job).
* ``reconciler``   — the generic job reconciler: Workload per job, start on admission, stop on
  eviction, Finished when the job ends.
* ``admission``    — the admission loop: informer caches (``cache``), one pure decision per
  cycle (``kubehpc.sched.admission``), assume-then-write, ClusterQueue / LocalQueue status
  (``queuestatus``), explanations of pending workloads, metrics (``metrics``).
* ``workloads``, ``conditions``, ``constants`` — Workload shapes, transitions and names as
  Kueue writes them.
"""
