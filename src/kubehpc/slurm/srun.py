"""``srun`` inside a batch job: its options, the task layout, and each task's SLURM_* variables.

Pure: the shim (:mod:`kubehpc.cli.launch`, ``--srun``) reads the job's environment, asks this
module where each task runs and with which variables, and starts the tasks through the launch
agent in the pods of the job.

Layout as Slurm's default (``--distribution=block``): the step uses the first ``-N`` nodes of
the job (all of them by default); ``-n`` tasks are spread so that the counts differ by at most
one, lower nodes taking the extra; task ids go to nodes in blocks (node 0 gets 0..k-1). With
``--ntasks-per-node`` and no ``-n``, every node runs that many. Without either, one task per
node of the step (``SLURM_NTASKS`` of the job when it asked for tasks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubehpc.slurm import hostlist

# Options that take a value and only tune what Slurm does around the tasks; accepted, ignored.
_IGNORED_WITH_VALUE = frozenset(
    {
        "--mpi",
        "--jobid",
        "--cpu-bind",
        "--mem-bind",
        "--distribution",
        "-m",
        "--gpu-bind",
        "--kill-on-bad-exit",
        "-K",
        "--time",
        "-t",
        "--job-name",
        "-J",
        "--partition",
        "-p",
        "--account",
        "-A",
        "--mem",
        "--gres",
        "--gpus-per-task",
        "--gpus",
        "-G",
        "--gpus-per-node",
        "--cpus-per-gpu",
        "--output",
        "-o",
        "--error",
        "-e",
        "--wait",
        "-W",
        "--signal",
        "--container-image",
        "--container-mounts",
        "--container-name",
    }
)
_IGNORED_FLAGS = frozenset(
    {
        "--exclusive",
        "--overlap",
        "--overcommit",
        "-O",
        "--unbuffered",
        "-u",
        "--quiet",
        "-Q",
        "--verbose",
        "-v",
        "--kill-on-bad-exit",
        "--no-kill",
        "-k",
        "--whole",
    }
)


class SrunError(ValueError):
    """A bad srun command line or a step that does not fit the job."""


@dataclass(frozen=True)
class SrunOptions:
    command: list[str]
    ntasks: int | None = None
    nodes: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None
    label: bool = False
    ignored: list[str] = field(default_factory=list)


def _int(option: str, value: str) -> int:
    text = value.split("-")[0]  # "-N 2-4": Slurm takes the minimum when it can
    if not text.isdigit() or int(text) < 1:
        raise SrunError(f"srun: {option}: want a positive number, got {value!r}")
    return int(text)


def parse(argv: Sequence[str]) -> SrunOptions:
    values: dict[str, int] = {}
    ignored: list[str] = []
    label = False
    args = list(argv)
    i = 0
    names = {
        "-n": "ntasks",
        "--ntasks": "ntasks",
        "-N": "nodes",
        "--nodes": "nodes",
        "--ntasks-per-node": "ntasks_per_node",
        "-c": "cpus_per_task",
        "--cpus-per-task": "cpus_per_task",
    }
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        key, eq, inline = arg.partition("=")
        if not eq and len(arg) > 2 and arg[1] != "-" and arg[:2] in names:
            key, inline, eq = arg[:2], arg[2:], "="  # "-n4"
        if key in names:
            if eq:
                value = inline
                i += 1
            else:
                if i + 1 >= len(args):
                    raise SrunError(f"srun: option {key} needs a value")
                value = args[i + 1]
                i += 2
            values[names[key]] = _int(key, value)
        elif key in ("-l", "--label"):
            label = True
            i += 1
        elif key in _IGNORED_WITH_VALUE:
            ignored.append(arg if eq else f"{arg} {args[i + 1] if i + 1 < len(args) else ''}".strip())
            i += 1 if eq else 2
        elif key in _IGNORED_FLAGS:
            ignored.append(arg)
            i += 1
        else:
            raise SrunError(f"srun: unrecognized option {arg!r}")
    command = args[i:]
    if not command:
        raise SrunError("srun: no command given")
    return SrunOptions(command, label=label, ignored=ignored, **values)


@dataclass(frozen=True)
class Task:
    rank: int  # SLURM_PROCID
    local_id: int  # SLURM_LOCALID
    node_id: int  # SLURM_NODEID
    host: str


def layout(opts: SrunOptions, job_nodes: Sequence[str], job_ntasks: int | None) -> list[Task]:
    """Where each task of the step runs (block distribution)."""
    if not job_nodes:
        raise SrunError("srun: not inside a batch job (SLURM_JOB_NODELIST is not set)")
    nodes = opts.nodes or len(job_nodes)
    if nodes > len(job_nodes):
        raise SrunError(f"srun: -N {nodes}: the job has only {len(job_nodes)} node(s)")
    if opts.ntasks is not None:
        ntasks = opts.ntasks
        if opts.nodes is None and ntasks < nodes:
            nodes = ntasks  # as Slurm: fewer tasks than nodes uses fewer nodes
    elif opts.ntasks_per_node is not None:
        ntasks = opts.ntasks_per_node * nodes
    elif opts.nodes is None and job_ntasks:
        ntasks = job_ntasks
    else:
        ntasks = nodes
    if ntasks < nodes:
        raise SrunError(f"srun: {ntasks} task(s) cannot use {nodes} node(s)")
    base, extra = divmod(ntasks, nodes)
    tasks: list[Task] = []
    rank = 0
    for node_id in range(nodes):
        count = base + (1 if node_id < extra else 0)
        if opts.ntasks_per_node is not None and count > opts.ntasks_per_node:
            raise SrunError(
                f"srun: {ntasks} tasks on {nodes} node(s) exceed --ntasks-per-node={opts.ntasks_per_node}"
            )
        for local in range(count):
            tasks.append(Task(rank, local, node_id, job_nodes[node_id]))
            rank += 1
    return tasks


def task_environment(task: Task, tasks: Sequence[Task], opts: SrunOptions) -> dict[str, str]:
    """The variables srun sets for one task of the step (on top of the job's)."""
    hosts = sorted({t.host for t in tasks}, key=lambda h: next(t.node_id for t in tasks if t.host == h))
    per_node = [sum(1 for t in tasks if t.host == h) for h in hosts]
    env = {
        "SLURM_PROCID": str(task.rank),
        "SLURM_LOCALID": str(task.local_id),
        "SLURM_NODEID": str(task.node_id),
        "SLURM_NTASKS": str(len(tasks)),
        "SLURM_NPROCS": str(len(tasks)),
        "SLURM_STEP_NUM_TASKS": str(len(tasks)),
        "SLURM_STEP_NUM_NODES": str(len(hosts)),
        "SLURM_STEP_NODELIST": hostlist.compress(hosts),
        "SLURM_STEP_TASKS_PER_NODE": _grouped(per_node),
        "SLURM_STEPID": "0",
        "SLURM_STEP_ID": "0",
        "SLURMD_NODENAME": task.host,
    }
    if opts.cpus_per_task is not None:
        env["SLURM_CPUS_PER_TASK"] = str(opts.cpus_per_task)
    return env


def _grouped(counts: Sequence[int]) -> str:
    """Slurm's compressed count list: ``2(x3),1``."""
    out: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        out.append(f"{counts[i]}(x{j - i})" if j - i > 1 else str(counts[i]))
        i = j
    return ",".join(out)


def job_nodes(environ: Mapping[str, str]) -> list[str]:
    return hostlist.expand(environ.get("SLURM_JOB_NODELIST", "")) if environ.get("SLURM_JOB_NODELIST") else []


def job_ntasks(environ: Mapping[str, str]) -> int | None:
    raw = environ.get("SLURM_NTASKS", "")
    return int(raw) if raw.isdigit() else None
