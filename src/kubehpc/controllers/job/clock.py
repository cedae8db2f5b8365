"""Clocks the Job controller reads time from.

Decisions never read the wall clock directly: the controller is handed a clock, so tests move
time by hand and demos can run back-off and deadlines faster than real time.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    def wall_seconds(self, seconds: float) -> float:
        """How long to really wait for ``seconds`` of this clock's time to pass."""
        ...


class RealClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def wall_seconds(self, seconds: float) -> float:
        return seconds


class FakeClock:
    """Time that moves only when told to (tests)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += timedelta(seconds=seconds)

    def wall_seconds(self, seconds: float) -> float:
        # Nobody moves this clock while a loop sleeps, so poll briefly instead of waiting.
        return min(seconds, 0.05)


class ScaledClock:
    """Wall time sped up ``speed`` times from the moment it is made (demos, e2e tests)."""

    def __init__(self, speed: float, start: datetime | None = None) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.speed = speed
        self._origin = start or datetime.now(UTC)
        self._wall_origin = datetime.now(UTC)

    def now(self) -> datetime:
        elapsed = (datetime.now(UTC) - self._wall_origin).total_seconds()
        return self._origin + timedelta(seconds=elapsed * self.speed)

    def wall_seconds(self, seconds: float) -> float:
        return seconds / self.speed
