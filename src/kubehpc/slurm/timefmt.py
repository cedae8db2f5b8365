"""Slurm's time formats: time limits (``-t``), ``--begin`` times, and elapsed-time printing.

Time limits, as sbatch reads them: ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
``days-hours``, ``days-hours:minutes``, ``days-hours:minutes:seconds``, and ``UNLIMITED`` /
``INFINITE`` / ``-1`` for no limit. Slurm keeps limits in whole minutes and rounds seconds
up, so ``0:30`` is a limit of one minute; ``0`` means no limit.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

UNLIMITED_WORDS = frozenset({"UNLIMITED", "INFINITE", "-1"})
TIME_FORMATS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED"


class TimeFormatError(ValueError):
    pass


def parse_time_limit(text: str) -> int | None:
    """Seconds of a Slurm time limit (a whole number of minutes), None for no limit."""
    value = text.strip()
    if value.upper() in UNLIMITED_WORDS:
        return None
    days = 0
    rest = value
    if "-" in value:
        d, _, rest = value.partition("-")
        if not d.isdigit() or not rest:
            raise TimeFormatError(f'invalid time limit "{text}": use {TIME_FORMATS}')
        days = int(d)
        parts = rest.split(":")
        if len(parts) > 3 or not all(p.isdigit() for p in parts):
            raise TimeFormatError(f'invalid time limit "{text}": use {TIME_FORMATS}')
        h, m, s = (int(p) for p in [*parts, "0", "0"][:3])
    else:
        parts = value.split(":")
        if not parts or len(parts) > 3 or not all(p.isdigit() for p in parts):
            raise TimeFormatError(f'invalid time limit "{text}": use {TIME_FORMATS}')
        nums = [int(p) for p in parts]
        if len(nums) == 1:
            h, m, s = 0, nums[0], 0
        elif len(nums) == 2:
            h, m, s = 0, nums[0], nums[1]
        else:
            h, m, s = nums
    seconds = ((days * 24 + h) * 60 + m) * 60 + s
    if seconds == 0:
        return None
    minutes = -(-seconds // 60)
    return minutes * 60


def format_time_limit(seconds: int | None) -> str:
    """As squeue/sinfo print a limit: ``UNLIMITED``, ``M:SS``, ``H:MM:SS`` or ``D-HH:MM:SS``."""
    if seconds is None:
        return "UNLIMITED"
    return format_elapsed(seconds)


def format_elapsed(seconds: float) -> str:
    """squeue's TIME column: ``0:09``, ``24:19``, ``1:02:03``, ``2-03:04:05``."""
    total = max(0, int(seconds))
    days, rem = divmod(total, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    if days:
        return f"{days}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def format_sacct_elapsed(seconds: float) -> str:
    """sacct's Elapsed: always ``HH:MM:SS``, with ``D-`` in front past a day."""
    total = max(0, int(seconds))
    days, rem = divmod(total, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return f"{days}-{h:02d}:{m:02d}:{s:02d}" if days else f"{h:02d}:{m:02d}:{s:02d}"


def format_scontrol_time(seconds: float | None) -> str:
    """scontrol's times (RunTime, TimeLimit, MaxTime): ``HH:MM:SS``, ``D-HH:MM:SS``, or
    ``UNLIMITED`` for no limit."""
    return "UNLIMITED" if seconds is None else format_sacct_elapsed(seconds)


_NAMED_HOURS = {"midnight": 0, "noon": 12, "elevenses": 11, "fika": 15, "teatime": 16}
_UNITS = {
    "": 1,
    "s": 1,
    "sec": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
}
BEGIN_FORMATS = (
    "HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], MMDD[YY], now[+N[units]], today, tomorrow, "
    "midnight, noon, elevenses, fika or teatime"
)


def _clock(text: str) -> tuple[int, int, int] | None:
    m = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*([AaPp][Mm]))?", text)
    if not m:
        return None
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if m.group(4):
        h = h % 12 + (12 if m.group(4).lower() == "pm" else 0)
    if h > 23 or mi > 59 or s > 59:
        return None
    return h, mi, s


def parse_begin(text: str, now: datetime) -> datetime:
    """The moment ``--begin`` names, relative to ``now`` (naive or aware, as given). A bare
    time of day already past today means tomorrow, as in Slurm."""
    value = text.strip()
    low = value.lower()
    m = re.fullmatch(r"now(?:\+(\d+)\s*([a-z]*))?", low)
    if m:
        if m.group(1) is None:
            return now
        unit = m.group(2) or ""
        if unit not in _UNITS:
            raise TimeFormatError(f'invalid begin time "{text}": unknown unit "{unit}"')
        return now + timedelta(seconds=int(m.group(1)) * _UNITS[unit])
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if low == "today":
        return today
    if low == "tomorrow":
        return today + timedelta(days=1)
    if low in _NAMED_HOURS:
        t = today.replace(hour=_NAMED_HOURS[low])
        return t if t > now else t + timedelta(days=1)
    clock = _clock(value)
    if clock is not None:
        t = today.replace(hour=clock[0], minute=clock[1], second=clock[2])
        return t if t > now else t + timedelta(days=1)
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:T(.+))?", value)
    if m:
        day = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        clock = _clock(m.group(4)) if m.group(4) else (0, 0, 0)
        if clock is None:
            raise TimeFormatError(f'invalid begin time "{text}": use {BEGIN_FORMATS}')
        return _date(text, now, *day, *clock)
    m = re.fullmatch(r"(\d{2})/(\d{2})(?:/(\d{2}))?", value) or re.fullmatch(r"(\d{2})(\d{2})(\d{2})?", value)
    if m:
        year = 2000 + int(m.group(3)) if m.group(3) else now.year
        return _date(text, now, year, int(m.group(1)), int(m.group(2)), 0, 0, 0)
    raise TimeFormatError(f'invalid begin time "{text}": use {BEGIN_FORMATS}')


def _date(text: str, now: datetime, y: int, mo: int, d: int, h: int, mi: int, s: int) -> datetime:
    try:
        return now.replace(year=y, month=mo, day=d, hour=h, minute=mi, second=s, microsecond=0)
    except ValueError as exc:
        raise TimeFormatError(f'invalid begin time "{text}": {exc}') from None
