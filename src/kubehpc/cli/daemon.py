"""Starting, finding and stopping the local control plane process.

The serving process holds an exclusive ``flock`` on the pidfile for its whole life, so
"is one running?" is answered by the lock, not by a pid that may have been reused: a process
killed with ``kill -9`` releases the lock with it.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from kubehpc.kube.kubeconfig import KubeconfigError, load_client_config
from kubehpc.kube.rest import RestClient
from kubehpc.store.home import Home

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 6444
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


class DaemonError(Exception):
    """The control plane could not be started or stopped."""


class PidLock:
    """The pidfile, locked by the process it names for as long as that process runs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None

    def acquire(self) -> bool:
        """Lock the pidfile and write our pid; False when another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")  # noqa: SIM115 - held open for the life of the process
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            return False
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh
        return True

    def release(self) -> None:
        if self._fh is None:
            return
        self.path.unlink(missing_ok=True)
        fcntl.flock(self._fh, fcntl.LOCK_UN)
        self._fh.close()
        self._fh = None


def running_pid(home: Home) -> int | None:
    """The pid of the control plane serving ``home``, or None when none runs."""
    path = home.pid_path
    if not path.exists():
        return None
    try:
        with open(path) as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = fh.read().strip()
                return int(text) if text.isdigit() else None
            fcntl.flock(fh, fcntl.LOCK_UN)
            return None
    except FileNotFoundError:
        return None


def local_client(home: Home) -> RestClient | None:
    """A client for the kubeconfig ``up`` wrote, when there is one."""
    try:
        return RestClient(load_client_config(str(home.kubeconfig_path)), retries=0, timeout=5.0)
    except (KubeconfigError, OSError):
        return None


def is_ready(home: Home) -> bool:
    client = local_client(home)
    if client is None:
        return False
    with client:
        return client.ready()


def port_in_use(host: str, port: int) -> bool:
    """Whether something already listens on ``host:port`` (bound as the server binds)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def choose_port(host: str, port: int | None) -> int:
    """The port to serve on. Not given: the usual one, or any free port when another control
    plane (another home) already holds it. Given and taken: an error saying so, rather than a
    start that dies in the server log."""
    if port is None:
        return 0 if port_in_use(host, DEFAULT_PORT) else DEFAULT_PORT
    if port and port_in_use(host, port):
        raise DaemonError(
            f"port {port} on {host} is already in use (another `kubehpc up`?); "
            "pick another with --port, or --port 0 for any free port"
        )
    return port


def start_daemon(
    home: Home,
    host: str = DEFAULT_HOST,
    port: int | None = None,
    cluster: str = "",
    timeout_s: float = START_TIMEOUT_S,
    event_ttl: str = "",
) -> int:
    """Start ``kubehpc up`` detached (own session, output to the server log) and return its pid
    once ``/readyz`` answers. ``port`` None: as :func:`choose_port` decides."""
    port = choose_port(host, port)
    home.ensure()
    cmd = [sys.executable, "-m", "kubehpc.cli", "--home", str(home.root), "up", "--host", host]
    cmd += ["--port", str(port)]
    if cluster:
        cmd += ["--cluster", cluster]
    if event_ttl:
        cmd += ["--event-ttl", event_ttl]
    with open(home.server_log_path, "ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise DaemonError(
                f"the control plane exited with code {code} while starting; "
                f"its log ({home.server_log_path}) ends with:\n{_tail(home.server_log_path)}"
            )
        if running_pid(home) == proc.pid and home.kubeconfig_path.exists() and is_ready(home):
            return proc.pid
        time.sleep(0.1)
    proc.terminate()
    raise DaemonError(
        f"the control plane did not become ready in {timeout_s:.0f}s; see {home.server_log_path}"
    )


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


def stop_daemon(home: Home, timeout_s: float = STOP_TIMEOUT_S) -> tuple[int, bool] | None:
    """SIGTERM the control plane, SIGKILL it after ``timeout_s``; None when none runs.
    Returns the pid and whether it had to be killed."""
    pid = running_pid(home)
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        home.pid_path.unlink(missing_ok=True)
        return pid, False
    killed = False
    deadline = time.monotonic() + timeout_s
    # The lock goes when the process closes the pidfile; the process itself a moment later.
    while running_pid(home) == pid or process_alive(pid):
        if time.monotonic() > deadline and not killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            killed = True
            deadline = time.monotonic() + 5.0
        elif killed and time.monotonic() > deadline:
            raise DaemonError(f"process {pid} did not exit after SIGKILL")
        time.sleep(0.05)
    home.pid_path.unlink(missing_ok=True)
    return pid, killed
