"""Standard Workload Format (Parallel Workloads Archive) traces, plain or gzipped.

18 whitespace-separated numeric fields per job; ``;`` starts a header comment (``MaxProcs``,
``MaxNodes`` give the machine size). Replay conventions (../shared/traces/README.md): size =
requested processors (field 8), or allocated (field 5) when -1; requested time = field 9 (the
estimate; missing when -1). Jobs with run time <= 0, size <= 0 or a missing submit time are
skipped; a line that is not 18 finite numbers is skipped as malformed. A requested time <= 0
counts as missing; a fractional processor count is rounded up. All counted by reason.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import numpy as np

from kubehpc.sim.traces.common import (
    MALFORMED,
    SIZE_FROM_ALLOCATED,
    SIZE_ROUNDED_UP,
    FloatArray,
    Trace,
    TraceError,
    build_trace,
    numeric_codes,
)

FIELDS = 18
PROCESSORS = "cpu"
_HEADER = re.compile(r"^;\s*(MaxProcs|MaxNodes)\s*:\s*(\d+)", re.MULTILINE)


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise TraceError(f"{path}: not a valid gzip file: {exc}") from exc
    return raw.decode("utf-8", errors="replace")


def _parse_rows(lines: list[str], skipped: Counter[str]) -> FloatArray:
    """The numeric matrix of the job lines. Fast path: every line has 18 numbers, parsed in
    one NumPy call; otherwise line by line, dropping the malformed ones."""
    if not lines:
        return np.zeros((0, FIELDS))
    text = " ".join(lines)
    tokens = text.split()
    if len(tokens) == FIELDS * len(lines):
        try:
            return _finite_rows(np.array(tokens, dtype=np.float64).reshape(len(lines), FIELDS), skipped)
        except ValueError:
            pass  # a non-numeric token somewhere: find it line by line
    rows: list[list[float]] = []
    for line in lines:
        parts = line.split()
        if len(parts) != FIELDS:
            skipped[MALFORMED] += 1
            continue
        try:
            rows.append([float(p) for p in parts])
        except ValueError:
            skipped[MALFORMED] += 1
    return _finite_rows(np.array(rows, dtype=np.float64).reshape(len(rows), FIELDS), skipped)


def _finite_rows(rows: FloatArray, skipped: Counter[str]) -> FloatArray:
    """Python's float() reads "nan" and "inf"; SWF has no such values, so such a line is
    malformed like any other non-number."""
    finite = np.isfinite(rows).all(axis=1)
    if finite.all():
        return rows
    skipped[MALFORMED] += int((~finite).sum())
    return rows[finite]


def parse_swf(text: str, name: str = "swf") -> Trace:
    header = dict(_HEADER.findall(text))
    machine_procs = header.get("MaxProcs") or header.get("MaxNodes")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(";")]
    skipped: Counter[str] = Counter()
    rows = _parse_rows(lines, skipped)
    ids = rows[:, 0].astype(np.int64)
    submit = rows[:, 1]
    run = rows[:, 3]
    allocated = rows[:, 4]
    requested_procs = rows[:, 7]
    requested_time = rows[:, 8]
    from_allocated = requested_procs == -1
    size = np.where(from_allocated, allocated, requested_procs)
    adjusted: Counter[str] = Counter()
    if from_allocated.any():
        adjusted[SIZE_FROM_ALLOCATED] = int((from_allocated & (allocated > 0)).sum())
    # Processors come whole: a job that asked for part of one needs a whole one.
    fractional = (size > 0) & (size != np.floor(size))
    if fractional.any():
        adjusted[SIZE_ROUNDED_UP] = int(fractional.sum())
        size = np.ceil(size)
    user_codes, user_names = numeric_codes(rows[:, 11])
    queue_codes, queue_names = numeric_codes(rows[:, 14])
    machine = np.array([int(machine_procs)], dtype=np.int64) if machine_procs else None
    return build_trace(
        name,
        (PROCESSORS,),
        ids,
        submit,
        run,
        # -1 is SWF's "unknown"; a limit of 0 or below is no limit a job could run within
        # either, so it is missing too (and counted as such when the replay fills it in).
        np.where(requested_time > 0, requested_time, np.nan),
        # Capped below int64's limit so an absurd size stays absurd (larger than the machine,
        # counted as such) instead of wrapping round to a negative one.
        np.minimum(size, 2.0**62).astype(np.int64).reshape(-1, 1),
        users=user_codes,
        user_names=user_names,
        queues=queue_codes,
        queue_names=queue_names,
        machine=machine,
        records=len(lines),
        skipped=skipped,
        adjusted=adjusted,
    )


def read_swf(path: str | Path) -> Trace:
    p = Path(path)
    return parse_swf(read_text(p), name=p.name.removesuffix(".gz").removesuffix(".swf"))
