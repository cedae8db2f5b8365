"""The launch agent: run a command inside a running pod of the embedded cluster.

What ``ssh host cmd`` is to a cluster of machines, and ``kubectl exec`` to Kubernetes, this is to
the embedded cluster, where a pod is a host process started by the node agent. Open MPI's
``mpirun`` calls it as its remote shell (``OMPI_MCA_plm_rsh_agent``: ``agent [ssh options] host
orted ...``), and the ``srun`` shim starts its tasks through it.

How a command "enters" a pod here:

* **which pod** — the host name is resolved through the API, as a headless Service resolves it:
  ``hostname[.subdomain[.namespace[.svc[.cluster.local]]]]`` matches the pod whose
  ``spec.hostname`` (and ``spec.subdomain``) are those, or a pod of that name. The namespace
  defaults to the caller's own: every container process carries ``KUBEHPC_CONTAINER_ID=<pod
  uid>/<container>``, which names the calling pod.
* **its environment** — the target container's main process is found through the node agent's
  record (``$KUBEHPC_HOME/node/<node>/containers/<pod uid>_<container>.json``, checked by its
  start time so a recycled pid is never taken for it), and the command gets exactly that
  process's environment (devices: ``CUDA_VISIBLE_DEVICES`` and friends; volume paths; the
  container tag) and working directory.
* **its limits** — the container's CPU pinning, its memory cgroup (joined) or, without one, its
  ``RLIMIT_DATA``.
* **its lifetime** — the command runs in a session of its own; it is killed (the whole session)
  when the target container ends, when the agent is signalled (the signal is passed on first),
  and when the agent's parent dies (``PR_SET_PDEATHSIG``), so killing ``mpirun`` or the
  launcher pod kills every rank. stdout and stderr are the agent's own (streamed as they come),
  and the agent exits with the command's status (128+N for death by signal N).

As with ssh, the remote command is the arguments joined by spaces and run by ``/bin/sh -c``.
The resolution needs a :class:`~kubehpc.store.client.Client`; the console entry
(:mod:`kubehpc.cli.launch`) builds one from the home's kubeconfig.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from kubehpc.node.runner import CONTAINER_ID_ENV, proc_start_ticks
from kubehpc.store.client import Client, ListOptions
from kubehpc.store.home import Home

EXIT_LAUNCH_FAILED = 255  # what ssh returns when it cannot reach or run on the host
EXIT_TARGET_GONE = 137  # the pod's container ended under the command: killed, as with the pod
_PR_SET_PDEATHSIG = 1
# ssh options that take a value (ssh(1)); Open MPI passes plm_rsh_args such as
# "-o ConnectionAttempts=10" (the MPI Operator sets it) before the host.
_SSH_VALUE_OPTIONS = frozenset("BbcDEeFIiJLlmOopQRSWw")
_CLUSTER_SUFFIXES = ("svc", "cluster", "local")


class LaunchError(Exception):
    """The command could not be started in the pod; the message says why."""


# --- arguments ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchArgs:
    host: str
    command: list[str]
    namespace: str = ""
    container: str = ""


def parse_args(argv: Sequence[str]) -> LaunchArgs:
    """``[--namespace NS] [--container NAME] [ssh options] HOST COMMAND...``; ssh options are
    accepted and ignored (there is no connection to tune)."""
    namespace = container = ""
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("--namespace", "--container"):
            if i + 1 >= len(args):
                raise LaunchError(f"{arg} needs a value")
            if arg == "--namespace":
                namespace = args[i + 1]
            else:
                container = args[i + 1]
            i += 2
            continue
        if arg.startswith("--namespace=") or arg.startswith("--container="):
            key, _, value = arg.partition("=")
            namespace, container = (value, container) if key == "--namespace" else (namespace, value)
            i += 1
            continue
        if arg.startswith("-") and len(arg) > 1:
            letter = arg[1]
            # "-o X" takes the next argument; "-oX" carries it; other letters are flags.
            i += 2 if letter in _SSH_VALUE_OPTIONS and len(arg) == 2 else 1
            continue
        break
    if i >= len(args):
        raise LaunchError("usage: kubehpc-launch [--namespace NS] [--container NAME] HOST COMMAND...")
    host, command = args[i], args[i + 1 :]
    if not command:
        raise LaunchError(f"no command given for host {host} (an interactive shell is not supported)")
    return LaunchArgs(host, command, namespace, container)


# --- host -> pod -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostName:
    hostname: str
    subdomain: str = ""
    namespace: str = ""


def split_host(host: str) -> HostName:
    """``[user@]hostname[.subdomain[.namespace[.svc[.cluster.local]]]][.]``."""
    name = host.rpartition("@")[2].rstrip(".").lower()
    parts = name.split(".")
    while len(parts) > 1 and parts[-1] in _CLUSTER_SUFFIXES:
        parts.pop()
    if not parts[0]:
        raise LaunchError(f"invalid host name {host!r}")
    return HostName(parts[0], parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else "")


def _running(pod: Mapping[str, Any]) -> bool:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    return not meta.get("deletionTimestamp") and status.get("phase") == "Running"


def caller_namespace(client: Client, environ: Mapping[str, str]) -> str:
    """The namespace of the pod this process runs in (from its container tag), else
    ``$POD_NAMESPACE``, else "default"."""
    uid = environ.get(CONTAINER_ID_ENV, "").partition("/")[0]
    if uid:
        for pod in client.list("v1", "Pod").items:
            if pod["metadata"].get("uid") == uid:
                return str(pod["metadata"].get("namespace") or "default")
    return environ.get("POD_NAMESPACE") or "default"


def resolve_pod(pods: Sequence[Mapping[str, Any]], host: HostName) -> Mapping[str, Any]:
    """The pod a host name stands for among ``pods`` (one namespace): a running one is preferred
    to a finished one of the same name (an Indexed Job's retried pod)."""

    def matches(pod: Mapping[str, Any]) -> bool:
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        if spec.get("hostname") == host.hostname and (
            not host.subdomain or spec.get("subdomain") == host.subdomain
        ):
            return True
        return not host.subdomain and meta.get("name") == host.hostname

    found = sorted((p for p in pods if matches(p)), key=lambda p: not _running(p))
    if not found:
        where = f"{host.hostname}.{host.subdomain}" if host.subdomain else host.hostname
        raise LaunchError(f"no pod has the host name {where}")
    pod = found[0]
    if not _running(pod):
        phase = (pod.get("status") or {}).get("phase", "Pending")
        raise LaunchError(f"pod {pod['metadata']['name']} is {phase}, not Running")
    return pod


# --- the target container's process ------------------------------------------------------------


def container_record_path(home: Home, node: str, container_id: str) -> Path:
    """Where the node agent's runner keeps the record of a container's process."""
    return home.root / "node" / node / "containers" / (container_id.replace("/", "_") + ".json")


@dataclass(frozen=True)
class ContainerProcess:
    """A running container's main process and what a command entering it inherits."""

    pod: str
    namespace: str
    hostname: str
    pid: int
    start_ticks: int
    env: dict[str, str]
    cwd: str
    cpus: list[int] = field(default_factory=list)  # [] when not pinned
    cgroup_procs: str = ""  # the memory cgroup's cgroup.procs, "" when none
    data_limit: int | None = None  # RLIMIT_DATA, when memory is limited that way

    def alive(self) -> bool:
        return proc_start_ticks(self.pid) == self.start_ticks


def _environ(pid: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def enter(home: Home, pod: Mapping[str, Any], container: str = "") -> ContainerProcess:
    """The running process of ``container`` (default: the pod's first container) of ``pod``."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    names = [c.get("name") for c in spec.get("containers") or ()]
    name = container or (names[0] if names else "")
    if name not in names:
        raise LaunchError(f"pod {meta['name']} has no container {name!r}")
    node = str(spec.get("nodeName") or "")
    path = container_record_path(home, node, f"{meta['uid']}/{name}")
    try:
        record = json.loads(path.read_text())
        pid, ticks = int(record["pid"]), int(record["start_ticks"])
    except (OSError, ValueError, KeyError) as exc:
        raise LaunchError(
            f"container {name} of pod {meta['name']} is not running on this machine "
            f"(no process record under {path.parent}: {exc})"
        ) from None
    if proc_start_ticks(pid) != ticks:
        raise LaunchError(f"container {name} of pod {meta['name']} is not running (its process ended)")
    try:
        env = _environ(pid)
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError as exc:
        raise LaunchError(f"cannot read the environment of pod {meta['name']}: {exc}") from None
    procs = Path(str(record.get("cgroup") or "")) / "cgroup.procs" if record.get("cgroup") else None
    data_limit = None
    if procs is None:
        with contextlib.suppress(OSError):
            soft = resource.prlimit(pid, resource.RLIMIT_DATA)[0]
            data_limit = None if soft == resource.RLIM_INFINITY else soft
    return ContainerProcess(
        pod=str(meta["name"]),
        namespace=str(meta.get("namespace") or "default"),
        hostname=str(spec.get("hostname") or meta["name"]),
        pid=pid,
        start_ticks=ticks,
        env=env,
        cwd=cwd,
        cpus=[int(c) for c in record.get("cpus") or ()],
        cgroup_procs=str(procs) if procs is not None and procs.exists() else "",
        data_limit=data_limit,
    )


# --- running and supervising -------------------------------------------------------------------


def _limits(target: ContainerProcess) -> Callable[[], None]:
    cpus, procs, data = list(target.cpus), target.cgroup_procs, target.data_limit
    libc = ctypes.CDLL(None, use_errno=True)

    def apply() -> None:  # in the child between fork and exec
        # Die with the agent: a rank must never outlive the launch that started it.
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if cpus:
            os.sched_setaffinity(0, cpus)
        if procs:
            try:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            except OSError:
                pass  # the container's own limit still holds for its main process
        if data is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (data, data))

    return apply


def spawn(
    target: ContainerProcess,
    argv: Sequence[str],
    extra_env: Mapping[str, str] | None = None,
    cwd: str = "",
    stdout: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` inside ``target``'s container (a new session), in its working directory
    unless ``cwd`` names another; stdio are inherited, unless ``stdout`` is given (then stderr
    goes there too)."""
    env = {**target.env, **(extra_env or {})}
    directory = cwd if cwd and os.path.isdir(cwd) else target.cwd
    try:
        return subprocess.Popen(
            list(argv),
            env=env,
            cwd=directory if os.path.isdir(directory) else None,
            start_new_session=True,
            stdout=stdout,
            stderr=subprocess.STDOUT if stdout is not None else None,
            preexec_fn=_limits(target),
            close_fds=True,
        )
    except OSError as exc:
        raise LaunchError(f"cannot run {argv[0]} in pod {target.pod}: {exc.strerror}") from None


def shell_command(command: Sequence[str]) -> list[str]:
    """ssh's rule: the remote command is the words joined by spaces, run by the shell."""
    return ["/bin/sh", "-c", " ".join(command)]


def _status(code: int) -> int:
    return code if code >= 0 else 128 - code


def _kill_session(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def set_parent_death_signal(sig: int = signal.SIGTERM) -> None:
    """Be signalled when our parent dies (Linux): ``mpirun`` killed means this launch ends."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)


def supervise(
    tasks: Sequence[tuple[subprocess.Popen[bytes], ContainerProcess]],
    poll_s: float = 0.1,
    grace_s: float = 5.0,
) -> int:
    """Wait for every task; returns the highest exit status (128+N for signal N).

    A task whose pod container ends is killed (status 137). SIGTERM, SIGINT and SIGHUP to this
    process are passed on to every task's session, and SIGKILL follows after ``grace_s``;
    whatever a task leaves in its session when it ends is killed, as a container's leftovers
    are."""
    received: list[int] = []

    signalled_at = [0.0]

    def forward(signum: int, frame: FrameType | None) -> None:
        if not received:
            signalled_at[0] = time.monotonic()
        received.append(signum)
        for proc, _ in tasks:
            if proc.returncode is None:
                _kill_session(proc, signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    codes: dict[int, int] = {}
    try:
        while len(codes) < len(tasks):
            for i, (proc, target) in enumerate(tasks):
                if i in codes:
                    continue
                code = proc.poll()
                if code is not None:
                    codes[i] = _status(code)
                    _kill_session(proc, signal.SIGKILL)
                elif not target.alive():
                    _kill_session(proc, signal.SIGKILL)
                    proc.wait()
                    codes[i] = EXIT_TARGET_GONE
                    print(f"kubehpc-launch: pod {target.pod} ended; its command was killed", file=sys.stderr)
            if received and time.monotonic() - signalled_at[0] > grace_s:
                for proc, _ in tasks:  # passed on, not obeyed in time: as the kubelet would
                    if proc.returncode is None:
                        _kill_session(proc, signal.SIGKILL)
            if len(codes) < len(tasks):
                time.sleep(poll_s)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if received and all(c == 0 for c in codes.values()):
        return 128 + received[0]
    return max(codes.values(), default=0)


WAIT_ENV = "KUBEHPC_LAUNCH_WAIT_S"
DEFAULT_WAIT_S = 60.0


def wait_seconds(environ: Mapping[str, str]) -> float:
    """How long a launch waits for its pod to run (``$KUBEHPC_LAUNCH_WAIT_S``, default 60 s).

    An MPI launcher may start before its workers (the operator's default), and a batch job's
    pods start one by one; ssh's ``ConnectionAttempts`` plays this part on a real cluster."""
    try:
        return max(0.0, float(environ.get(WAIT_ENV, DEFAULT_WAIT_S)))
    except ValueError:
        return DEFAULT_WAIT_S


def enter_when_running(
    client: Client,
    home: Home,
    hosts: Sequence[str],
    namespace: str,
    container: str = "",
    wait_s: float = DEFAULT_WAIT_S,
) -> dict[str, ContainerProcess]:
    """The running container of each host's pod, waiting up to ``wait_s`` for all of them
    (one pod list per try); the last reason when they are not all running by then."""
    deadline = time.monotonic() + wait_s
    while True:
        pods = client.list("v1", "Pod", ListOptions(namespace=namespace)).items
        try:
            return {h: enter(home, resolve_pod(pods, split_host(h)), container) for h in hosts}
        except LaunchError:
            if time.monotonic() >= deadline:
                raise
        time.sleep(0.2)


def launch(client: Client, home: Home, args: LaunchArgs, environ: Mapping[str, str]) -> int:
    """Run ``args.command`` in the pod ``args.host`` names; returns its exit status."""
    host = split_host(args.host)
    namespace = args.namespace or host.namespace or caller_namespace(client, environ)
    targets = enter_when_running(client, home, [args.host], namespace, args.container, wait_seconds(environ))
    target = targets[args.host]
    return supervise([(spawn(target, shell_command(args.command)), target)])


# --- the commands pods see ----------------------------------------------------------------------

LAUNCH_COMMAND = "kubehpc-launch"
SRUN_COMMAND = "srun"


def shim_dir(home: Home) -> Path:
    """The directory the node agent puts first on every pod's PATH (``kubehpc-launch``, ``srun``)."""
    return home.root / "bin"


@dataclass(frozen=True)
class Shims:
    launch: Path
    srun: Path


def install_shims(home: Home, python: str = sys.executable) -> Shims:
    """Write the ``kubehpc-launch`` and ``srun`` commands for pods of this home: small sh
    scripts that run the launch agent with this Python and this home (a pod's environment
    does not say which home it belongs to). Rewritten on every start (the venv may move)."""
    bin_dir = shim_dir(home)
    bin_dir.mkdir(parents=True, exist_ok=True)

    def write(name: str, extra: str) -> Path:
        path = bin_dir / name
        text = (
            "#!/bin/sh\n"
            f"# kubehpc: {name} for the pods of the embedded cluster in {home.root}\n"
            f"KUBEHPC_HOME={_sh_quote(str(home.root))} exec {_sh_quote(python)} -m kubehpc.cli.launch"
            f'{extra} "$@"\n'
        )
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        os.replace(tmp, path)
        return path

    return Shims(launch=write(LAUNCH_COMMAND, ""), srun=write(SRUN_COMMAND, " --srun"))


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
