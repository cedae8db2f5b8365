"""Exponential back-off before replacing failed pods: 10s, 20s, 40s, ... up to a cap.

As in Kubernetes, the controller remembers per Job the failures since the last success
(:class:`BackoffRecord`) and advances it with the pods it sees finish. A controller that starts
without a record (a restart) seeds it from the counted pods still stored, so a restart does not
wipe out the back-off of a Job whose pods keep failing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class BackoffPolicy:
    base_seconds: float = 10.0
    max_seconds: float = 360.0

    def delay(self, failures: int) -> float:
        """Back-off after ``failures`` consecutive failures (0 -> no wait)."""
        if failures <= 0:
            return 0.0
        delay = self.base_seconds
        for _ in range(1, failures):
            delay *= 2
            if delay >= self.max_seconds:
                return self.max_seconds
        return min(delay, self.max_seconds)

    def remaining(self, failures: int, last_failure: datetime | None, now: datetime) -> float:
        if failures <= 0 or last_failure is None:
            return 0.0
        waited = (now - last_failure).total_seconds()
        return max(0.0, self.delay(failures) - waited)


@dataclass(frozen=True)
class BackoffRecord:
    """Consecutive pod failures since the Job's last success, and when the last one was."""

    failures: int = 0
    last_failure: datetime | None = None

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per Job per reconcile).
    def __init__(
        self,
        failures: int = 0,
        last_failure: datetime | None = None,
    ) -> None:
        object.__setattr__(self, "failures", failures)
        object.__setattr__(self, "last_failure", last_failure)

    @staticmethod
    def seed(failed: list[datetime], succeeded: list[datetime]) -> BackoffRecord:
        last_success = max(succeeded) if succeeded else None
        recent = [t for t in failed if last_success is None or t > last_success]
        return BackoffRecord(len(recent), max(recent) if recent else None)

    def advance(self, failed: list[datetime], succeeded: list[datetime]) -> BackoffRecord:
        """Account for pods newly seen finished (``newBackoffRecord`` of the job controller)."""
        if not succeeded:
            if not failed:
                return self
            return BackoffRecord(self.failures + len(failed), max(failed))
        return BackoffRecord.seed(failed, succeeded)
