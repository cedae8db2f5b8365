"""CPU time of a benchmark's work: this process's and that of its store's log writer, the
process the store commits through (``kubehpc.store.logwriter``), so that a figure per write or
per workload counts the commit wherever it runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

from kubehpc.store.store import Store


def writer_cpu_s(store: Store) -> float:
    """CPU seconds the store's log writer has used (0 for a store without a file)."""
    log = store._log
    if log is None:
        return 0.0
    # /proc/PID/stat: after the command name's closing parenthesis, utime and stime are the
    # 12th and 13th fields, in clock ticks.
    fields = Path(f"/proc/{log.writer_pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_s(store: Store) -> float:
    """This process's CPU seconds plus the store's log writer's."""
    return time.process_time() + writer_cpu_s(store)
