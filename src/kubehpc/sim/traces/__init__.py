"""Trace readers: SWF, the Philly GPU trace, kubehpc's workload YAML — all to one ``Trace``."""

from __future__ import annotations

from pathlib import Path

from kubehpc.sim.traces.common import Trace, TraceError
from kubehpc.sim.traces.philly import read_philly
from kubehpc.sim.traces.swf import read_swf
from kubehpc.sim.traces.workload import read_workload

__all__ = ["Trace", "TraceError", "read_trace"]


def read_trace(path: str | Path) -> Trace:
    """Pick the reader by file name: ``.swf``/``.swf.gz``, ``.csv``, ``.yaml``/``.yml``."""
    name = Path(path).name.lower()
    if name.endswith((".yaml", ".yml")):
        return read_workload(path)
    if name.endswith(".csv"):
        return read_philly(path)
    if name.endswith((".swf", ".swf.gz")):
        return read_swf(path)
    raise TraceError(f"{path}: unknown trace format (expected .swf, .swf.gz, .csv, .yaml or .yml)")
