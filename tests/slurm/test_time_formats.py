"""Slurm's time formats: every -t form, unlimited, rounding, bad values; --begin; printing."""

from __future__ import annotations

from datetime import datetime

import pytest

from kubehpc.slurm.timefmt import (
    TimeFormatError,
    format_elapsed,
    format_sacct_elapsed,
    format_time_limit,
    parse_begin,
    parse_time_limit,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15", 15 * 60),  # minutes
        ("90", 90 * 60),
        ("10:30", 11 * 60),  # minutes:seconds, rounded up to whole minutes
        ("0:30", 60),
        ("1:00", 60),
        ("01:59:00", (60 + 59) * 60),  # hours:minutes:seconds
        ("100:00:00", 100 * 3600),  # hours past a day
        ("0:10:00", 600),
        ("2-12", (2 * 24 + 12) * 3600),  # days-hours
        ("1-2:30", (26 * 60 + 30) * 60),  # days-hours:minutes
        ("3-00:00:00", 3 * 86400),  # days-hours:minutes:seconds
        ("1-00:00:01", 86400 + 60),
    ],
)
def test_every_slurm_time_limit_format_reads_as_whole_minutes(text: str, seconds: int) -> None:
    assert parse_time_limit(text) == seconds


@pytest.mark.parametrize("text", ["UNLIMITED", "unlimited", "INFINITE", "-1", "0", "0:00"])
def test_unlimited_and_zero_mean_no_limit(text: str) -> None:
    assert parse_time_limit(text) is None


@pytest.mark.parametrize("text", ["5m", "1h", "abc", "1:2:3:4", "", "1-", "-5", "1-2:3:4:5", "1.5"])
def test_a_malformed_time_limit_is_an_error_listing_the_formats(text: str) -> None:
    with pytest.raises(TimeFormatError, match="D-HH:MM:SS"):
        parse_time_limit(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0:00"), (9, "0:09"), (24 * 60 + 19, "24:19"), (3723, "1:02:03"), (2 * 86400 + 3723, "2-01:02:03")],
)
def test_squeue_prints_elapsed_time_as_slurm_does(seconds: int, text: str) -> None:
    assert format_elapsed(seconds) == text


def test_an_absent_limit_prints_as_unlimited() -> None:
    assert format_time_limit(None) == "UNLIMITED"
    assert format_time_limit(1800) == "30:00"


def test_sacct_elapsed_is_always_hh_mm_ss() -> None:
    assert format_sacct_elapsed(9) == "00:00:09"
    assert format_sacct_elapsed(86400 + 61) == "1-00:01:01"


NOW = datetime(2026, 12, 2, 12, 0, 0)


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("now", NOW),
        ("now+60", datetime(2026, 12, 2, 12, 1, 0)),
        ("now+1hour", datetime(2026, 12, 2, 13, 0, 0)),
        ("now+2days", datetime(2026, 12, 4, 12, 0, 0)),
        ("16:00", datetime(2026, 12, 2, 16, 0, 0)),
        ("11:00", datetime(2026, 12, 3, 11, 0, 0)),  # past today: tomorrow
        ("teatime", datetime(2026, 12, 2, 16, 0, 0)),
        ("midnight", datetime(2026, 12, 3, 0, 0, 0)),
        ("tomorrow", datetime(2026, 12, 3, 0, 0, 0)),
        ("2027-01-15", datetime(2027, 1, 15, 0, 0, 0)),
        ("2027-01-15T08:30", datetime(2027, 1, 15, 8, 30, 0)),
        ("2027-01-15T08:30:05", datetime(2027, 1, 15, 8, 30, 5)),
        ("12/25", datetime(2026, 12, 25, 0, 0, 0)),
        ("12/25/27", datetime(2027, 12, 25, 0, 0, 0)),
        ("122527", datetime(2027, 12, 25, 0, 0, 0)),
    ],
)
def test_begin_times_in_slurm_forms(text: str, when: datetime) -> None:
    assert parse_begin(text, NOW) == when


@pytest.mark.parametrize(("text", "what"), [("now+5fortnights", "unknown unit"), ("soon", "use HH:MM")])
def test_a_bad_begin_time_names_the_problem(text: str, what: str) -> None:
    with pytest.raises(TimeFormatError, match=what):
        parse_begin(text, NOW)
