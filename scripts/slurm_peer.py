#!/usr/bin/env python3
"""A real Slurm (Debian's 22.05 daemons) on this one machine, for side-by-side checks.

    scripts/slurm_peer.py start --dir D [--nodes 4] [--cpus 4] [--gpus 0] [--mem 8192]
                                [--node-prefix cpu-] [--priority basic|multifactor]
    scripts/slurm_peer.py stop --dir D

``start`` writes D/etc/slurm.conf (+ gres.conf, a private munge key), starts a private munged,
slurmctld and ONE slurmd PROCESS PER EMULATED NODE (Debian builds slurmd with
--enable-multiple-slurmd: ``slurmd -N <node>``, each node its own port), waits until every
node is idle and prints ``SLURM_CONF=D/etc/slurm.conf`` on its last line. Job scripts really
run on this machine. ``stop`` cancels every job and stops the daemons by their PID files.

Facts this relies on (checked on Debian bookworm, Slurm 22.05.8):
* the daemons decide what they are from argv[0]: started as ``slurmctld-wlm`` the controller
  silently drops every node's ``Gres=``, so they are started through links named
  slurmctld / slurmd / slurmstepd;
* a GPU GRES needs ``File=`` (a ``Count=`` line alone is dropped and the node drains); the
  files are character devices cloned from /dev/null;
* no cgroups or systemd are needed with proctrack/pgid, task/none, jobacct_gather/none;
* without slurmdbd, sacct is empty: jobcomp/filetxt logs each finished job's times, state and
  nodes to D/log/jobcomp.txt instead;
* ``SlurmdParameters=config_overrides`` lets the nodes declare more than the host has.

Needs root and the packages scripts/system-deps.sh installs (slurmctld slurmd slurm-client
munge); says so and exits 1 otherwise. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

BINARIES = {
    "slurmctld": "/usr/sbin/slurmctld-wlm",
    "slurmd": "/usr/sbin/slurmd-wlm",
    "slurmstepd": "/usr/sbin/slurmstepd-wlm",
}
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "scancel", "sdiag", "munge", "unmunge")
MUNGED = "/usr/sbin/munged"


class PeerError(RuntimeError):
    pass


def check_installed() -> None:
    missing = [p for p in (*BINARIES.values(), MUNGED) if not os.access(p, os.X_OK)]
    missing += [c for c in CLIENTS if shutil.which(c) is None]
    if missing:
        raise PeerError(
            f"Slurm is not installed (missing: {', '.join(missing)}); "
            "run scripts/system-deps.sh (Debian packages slurmctld slurmd slurm-client munge)"
        )
    if os.geteuid() != 0:
        raise PeerError("the Slurm daemons run as root (SlurmUser=root); run as root")


def node_names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def free_port_base(count: int) -> int:
    """A base port P with P..P+count all free right now (slurmctld on P, node i on P+1+i)."""
    for base in range(20000, 60000, 97):
        sockets = []
        try:
            for port in range(base, base + count + 1):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                sockets.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise PeerError("no free range of ports for slurmctld and the slurmd processes")


def slurm_conf(d: Path, args: argparse.Namespace, port: int) -> str:
    host = socket.gethostname().split(".")[0]
    nodes = node_names(args.node_prefix, args.nodes)
    sockets = 2 if args.cpus >= 2 and args.cpus % 2 == 0 else 1
    priority = (
        "PriorityType=priority/basic"
        if args.priority == "basic"
        else "PriorityType=priority/multifactor\nPriorityWeightJobSize=1000\n"
        "PriorityWeightAge=0\nPriorityWeightFairshare=0"
    )
    gres = f" Gres=gpu:{args.gpu_type}:{args.gpus}" if args.gpus else ""
    sched_params = ",".join(
        p for p in ("bf_continue,bf_window=2880,bf_resolution=60", args.sched_params) if p
    )
    node_lines = "\n".join(
        f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port + 1 + i} "
        f"CPUs={args.cpus} Boards=1 SocketsPerBoard={sockets} CoresPerSocket={args.cpus // sockets} "
        f"ThreadsPerCore=1 RealMemory={args.mem}{gres} State=UNKNOWN"
        for i, name in enumerate(nodes)
    )
    return f"""\
# written by kubehpc scripts/slurm_peer.py
ClusterName=peer
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/run/munge.socket
StateSaveLocation={d}/state/ctld
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=error
MailProg=/bin/true
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters={sched_params}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU={max(1, args.mem // args.cpus)}
GresTypes=gpu
{priority}
MaxJobCount=200000
MaxArraySize=100001
MinJobAge=600
ReturnToService=2
SlurmctldTimeout=120
SlurmdTimeout=600
MessageTimeout=60
InactiveLimit=0
KillWait=5
Waittime=0
SlurmdParameters=config_overrides
{node_lines}
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def env_for(d: Path) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(d / "etc" / "slurm.conf")}


def _run(cmd: list[str], d: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env_for(d), timeout=60, check=False)
    if check and proc.returncode != 0:
        raise PeerError(f"{' '.join(cmd)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def _log_tail(path: Path) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-8:])
    except OSError:
        return "(no log)"


def start(args: argparse.Namespace) -> Path:
    check_installed()
    d = Path(args.dir).resolve()
    if (d / "run" / "slurmctld.pid").exists():
        stop(d)
    for sub in ("etc", "state/ctld", "state/munge", "spool", "log", "run", "sbin", "dev"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "state" / "munge").chmod(0o700)
    for link, target in BINARIES.items():
        path = d / "sbin" / link
        path.unlink(missing_ok=True)
        path.symlink_to(target)
    key = d / "etc" / "munge.key"
    if not key.exists():
        key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    for i in range(args.gpus):
        dev = d / "dev" / f"gpu{i}"
        if not dev.exists():
            os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a /dev/null clone
    port = free_port_base(args.nodes)
    (d / "etc" / "slurm.conf").write_text(slurm_conf(d, args, port))
    gres = "AutoDetect=off\n"
    if args.gpus:
        nodes = f"{args.node_prefix}[0-{args.nodes - 1}]"
        gres += f"NodeName={nodes} Name=gpu Type={args.gpu_type} File={d}/dev/gpu[0-{args.gpus - 1}]\n"
    (d / "etc" / "gres.conf").write_text(gres)
    for stale in ("jobcomp.txt", "slurmctld.log"):
        (d / "log" / stale).unlink(missing_ok=True)

    sock = d / "run" / "munge.socket"
    _run(
        [
            MUNGED,
            "--force",
            f"--key-file={key}",
            f"--socket={sock}",
            f"--pid-file={d}/run/munged.pid",
            f"--log-file={d}/log/munged.log",
            f"--seed-file={d}/state/munge/munged.seed",
        ],
        d,
    )
    _wait(lambda: sock.exists(), 10, "munged did not open its socket", d / "log" / "munged.log")
    conf = str(d / "etc" / "slurm.conf")
    _run([str(d / "sbin" / "slurmctld"), "-c", "-i", "-f", conf], d)
    _wait(
        lambda: _run(["scontrol", "ping"], d, check=False).returncode == 0,
        30,
        "slurmctld did not answer",
        d / "log" / "slurmctld.log",
    )
    for name in node_names(args.node_prefix, args.nodes):
        (d / "spool" / name).mkdir(exist_ok=True)
        _run([str(d / "sbin" / "slurmd"), "-N", name, "-d", str(d / "sbin" / "slurmstepd"), "-f", conf], d)

    def all_idle() -> bool:
        out = _run(["sinfo", "-h", "-N", "-t", "idle", "-o", "%N"], d, check=False).stdout.split()
        return bool(len(set(out)) >= args.nodes)

    _wait(all_idle, 60, f"not all {args.nodes} nodes became idle", d / "log" / "slurmctld.log")
    return d


def _wait(predicate: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise PeerError(f"{what} within {timeout:.0f} s; {log}:\n{_log_tail(log)}")


def _pid(path: Path, exe: str) -> int | None:
    """The PID in ``path`` if that process is alive and is ``exe`` (never signal a stranger)."""
    try:
        pid = int(path.read_text().strip())
        if exe in os.readlink(f"/proc/{pid}/exe"):
            return pid
    except (OSError, ValueError):
        pass
    return None


def stop(d: Path) -> None:
    d = Path(d).resolve()
    ctld = _pid(d / "run" / "slurmctld.pid", "slurmctld")
    if ctld is not None:
        ids = _run(["squeue", "-h", "-o", "%A"], d, check=False).stdout.split()
        if ids:
            _run(["scancel", *ids], d, check=False)
            deadline = time.monotonic() + 30
            while (
                time.monotonic() < deadline
                and _run(["squeue", "-h", "-o", "%A"], d, check=False).stdout.strip()
            ):
                time.sleep(0.3)
    # All slurmd at once (each takes a second or two to wind down), then slurmctld, then munged.
    slurmds = [(p, "slurmd") for p in sorted((d / "run").glob("slurmd-*.pid"))]
    for group in (
        slurmds,
        [(d / "run" / "slurmctld.pid", "slurmctld")],
        [(d / "run" / "munged.pid", "munged")],
    ):
        pids = [pid for pid in (_pid(path, exe) for path, exe in group) if pid is not None]
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") for pid in pids):
            time.sleep(0.1)
        for pid in pids:
            if os.path.exists(f"/proc/{pid}"):
                os.kill(pid, signal.SIGKILL)
        for path, _ in group:
            path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("start")
    up.add_argument("--dir", required=True)
    up.add_argument("--nodes", type=int, default=4)
    up.add_argument("--cpus", type=int, default=4)
    up.add_argument("--gpus", type=int, default=0)
    up.add_argument("--gpu-type", default="a100", help="GRES type of the GPUs")
    up.add_argument("--mem", type=int, default=8192, help="MB per node")
    up.add_argument("--node-prefix", default="cpu-")
    up.add_argument("--priority", choices=("basic", "multifactor"), default="basic")
    up.add_argument("--sched-params", default="", help="appended to SchedulerParameters")
    down = sub.add_parser("stop")
    down.add_argument("--dir", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            d = start(args)
            print(f"SLURM_CONF={d / 'etc' / 'slurm.conf'}")
        else:
            stop(Path(args.dir))
    except PeerError as err:
        print(f"slurm_peer: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
