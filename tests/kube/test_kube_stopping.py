"""A cluster-mode process stops on SIGTERM whichever of its threads the kernel hands the signal
to (kube/stopping.py): its main thread waits with timed waits, so the Python handler that sets
the stop event runs even when the signal landed on another thread."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# The signal goes to a thread other than the main one (pthread_kill), as the kernel may choose
# for a signal sent to the process: CPython then only flags the main thread.
DELIVER_TO_ANOTHER_THREAD = """
import signal, threading, time

def deliver():
    time.sleep(0.3)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

threading.Thread(target=deliver).start()
"""


def run_until_stopped(main: str) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(main) + DELIVER_TO_ANOTHER_THREAD + "run()\nprint('stopped', flush=True)\n"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)


def test_the_wait_wakes_for_a_signal_delivered_to_another_thread() -> None:
    done = run_until_stopped(
        """
        from kubehpc.cli.cluster_common import stop_on_signals
        from kubehpc.kube.stopping import wait_until_set

        stop = stop_on_signals()

        def run():
            wait_until_set(stop, poll_s=0.1)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"


def test_the_cluster_controller_stops_for_a_signal_delivered_to_another_thread() -> None:
    done = run_until_stopped(
        """
        from kubehpc.api.kinds import build_registry
        from kubehpc.cli.cluster_common import stop_on_signals
        from kubehpc.kube.controller import ClusterController, ClusterOptions
        from kubehpc.store.store import Store

        stop = stop_on_signals()
        store = Store(build_registry(), None)
        options = ClusterOptions(components=(), install_crds=False, leader_elect=False)

        def run():
            ClusterController(store, options).run(stop)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"
