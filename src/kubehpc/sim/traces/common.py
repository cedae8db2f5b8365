"""A workload trace as columns: one NumPy array per job attribute, jobs in queue order.

Readers turn a file into a :class:`Trace`; nothing downstream sees per-job Python objects.
Every job a reader drops and every value it changes is counted by reason in ``skipped`` and
``adjusted`` — never silently.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# Skip reasons (keys of Trace.skipped), shared by all readers so reports read the same.
MALFORMED = "malformed line"
NO_RUNTIME = "run time <= 0 or missing"
NO_SIZE = "size <= 0 or missing"
NO_SUBMIT = "submit time < 0 or missing"
TOO_LARGE = "larger than the machine"
# Adjustment reasons (keys of Trace.adjusted).
SIZE_FROM_ALLOCATED = "size taken from allocated processors (requested = -1)"
SIZE_ROUNDED_UP = "fractional processor count rounded up"
NO_REQUESTED_TIME = "requested time missing: run time used as estimate"
RAISED_TO_RUNTIME = "requested time < run time: estimate raised to run time"


class TraceError(ValueError):
    """A trace file that cannot be read at all (not found, wrong kind); bad jobs are skipped."""


@dataclass(frozen=True)
class PodSetSpec:
    """``count`` identical pods of one role of a job, as a workload file describes them: the
    node-level replay places each pod on a node (``sim/nodes.py``); the pool replay only sees
    the job's total."""

    name: str
    count: int
    requests: tuple[tuple[str, int], ...]
    """One pod's requests in kubehpc units (cpu in millicores), sorted by resource."""
    required_topology: str | None = None
    """A node label: every pod in one domain of that level, or the job waits (Kueue TAS)."""
    preferred_topology: str | None = None
    """A node label: one domain of that level if any holds the pods, else as tight as fits."""


@dataclass(frozen=True)
class JobPods:
    """A job's pod sets, its name, and where it is written (for errors that name its fields)."""

    name: str
    where: str
    """``FILE: spec.jobs[i]``."""
    pod_sets: tuple[PodSetSpec, ...]


@dataclass(frozen=True)
class Trace:
    """Jobs sorted by (submit time, job id): the queue order of every policy here.

    ``sizes[i, r]`` is job i's request of ``resources[r]``, in the resource's integer units
    (processors for SWF, GPUs for the Philly trace, kubehpc units — cpu in millicores — for
    workload YAML). ``requested`` is the user's requested time (the run time limit), ``nan`` when
    the trace has none. ``users``/``queues`` are codes into ``user_names``/``queue_names``.
    """

    name: str
    resources: tuple[str, ...]
    ids: IntArray
    submit: FloatArray
    run: FloatArray
    requested: FloatArray
    sizes: IntArray
    users: IntArray
    user_names: tuple[str, ...]
    queues: IntArray
    queue_names: tuple[str, ...]
    priority: IntArray
    machine: IntArray | None = None
    """The machine size the trace's header declares (SWF MaxProcs/MaxNodes), if any."""
    records: int = 0
    """Job records read from the file, before skipping."""
    skipped: Counter[str] = field(default_factory=Counter)
    adjusted: Counter[str] = field(default_factory=Counter)
    whole_unit: int = 1
    """Units of the first resource in one processor (1000 for cpu in millicores): what
    ``--procs N`` multiplies."""
    pods: tuple[JobPods, ...] | None = None
    """Per job (row order), its pod sets; None for traces that have none (SWF, Philly)."""

    def __len__(self) -> int:
        return len(self.ids)

    def fit_to(self, capacity: IntArray) -> Trace:
        """Drop the jobs larger than ``capacity`` in any resource (counted, not silent)."""
        too_big = np.asarray((self.sizes > capacity).any(axis=1), dtype=np.bool_)
        if not too_big.any():
            return self
        skipped = Counter(self.skipped)
        skipped[TOO_LARGE] += int(too_big.sum())
        return self.select(~too_big, skipped=skipped)

    def select(self, keep: npt.NDArray[np.bool_], skipped: Counter[str] | None = None) -> Trace:
        return replace(
            self,
            ids=self.ids[keep],
            submit=self.submit[keep],
            run=self.run[keep],
            requested=self.requested[keep],
            sizes=self.sizes[keep],
            users=self.users[keep],
            queues=self.queues[keep],
            priority=self.priority[keep],
            skipped=self.skipped if skipped is None else skipped,
            pods=None
            if self.pods is None
            else tuple(p for p, k in zip(self.pods, keep.tolist(), strict=True) if k),
        )


def build_trace(
    name: str,
    resources: tuple[str, ...],
    ids: IntArray,
    submit: FloatArray,
    run: FloatArray,
    requested: FloatArray,
    sizes: IntArray,
    *,
    users: IntArray | None = None,
    user_names: tuple[str, ...] = (),
    queues: IntArray | None = None,
    queue_names: tuple[str, ...] = (),
    priority: IntArray | None = None,
    machine: IntArray | None = None,
    records: int | None = None,
    skipped: Counter[str] | None = None,
    adjusted: Counter[str] | None = None,
    whole_unit: int = 1,
    pods: list[JobPods] | None = None,
) -> Trace:
    """Drop unreplayable jobs (counted by reason) and sort the rest by (submit, id)."""
    n = len(ids)
    skipped = Counter(skipped or {})
    users = np.full(n, -1, dtype=np.int64) if users is None else users
    queues = np.full(n, -1, dtype=np.int64) if queues is None else queues
    priority = np.zeros(n, dtype=np.int64) if priority is None else priority
    # Written as "not (valid)" so that nan is invalid too; inf is no time either.
    no_submit = ~((submit >= 0) & np.isfinite(submit))
    no_run = ~no_submit & ~((run > 0) & np.isfinite(run))
    no_size = ~no_submit & ~no_run & ~((sizes >= 0).all(axis=1) & (sizes > 0).any(axis=1))
    for reason, mask in ((NO_SUBMIT, no_submit), (NO_RUNTIME, no_run), (NO_SIZE, no_size)):
        if mask.any():
            skipped[reason] += int(mask.sum())
    keep = ~(no_submit | no_run | no_size)
    order = np.lexsort((ids[keep], submit[keep]))
    idx = np.flatnonzero(keep)[order]
    return Trace(
        name=name,
        resources=resources,
        ids=ids[idx].astype(np.int64),
        submit=submit[idx].astype(np.float64),
        run=run[idx].astype(np.float64),
        # An infinite limit is no limit: the replay fills it in from the run time (counted).
        requested=np.where(np.isfinite(requested[idx]), requested[idx], np.nan).astype(np.float64),
        sizes=sizes[idx].astype(np.int64).reshape(len(idx), len(resources)),
        users=users[idx].astype(np.int64),
        user_names=user_names,
        queues=queues[idx].astype(np.int64),
        queue_names=queue_names,
        priority=priority[idx].astype(np.int64),
        machine=machine,
        records=n if records is None else records,
        skipped=skipped,
        adjusted=Counter(adjusted or {}),
        whole_unit=whole_unit,
        pods=None if pods is None else tuple(pods[k] for k in idx.tolist()),
    )


def codes(values: list[str]) -> tuple[IntArray, tuple[str, ...]]:
    """Strings to integer codes (in order of first appearance) and the names they stand for."""
    index: dict[str, int] = {}
    out = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
    return out, tuple(index)


def numeric_codes(values: FloatArray) -> tuple[IntArray, tuple[str, ...]]:
    """Numeric ids (SWF users, queues) to codes in increasing id order; -1 reads "unknown"."""
    unique, inverse = np.unique(values, return_inverse=True)
    names = tuple("unknown" if v == -1 else str(int(v)) for v in unique)
    return inverse.astype(np.int64).reshape(-1), names
