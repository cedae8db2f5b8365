"""Run one container as a host process: start, wait, stop, and adopt after an agent restart.

What a container is here:

* Its process runs under a tiny ``/bin/sh`` shim in a new session (so a new process group):
  ``sh -c 'trap : TERM; "$@"; c=$?; echo $c > EXIT_FILE; exit $c' EXIT_FILE ARGV...``. The shim
  passes SIGTERM on to nothing itself (the whole group receives it), waits for the program and
  writes its exit status to a file, so an agent that was restarted, and cannot ``waitpid`` a
  process it did not fork, still learns the exit code. Death by signal N reads as 128+N, as
  Kubernetes reports it.
* stdout and stderr go, interleaved, to ``Home.pod_log_path(ns, pod, container)``; on a restart
  the previous run's log moves to ``<container>.previous.log`` (``kubectl logs --previous``).
* Every process of the container carries ``KUBEHPC_CONTAINER_ID=<pod uid>/<container>`` in its
  environment. Stopping a container signals its process group *and* every process carrying the
  tag (which catches children that called ``setsid`` to leave the group); when the main process
  ends, whatever is left of the container is killed, as when a container's PID 1 exits.
* A record ``<state dir>/<pod uid>_<container>.json`` holds pid, its start time (clock ticks from
  ``/proc/<pid>/stat``, so a recycled pid is never mistaken for ours) and the exit file, written
  before :meth:`Runner.start` returns. :meth:`Runner.adopt` reads them back.

Limits (exactly what is enforced):

* CPU: a container with ``limits.cpu`` is pinned with ``sched_setaffinity`` to
  ceil(limit) CPUs of the agent's own CPU set, the least used ones first. Requests are not
  enforced (they are the scheduler's business). No CFS quota.
* Memory: where the host delegates cgroup v2 memory to us (:mod:`kubehpc.node.cgroups`),
  ``limits.memory`` is the ``memory.max`` of a cgroup of the container's own (swap 0), and a
  container that exits non-zero after the OOM killer struck in it ends with reason OOMKilled.
  Elsewhere it becomes ``RLIMIT_DATA`` (private writable memory: heap and anonymous mappings)
  of the shim and everything it starts; allocations past it fail with ENOMEM, and a process
  that dies of that ends as Error with its own exit code.
* No file system, network, PID or user isolation: the image is recorded, not pulled, and the
  command runs on the host (optionally behind the cluster config's per-image prefix).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import math
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kubehpc.node.cgroups import MemoryCgroups

_log = logging.getLogger(__name__)

CONTAINER_ID_ENV = "KUBEHPC_CONTAINER_ID"
_SHIM = 'trap : TERM; "$@"; c=$?; echo $c > "$0"; exit $c'
_PR_SET_CHILD_SUBREAPER = 36
EXIT_NOT_FOUND = 127  # as a shell reports "command not found"
EXIT_LOST = 137  # Kubernetes' exit code for ContainerStatusUnknown


class StartError(Exception):
    """The process could not be started; the message is in the container's log too."""

    def __init__(self, message: str, exit_code: int = EXIT_NOT_FOUND):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


@dataclass(frozen=True)
class LaunchSpec:
    container_id: str  # "<pod uid>/<container name>"
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    cpu_millis: int | None = None
    memory_bytes: int | None = None
    extra: dict[str, str] = field(default_factory=dict)  # kept in the record (pod name, ...)


@dataclass
class Process:
    container_id: str
    pid: int
    start_ticks: int
    exit_path: str
    log_path: str
    started_at: float
    cpus: list[int] = field(default_factory=list)
    own_child: bool = True
    extra: dict[str, str] = field(default_factory=dict)
    cgroup: str = ""  # its cgroup v2 directory, "" when memory is not limited by a cgroup


@dataclass(frozen=True)
class Exit:
    exit_code: int
    reason: str  # Completed | Error | OOMKilled | ContainerStatusUnknown
    message: str = ""
    finished_at: float = 0.0


def resolve_executable(argv0: str, path_var: str, cwd: Path) -> str:
    """The file to exec, or StartError with the message container runtimes print."""
    if "/" in argv0:
        p = Path(argv0) if os.path.isabs(argv0) else cwd / argv0
        if not p.exists():
            raise StartError(f'exec: "{argv0}": stat {argv0}: no such file or directory')
        if p.is_dir() or not os.access(p, os.X_OK):
            raise StartError(f'exec: "{argv0}": permission denied', 126)
        return str(p)
    found = shutil.which(argv0, path=path_var)
    if found is None:
        raise StartError(f'exec: "{argv0}": executable file not found in $PATH')
    return found


def proc_start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (start time since boot), None when the pid is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return int(fields[19])


def _proc_state(pid: int) -> tuple[str, int, int] | None:
    """(state letter, ppid, pgid) of a process, None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def _tagged(pid: int, tag: bytes) -> bool:
    try:
        return tag in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _tag_of(pid: int) -> str:
    prefix = CONTAINER_ID_ENV.encode() + b"="
    try:
        for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if item.startswith(prefix):
                return item[len(prefix) :].decode(errors="replace")
    except OSError:
        pass
    return ""


def container_pids(container_id: str, pgid: int | None = None) -> list[int]:
    """Live processes of a container: its process group, processes carrying its tag that were
    orphaned (parent init, or us as subreaper), and every descendant of those.

    One pass over /proc/*/stat; environments are read only for orphans, which keeps a scan
    cheap on a busy host (a container's processes are found by ancestry, not by reading every
    process's environment).
    """
    tag = f"{CONTAINER_ID_ENV}={container_id}".encode()
    me = os.getpid()
    procs: dict[int, tuple[str, int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        st = _proc_state(pid)
        # Skip ourselves, zombies, and kernel threads (children of kthreadd, pid 2).
        if st is None or pid in (me, 2) or st[0] == "Z" or st[1] == 2:
            continue
        procs[pid] = st
    roots = [pid for pid, st in procs.items() if pgid is not None and st[2] == pgid]
    roots += [
        pid for pid, st in procs.items() if st[1] in (0, 1, me) and pid not in roots and _tagged(pid, tag)
    ]
    children: dict[int, list[int]] = {}
    for pid, st in procs.items():
        children.setdefault(st[1], []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return sorted(found)


def session_leaders() -> dict[str, int]:
    """Container id -> pid of every running container shim on this host (tagged session
    leaders running the shim script). Finds containers whose start was interrupted before
    their record was written."""
    out: dict[str, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        st = _proc_state(pid)
        if st is None or st[0] == "Z" or st[2] != pid:
            continue
        cid = _tag_of(pid)
        if not cid:
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2 and argv[2] == _SHIM.encode():
            out[cid] = pid
    return out


class CpuPool:
    """Hands out CPUs for pinning, least used first; deterministic (lowest id on ties)."""

    def __init__(self, cpus: list[int] | None = None):
        self.cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
        self.load = dict.fromkeys(self.cpus, 0)
        self._lock = threading.Lock()

    def take(self, millis: int) -> list[int]:
        n = min(max(1, math.ceil(millis / 1000)), len(self.cpus))
        with self._lock:
            chosen = sorted(sorted(self.cpus, key=lambda c: (self.load[c], c))[:n])
            for c in chosen:
                self.load[c] += 1
        return chosen

    def hold(self, cpus: list[int]) -> None:
        with self._lock:
            for c in cpus:
                if c in self.load:
                    self.load[c] += 1

    def give_back(self, cpus: list[int]) -> None:
        with self._lock:
            for c in cpus:
                if self.load.get(c, 0) > 0:
                    self.load[c] -= 1


def set_child_subreaper() -> bool:
    """Make orphans of our containers' process trees our children (Linux), so they can be
    found and reaped instead of leaking to init. Returns whether it worked."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


class Runner:
    def __init__(
        self, state_dir: Path, cpu_pool: CpuPool | None = None, cgroups: MemoryCgroups | None = None
    ):
        self.state_dir = state_dir
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.cpu_pool = cpu_pool or CpuPool()
        self.cgroups = cgroups  # None: memory limits are RLIMIT_DATA
        self._stale_cgroups: set[Path] = set()  # not removable yet (processes were leaving)
        self._known_tree: set[int] = set()
        self._lock = threading.Lock()
        self._waiters: dict[str, _Waiter] = {}
        self._finished: dict[str, float] = {}  # container id -> when it ended (for sweep)

    # -- records ----------------------------------------------------------------------------

    def _record_path(self, container_id: str) -> Path:
        return self.state_dir / (container_id.replace("/", "_") + ".json")

    def _write_record(self, proc: Process) -> None:
        path = self._record_path(proc.container_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(proc)))
        os.replace(tmp, path)  # atomic: a crash leaves the old record or the new, never half

    def records(self, pod_uid: str = "") -> list[Process]:
        """Recorded containers, all of them or only one pod's (records are named after the
        container id, ``<pod uid>/<container>``, so one pod's are found without reading all)."""
        out = []
        pattern = f"{pod_uid}_*.json" if pod_uid else "*.json"
        for p in sorted(self.state_dir.glob(pattern)):
            try:
                data = json.loads(p.read_text())
                data["own_child"] = False
                out.append(Process(**data))
            except (OSError, ValueError, TypeError):
                p.unlink(missing_ok=True)
        return out

    def forget(self, proc: Process) -> None:
        """Drop the record and exit file of a finished container (after its status is stored)."""
        self._record_path(proc.container_id).unlink(missing_ok=True)
        Path(proc.exit_path).unlink(missing_ok=True)

    # -- start ------------------------------------------------------------------------------

    def start(self, spec: LaunchSpec) -> Process:
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        if spec.log_path.exists() and spec.log_path.stat().st_size:
            os.replace(spec.log_path, spec.log_path.with_name(spec.log_path.stem + ".previous.log"))
        env = dict(spec.env)
        env[CONTAINER_ID_ENV] = spec.container_id
        try:
            if not spec.argv:
                raise StartError(
                    "no command given: kubehpc runs containers as host processes and cannot "
                    "read an image's entrypoint; set command (or a cluster imagePrefixes rule)"
                )
            exe = resolve_executable(spec.argv[0], env.get("PATH", os.defpath), spec.cwd)
        except StartError as exc:
            spec.log_path.write_text(exc.message + "\n")
            raise
        exit_path = self.state_dir / (spec.container_id.replace("/", "_") + ".exit")
        exit_path.unlink(missing_ok=True)
        cpus = self.cpu_pool.take(spec.cpu_millis) if spec.cpu_millis else []
        memory = spec.memory_bytes
        cgroup: Path | None = None
        if memory and self.cgroups is not None:
            try:
                cgroup = self.cgroups.create(spec.container_id, memory)
            except OSError as exc:  # e.g. a limit below what the kernel accepts: RLIMIT instead
                _log.info("cgroup for %s not created (%s); using RLIMIT_DATA", spec.container_id, exc)
        procs = str(cgroup / "cgroup.procs") if cgroup is not None else ""

        def limit() -> None:  # runs in the child between fork and exec: no Python locks taken
            if cpus:
                os.sched_setaffinity(0, cpus)
            if memory:
                if procs:
                    try:
                        fd = os.open(procs, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                        try:
                            os.write(fd, b"0")  # "0": the writing process itself
                        finally:
                            os.close(fd)
                        return
                    except OSError:
                        pass  # could not join: the rlimit below still bounds it
                resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))

        log = open(spec.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            popen = subprocess.Popen(
                ["/bin/sh", "-c", _SHIM, str(exit_path), exe, *spec.argv[1:]],
                cwd=spec.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=limit if (cpus or memory) else None,
                close_fds=True,
            )
        except OSError as exc:
            self.cpu_pool.give_back(cpus)
            if cgroup is not None:
                MemoryCgroups.remove(cgroup)
            msg = f'exec: "{spec.argv[0]}": {exc.strerror}'
            spec.log_path.write_text(msg + "\n")
            raise StartError(msg, 128) from None
        finally:
            log.close()
        # We reap this pid ourselves (waitpid) so that adoption and own children share one path;
        # mark the Popen done so its finaliser never waits on or warns about it.
        popen.returncode = 0
        proc = Process(
            container_id=spec.container_id,
            pid=popen.pid,
            start_ticks=proc_start_ticks(popen.pid) or 0,
            exit_path=str(exit_path),
            log_path=str(spec.log_path),
            started_at=time.time(),
            cpus=cpus,
            extra=dict(spec.extra),
            cgroup=str(cgroup) if cgroup is not None else "",
        )
        self._write_record(proc)
        return proc

    # -- wait -------------------------------------------------------------------------------

    def _alive(self, proc: Process) -> bool:
        ticks = proc_start_ticks(proc.pid)
        st = _proc_state(proc.pid)
        return ticks is not None and ticks == proc.start_ticks and st is not None and st[0] != "Z"

    def _exit_from_file(self, proc: Process) -> Exit:
        try:
            code = int(Path(proc.exit_path).read_text().strip())
        except (OSError, ValueError):
            return Exit(
                EXIT_LOST,
                "ContainerStatusUnknown",
                "the container's process ended while the node agent was down; its exit code is lost",
                time.time(),
            )
        return self._exit(code)

    @staticmethod
    def _exit(code: int) -> Exit:
        return Exit(code, "Completed" if code == 0 else "Error", "", time.time())

    def _waiter(self, proc: Process) -> _Waiter:
        """The one thread that waits for ``proc`` (two waiters on one pid would race for its
        status); created on first use."""
        with self._lock:
            w = self._waiters.get(proc.container_id)
            if w is None or w.proc is not proc:
                w = _Waiter(proc)
                self._waiters[proc.container_id] = w
                threading.Thread(
                    target=self._wait_loop, args=(w,), name=f"wait-{proc.pid}", daemon=True
                ).start()
        return w

    def _wait_loop(self, w: _Waiter) -> None:
        proc = w.proc
        ex: Exit | None = None
        if proc.own_child:
            try:
                _, status = os.waitpid(proc.pid, 0)
                code = os.waitstatus_to_exitcode(status)
                ex = self._exit(code if code >= 0 else 128 - code)
            except ChildProcessError:
                proc.own_child = False
        while ex is None:
            if not self._alive(proc):
                ex = self._exit_from_file(proc)
                self._reap_if_ours(proc)
                break
            time.sleep(0.05)
        ex = self._finish(proc, ex)
        with self._lock:
            w.exit = ex
            callbacks, w.callbacks = w.callbacks, []
        w.done.set()
        for cb in callbacks:
            cb(proc, ex)

    def _reap_if_ours(self, proc: Process) -> None:
        # An adopted process can still be our child (the agent restarted in-process, or we are
        # the subreaper): reap its zombie, checked by start time so it is certainly this one.
        st = _proc_state(proc.pid)
        ours = st is not None and st[0] == "Z" and st[1] == os.getpid()
        if ours and proc_start_ticks(proc.pid) == proc.start_ticks:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(proc.pid, os.WNOHANG)

    def watch(self, proc: Process, on_exit: Callable[[Process, Exit], None]) -> None:
        """Call ``on_exit(proc, exit)`` once the container ends (from the waiter thread)."""
        w = self._waiter(proc)
        with self._lock:
            if w.exit is None:
                w.callbacks.append(on_exit)
                return
        on_exit(proc, w.exit)

    def poll(self, proc: Process) -> Exit | None:
        return self._waiter(proc).exit

    def wait(self, proc: Process, timeout: float | None = None) -> Exit | None:
        """Block until the container ends (or ``timeout`` passes: None)."""
        w = self._waiter(proc)
        w.done.wait(timeout)
        return w.exit

    def _finish(self, proc: Process, ex: Exit) -> Exit:
        # The main process is gone: what it left in its process group goes too (container
        # semantics); usually the group is empty and this is one ESRCH. Children that left the
        # group with setsid are found by tag in :meth:`sweep`, which the agent runs
        # periodically: a /proc scan per exit would cost more than the container.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with self._lock:
            self._finished[proc.container_id] = time.monotonic()
        self.cpu_pool.give_back(proc.cpus)
        proc.cpus = []
        if proc.cgroup:
            cgroup = Path(proc.cgroup)
            if ex.exit_code != 0 and MemoryCgroups.oom_killed(cgroup):
                ex = Exit(ex.exit_code, "OOMKilled", ex.message, ex.finished_at)
            if not MemoryCgroups.remove(cgroup):
                with self._lock:
                    self._stale_cgroups.add(cgroup)
        return ex

    def sweep(self, max_age: float = 600.0) -> list[int]:
        """Kill leftovers of containers that ended here: processes carrying the tag of a
        finished container that were orphaned (parent init, or us as subreaper). Returns the
        pids killed."""
        now = time.monotonic()
        with self._lock:
            stale, self._stale_cgroups = self._stale_cgroups, set()
        for cgroup in stale:
            if not MemoryCgroups.remove(cgroup, timeout=0):
                with self._lock:
                    self._stale_cgroups.add(cgroup)
        with self._lock:
            for cid, at in list(self._finished.items()):
                if now - at > max_age:
                    del self._finished[cid]
            finished = set(self._finished)
        if not finished:
            return []
        me = os.getpid()
        killed = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            st = _proc_state(pid)
            if st is None or st[0] == "Z" or st[1] not in (1, me) or pid == me:
                continue
            cid = _tag_of(pid)
            if cid in finished:
                # Its descendants are found through it.
                for victim in container_pids(cid, None):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(victim, signal.SIGKILL)
                    killed.append(victim)
        self._known_tree.update(killed)
        self.reap_orphans()
        return sorted(set(killed))

    # -- stop -------------------------------------------------------------------------------

    def _kill_tree(self, proc: Process, sig: signal.Signals) -> list[int]:
        pids = container_pids(proc.container_id, proc.pid if self._alive(proc) else None)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if self._alive(proc):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
        self._known_tree.update(pids)
        if sig == signal.SIGKILL:
            self.reap_orphans()
        return pids

    def stop(self, proc: Process, grace_seconds: float) -> Exit:
        """SIGTERM to the whole container, SIGKILL after ``grace_seconds``; returns its exit."""
        done = self.poll(proc)
        if done is not None:
            return done
        self._kill_tree(proc, signal.SIGTERM)
        done = self.wait(proc, timeout=max(grace_seconds, 0))
        if done is not None:
            return done
        self._kill_tree(proc, signal.SIGKILL)
        done = self.wait(proc, timeout=10)
        return done or Exit(EXIT_LOST, "Error", "the process did not die after SIGKILL", time.time())

    # -- adoption and reaping ---------------------------------------------------------------

    def adopt(self) -> list[tuple[Process, Exit | None]]:
        """Processes recorded by an earlier agent: (process, None) when still running — keep
        watching it — or (process, exit) when it ended meanwhile."""
        out: list[tuple[Process, Exit | None]] = []
        for proc in self.records():
            if self._alive(proc):
                self.cpu_pool.hold(proc.cpus)
                out.append((proc, None))
            else:
                out.append((proc, self.wait(proc)))
        return out

    def adopt_pid(self, container_id: str, pid: int, log_path: Path, extra: dict[str, str]) -> Process | None:
        """Take over a running container shim that has no record (its start was interrupted
        by an agent crash); writes the record. None when the pid is gone."""
        ticks = proc_start_ticks(pid)
        if ticks is None:
            return None
        try:
            cpus = sorted(os.sched_getaffinity(pid))
        except OSError:
            cpus = []
        pinned = cpus if len(cpus) < len(self.cpu_pool.cpus) else []
        self.cpu_pool.hold(pinned)
        proc = Process(
            container_id=container_id,
            pid=pid,
            start_ticks=ticks,
            exit_path=str(self.state_dir / (container_id.replace("/", "_") + ".exit")),
            log_path=str(log_path),
            started_at=time.time(),
            cpus=pinned,
            own_child=False,
            extra=dict(extra),
        )
        self._write_record(proc)
        return proc

    def reap_orphans(self) -> int:
        """Reap zombies that are ours because we are the subreaper of container trees; only
        pids seen as container processes are touched, never other code's children."""
        reaped = 0
        me = os.getpid()
        for pid in list(self._known_tree):
            st = _proc_state(pid)
            if st is None:
                self._known_tree.discard(pid)
            elif st[1] == me and st[0] == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                    reaped += 1
                self._known_tree.discard(pid)
        return reaped


@dataclass(eq=False)
class _Waiter:
    proc: Process
    done: threading.Event = field(default_factory=threading.Event)
    exit: Exit | None = None
    callbacks: list[Callable[[Process, Exit], None]] = field(default_factory=list)
