"""The GPU columns of the Philly trace as the Pollux artefact gives them (``pollux_philly.csv``).

Columns: ``timestamp`` (submit, ``YYYY-MM-DD HH:MM:SS``), ``duration`` (s), ``num_gpus``,
``gpu_time``, ``cluster`` (the virtual cluster, used as the queue). One resource,
``nvidia.com/gpu``; submit times are seconds after the earliest timestamp; the trace has no
requested times, so estimates fall back to the run time. A row that does not parse is skipped
as malformed (counted).
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from kubehpc.sim.traces.common import MALFORMED, Trace, TraceError, build_trace, codes
from kubehpc.sim.traces.swf import read_text

GPU = "nvidia.com/gpu"
COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")


def parse_philly(text: str, name: str = "philly") -> Trace:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        header = list(COLUMNS)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise TraceError(f"{name}: not a Philly GPU trace: missing column(s) {', '.join(missing)}")
    at = {c: header.index(c) for c in COLUMNS}
    width = max(at.values()) + 1
    skipped: Counter[str] = Counter()
    stamps: list[float] = []
    runs: list[float] = []
    gpus: list[int] = []
    vcs: list[str] = []
    records = 0
    for row in reader:
        if not row:
            continue
        records += 1
        try:
            if len(row) < width:
                raise ValueError("short row")
            # The trace's times carry no zone; read them as UTC so no local clock rule
            # (daylight saving) shifts a submit.
            stamp = datetime.fromisoformat(row[at["timestamp"]]).replace(tzinfo=UTC).timestamp()
            run = float(row[at["duration"]])
            n = float(row[at["num_gpus"]])
            if not math.isfinite(n) or n != int(n):
                raise ValueError("not a whole GPU count")
        except ValueError:
            skipped[MALFORMED] += 1
            continue
        stamps.append(stamp)
        runs.append(run)
        gpus.append(min(int(n), 2**62))  # absurd stays absurd: larger than the machine, counted
        vcs.append(row[at["cluster"]])
    submit = np.array(stamps, dtype=np.float64)
    if len(submit):
        submit -= submit.min()
    queue_codes, queue_names = codes(vcs)
    count = len(submit)
    return build_trace(
        name,
        (GPU,),
        np.arange(1, count + 1, dtype=np.int64),
        submit,
        np.array(runs, dtype=np.float64),
        np.full(count, np.nan),
        np.array(gpus, dtype=np.int64).reshape(-1, 1),
        queues=queue_codes,
        queue_names=queue_names,
        records=records,
        skipped=skipped,
    )


def read_philly(path: str | Path) -> Trace:
    p = Path(path)
    return parse_philly(read_text(p), name=p.stem)
