"""The long-running cluster-mode commands (``kubehpc controller``, ``kubehpc node``) stop on
SIGTERM or SIGINT, and write every thread's stack to stderr on SIGUSR1 without stopping."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, signal, time
from kubehpc.cli.cluster_common import stop_on_signals
stop = stop_on_signals()
os.kill(os.getpid(), signal.SIGUSR1)
time.sleep(0.2)
print("still running", flush=True)
os.kill(os.getpid(), signal.SIGTERM)
print("stop set" if stop.wait(5) else "stop not set", flush=True)
"""


def test_sigusr1_writes_every_threads_stack_and_sigterm_stops() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Current thread" in done.stderr and 'File "<string>"' in done.stderr
    assert done.stdout.split() == ["still", "running", "stop", "set"]
