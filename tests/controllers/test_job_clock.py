"""The clocks the Job controller can be given."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kubehpc.controllers.job import FakeClock, RealClock, ScaledClock


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
