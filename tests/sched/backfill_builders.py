"""Builders for queue-policy tests: pools from plain tuples (one resource unless given rows)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubehpc.sched.backfill import Pool


def pool(
    capacity: int,
    queue: Sequence[tuple[int, float]],
    running: Sequence[tuple[float, int]] = (),
    now: float = 0.0,
    reservations: Sequence[float] | None = None,
) -> Pool:
    """``queue``: (size, estimate) in queue order; ``running``: (estimated end, size)."""
    used = sum(size for _, size in running)
    return Pool(
        now=now,
        capacity=np.array([capacity], dtype=np.int64),
        free=np.array([capacity - used], dtype=np.int64),
        queue_sizes=np.array([[s] for s, _ in queue], dtype=np.int64).reshape(len(queue), 1),
        queue_estimates=np.array([e for _, e in queue], dtype=np.float64),
        running_ends=np.array([e for e, _ in running], dtype=np.float64),
        running_sizes=np.array([[s] for _, s in running], dtype=np.int64).reshape(len(running), 1),
        reservations=None if reservations is None else np.array(reservations, dtype=np.float64),
    )
