"""The clocks the Job controller can be given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kubehpc.controllers.job import FakeClock, RealClock, ScaledClock
from kubehpc.controllers.job.spec import format_time


def test_fake_clock_moves_only_when_advanced() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    clock = FakeClock(start)
    assert clock.now() == start
    clock.advance(90)
    assert (clock.now() - start).total_seconds() == 90


def test_scaled_clock_waits_a_fraction_of_the_controller_time() -> None:
    assert ScaledClock(speed=60).wall_seconds(360) == 6
    assert RealClock().wall_seconds(10) == 10


def test_scaled_clock_refuses_a_non_positive_speed() -> None:
    with pytest.raises(ValueError, match="speed must be positive"):
        ScaledClock(speed=0)


def test_job_times_are_written_as_whole_utc_seconds_whatever_the_zone() -> None:
    # metav1.Time: seconds cut (not rounded), converted to UTC, "Z" suffix.
    assert format_time(datetime(2026, 1, 1, 0, 0, 0, 999_999, tzinfo=UTC)) == "2026-01-01T00:00:00Z"
    five_east = timezone(timedelta(hours=5))
    assert format_time(datetime(2026, 1, 1, 5, 0, 1, tzinfo=five_east)) == "2026-01-01T00:00:01Z"
    assert format_time(datetime(2026, 3, 1, 12, 30, 59, 1, tzinfo=UTC)) == "2026-03-01T12:30:59Z"
