"""The table the issue asks for: every sbatch option of point 1, in each of its spellings, and
the object fields it must set. Each row is submitted twice, as ``#SBATCH`` lines and on the
command line, and must give the same objects both ways. A coverage check fails when an option
of point 1 (short or long name) has no row, so the table cannot silently shrink."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

import pytest
from slurmkit import script, submit

Obj = dict[str, Any]
ABSENT = object()

# Point 1 of the issue, as (short, long); "" where sbatch has no short form.
POINT_1 = [
    ("-J", "--job-name"),
    ("-N", "--nodes"),
    ("-n", "--ntasks"),
    ("", "--ntasks-per-node"),
    ("-c", "--cpus-per-task"),
    ("", "--mem"),
    ("", "--mem-per-cpu"),
    ("", "--mem-per-gpu"),
    ("-G", "--gpus"),
    ("", "--gpus-per-node"),
    ("", "--gpus-per-task"),
    ("", "--gres"),
    ("-t", "--time"),
    ("-p", "--partition"),
    ("-q", "--qos"),
    ("-A", "--account"),
    ("", "--exclusive"),
    ("-C", "--constraint"),
    ("-a", "--array"),
    ("-d", "--dependency"),
    ("-o", "--output"),
    ("-e", "--error"),
    ("-D", "--chdir"),
    ("", "--export"),
    ("", "--begin"),
    ("", "--nice"),
    ("-H", "--hold"),
    ("", "--wrap"),
]

G = "slurm.kubehpc.io/"
ANTI = "pod:affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution.0.topologyKey"
TERMS = "pod:affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
F = "feature.slurm.kubehpc.io/"
SUBMIT_ENV = {"HOME": "/home/alice", "FOO": "1", "BAR": "2"}


def term(*features: str) -> Obj:
    return {"matchExpressions": [{"key": F + f, "operator": "In", "values": ["true"]} for f in features]}


@dataclass(frozen=True)
class Row:
    forms: tuple[str, ...]
    """Equivalent spellings of the option under test (each one row of the table)."""
    expect: dict[str, Any]
    """Where in the objects (see ``lookup``) -> the value that must be there (ABSENT: nothing)."""
    context: tuple[str, ...] = field(default=())
    """Other options the rule needs (``--mem-per-gpu`` needs GPUs)."""


ROWS = [
    Row(
        ("-J train", "--job-name=train", "--job-name train"),
        {"env:SLURM_JOB_NAME": "train", f"ann:{G}job-name": "train"},
    ),
    Row(
        ("-N 3", "--nodes=3", "--nodes 3"),
        {
            "job:spec.completions": 3,
            "job:spec.parallelism": 3,
            "env:SLURM_NNODES": "3",
            "kinds": ["ConfigMap", "Job", "Service"],
        },
    ),
    Row(("-N 2-4", "--nodes=2-4"), {"job:spec.completions": 2, "env:SLURM_JOB_NUM_NODES": "2"}),
    Row(
        ("-n 4", "--ntasks=4", "--ntasks 4"),
        {"req:cpu": "4", "env:SLURM_NTASKS": "4", "job:spec.completions": 1},
    ),
    Row(("--ntasks-per-node=3", "--ntasks-per-node 3"), {"req:cpu": "3", "env:SLURM_NTASKS_PER_NODE": "3"}),
    Row(("--ntasks-per-node=2",), {"env:SLURM_NTASKS": "4", "env:SLURM_TASKS_PER_NODE": "2(x2)"}, ("-N 2",)),
    Row(("-c 4", "--cpus-per-task=4", "--cpus-per-task 4"), {"req:cpu": "4", "env:SLURM_CPUS_PER_TASK": "4"}),
    Row(
        ("--mem=32G", "--mem 32G"),
        {"req:memory": "32Gi", "lim:memory": "32Gi", "env:SLURM_MEM_PER_NODE": "32768"},
    ),
    Row(("--mem=1500",), {"req:memory": "1500Mi"}),
    Row(("--mem=2T",), {"req:memory": "2048Gi"}),
    Row(("--mem=512K",), {"req:memory": "1Mi"}),  # rounded up to whole MiB
    Row(("--mem=0",), {"req:memory": ABSENT, ANTI: "kubernetes.io/hostname"}),
    Row(
        ("--mem-per-cpu=1G", "--mem-per-cpu 1024M"),
        {"req:memory": "3Gi", "env:SLURM_MEM_PER_CPU": "1024"},
        ("-c 3",),
    ),
    Row(("--mem-per-gpu=10G",), {"req:memory": "20Gi", "env:SLURM_MEM_PER_GPU": "10240"}, ("--gres=gpu:2",)),
    Row(("-G 4", "--gpus=4", "--gpus 4"), {"req:nvidia.com/gpu": "2", "env:SLURM_GPUS": "4"}, ("-N 2",)),
    Row(("-G a100:2", "--gpus=a100:2"), {"req:nvidia.com/gpu": "2", f"pod:nodeSelector.{G}gpu-type": "a100"}),
    Row(
        ("--gpus-per-node=2", "--gpus-per-node 2"), {"req:nvidia.com/gpu": "2", "env:SLURM_GPUS_ON_NODE": "2"}
    ),
    Row(("--gpus-per-node=v100:2",), {"req:nvidia.com/gpu": "2", f"pod:nodeSelector.{G}gpu-type": "v100"}),
    Row(
        ("--gpus-per-task=1", "--gpus-per-task 1"),
        {"req:nvidia.com/gpu": "4", "env:SLURM_GPUS_PER_TASK": "1"},
        ("--ntasks-per-node=4",),
    ),
    Row(
        ("--gres=gpu:2", "--gres gpu:2"),
        {"req:nvidia.com/gpu": "2", "lim:nvidia.com/gpu": "2", "pod:nodeSelector": ABSENT},
    ),
    Row(("--gres=gpu",), {"req:nvidia.com/gpu": "1"}),
    Row(("--gres=gpu:a100:4",), {"req:nvidia.com/gpu": "4", "pod:nodeSelector": {f"{G}gpu-type": "a100"}}),
    Row(
        ("-t 90", "--time=90", "--time 90", "-t90"),
        {"job:spec.activeDeadlineSeconds": 5400, "ann:kubehpc.io/runtime-estimate-seconds": "5400"},
    ),
    Row(("-t 1-12:30:00", "--time=1-12:30:00"), {"job:spec.activeDeadlineSeconds": 131400}),
    Row(
        ("-t UNLIMITED", "--time=infinite"),
        {"job:spec.activeDeadlineSeconds": ABSENT, "ann:kubehpc.io/runtime-estimate-seconds": ABSENT},
    ),
    Row(
        ("-p gpu", "--partition=gpu", "--partition gpu"),
        {
            "label:kueue.x-k8s.io/queue-name": "gpu",
            f"label:{G}partition": "gpu",
            "env:SLURM_JOB_PARTITION": "gpu",
        },
    ),
    Row(
        ("-q high", "--qos=high", "--qos high"),
        {"pod:priorityClassName": "high", "env:SLURM_JOB_QOS": "high", f"ann:{G}qos": "high"},
    ),
    Row(
        ("-A proj1", "--account=proj1", "--account proj1"),
        {f"ann:{G}account": "proj1", "env:SLURM_JOB_ACCOUNT": "proj1"},
    ),
    Row(("--exclusive",), {ANTI: "kubernetes.io/hostname", f"ann:{G}exclusive": "true"}),
    Row(
        ("-C gpu", "--constraint=gpu", "--constraint gpu"),
        {TERMS: [term("gpu")], f"ann:{G}constraint": "gpu"},
    ),
    Row(("-C 'a&b'", "--constraint='a&b'"), {TERMS: [term("a", "b")]}),
    Row(("-C 'a|b'", "--constraint='a|b'"), {TERMS: [term("a"), term("b")]}),
    Row(("-C '(a|b)&c'",), {TERMS: [term("a", "c"), term("b", "c")]}),
    Row(
        ("-a 0-15:4%2", "--array=0-15:4%2", "--array 0-15:4%2"),
        {
            "job:spec.completions": 4,
            "job:spec.parallelism": 2,
            "job:spec.completionMode": "Indexed",
            "job:spec.backoffLimitPerIndex": 0,
            "env:SLURM_ARRAY_TASK_MAX": "12",
            f"ann:{G}array-throttle": "2",
        },
    ),
    Row(
        ("-d afterok:5", "--dependency=afterok:5", "--dependency afterok:5"),
        {
            "job:spec.suspend": True,
            f"ann:{G}hold": "Dependency",
            f"ann:{G}dependency": "afterok:5",
            "label:kueue.x-k8s.io/queue-name": ABSENT,
        },
        ("-p batch",),
    ),
    Row(
        ("-o out-%x-%j.txt", "--output=out-%x-%j.txt", "--output out-%x-%j.txt"),
        {"env:KUBEHPC_SLURM_OUTPUT": "out-%x-%j.txt", f"ann:{G}output": "out-%x-%j.txt"},
    ),
    Row(
        ("-e err-%A_%a.txt", "--error=err-%A_%a.txt", "--error err-%A_%a.txt"),
        {"env:KUBEHPC_SLURM_ERROR": "err-%A_%a.txt", f"ann:{G}error": "err-%A_%a.txt"},
    ),
    Row(
        ("-D /scratch/x", "--chdir=/scratch/x", "--chdir /scratch/x"),
        {"container:workingDir": "/scratch/x", "env:SLURM_SUBMIT_DIR": "/home/alice/run"},
    ),
    Row(("-D sub",), {"container:workingDir": "/home/alice/run/sub"}),
    Row(
        ("--export=NONE,FOO=x", "--export NONE,FOO=x"),
        {"env:FOO": "x", "env:HOME": ABSENT, "env:BAR": ABSENT, "env:SLURM_EXPORT_ENV": "NONE,FOO=x"},
    ),
    Row(("--export=ALL",), {"env:FOO": "1", "env:HOME": "/home/alice"}),
    Row(
        ("--begin=now+1hour", "--begin now+1hour", "--begin=13:00"),
        {"job:spec.suspend": True, f"ann:{G}hold": "BeginTime", f"ann:{G}begin": "2026-12-02T13:00:00Z"},
    ),
    Row(("--nice=10",), {f"ann:{G}nice": "10"}),
    Row(("--nice",), {f"ann:{G}nice": "100"}),
    Row(
        ("-H", "--hold"),
        {"job:spec.suspend": True, f"ann:{G}hold": "JobHeldUser", "label:kueue.x-k8s.io/queue-name": ABSENT},
        ("-p batch",),
    ),
]


def _walk(value: Any, path: str) -> Any:
    for part in path.split(".") if path else []:
        if isinstance(value, list):
            value = value[int(part)] if part.isdigit() and int(part) < len(value) else ABSENT
        elif isinstance(value, dict):
            value = value.get(part, ABSENT)
        else:
            return ABSENT
        if value is ABSENT:
            return ABSENT
    return value


def lookup(objs: list[Obj], where: str) -> Any:
    """``job:spec.x``, ``pod:...`` (the pod spec), ``container:...``, ``env:NAME``,
    ``req:RESOURCE``, ``lim:RESOURCE``, ``ann:KEY`` / ``label:KEY`` (the Job's), ``kinds``."""
    if where == "kinds":
        return [o["kind"] for o in objs]
    job = next(o for o in objs if o["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    scope, _, rest = where.partition(":")
    if scope == "env":
        env = {e["name"]: e["value"].replace("$$", "$") for e in container["env"]}
        return env.get(rest, ABSENT)
    if scope in ("req", "lim"):
        key = "requests" if scope == "req" else "limits"
        return container["resources"].get(key, {}).get(rest, ABSENT)
    if scope in ("ann", "label"):
        key = "annotations" if scope == "ann" else "labels"
        return (job["metadata"].get(key) or {}).get(rest, ABSENT)
    if scope == "pod" and rest.startswith("nodeSelector."):
        return (pod.get("nodeSelector") or {}).get(rest.removeprefix("nodeSelector."), ABSENT)
    root = {"job": job, "pod": pod, "container": container}[scope]
    return _walk(root, rest)


CASES = [pytest.param(row, form, id=form) for row in ROWS for form in row.forms]


@pytest.mark.parametrize(("row", "form"), CASES)
def test_each_option_sets_its_objects_the_same_in_the_script_and_on_the_command_line(
    row: Row, form: str
) -> None:
    in_script = submit(script(*row.context, form), env=SUBMIT_ENV)
    on_command_line = submit(script(*row.context), *shlex.split(form), env=SUBMIT_ENV)
    for where, expected in row.expect.items():
        got = lookup(in_script, where)
        assert got is expected if expected is ABSENT else got == expected, (where, got)
    assert _without_script(on_command_line) == _without_script(in_script)


def _without_script(objs: list[Obj]) -> list[Obj]:
    """The objects less the script's text (the two scripts differ by the directive line)."""
    return [o for o in objs if o["kind"] != "ConfigMap"]


def test_wrap_puts_the_command_in_a_sh_script_in_the_config_map() -> None:
    objs = submit(None, "--wrap", "echo wrapped", "-J", "w")
    data = next(o for o in objs if o["kind"] == "ConfigMap")["data"]
    assert data["script"].startswith("#!/bin/sh\n") and "echo wrapped" in data["script"]
    assert lookup(objs, "env:SLURM_JOB_NAME") == "w"


def _written(name: str) -> bool:
    """Whether some row (or the --wrap test) writes option ``name`` (``-J`` or ``--job-name``)."""
    if name == "--wrap":
        return True  # command line only: test_wrap_puts_the_command_in_a_sh_script...
    for row in ROWS:
        for form in row.forms:
            word = shlex.split(form)[0]
            if word == name or word.startswith(name + "=") or (len(name) == 2 and word.startswith(name)):
                return True
    return False


@pytest.mark.parametrize(("short", "long"), POINT_1, ids=[lg for _, lg in POINT_1])
def test_every_option_of_the_issue_has_rows_for_each_of_its_names(short: str, long: str) -> None:
    assert _written(long), long
    assert not short or _written(short), short


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15", 900),  # minutes
        ("10:30", 660),  # minutes:seconds, rounded up to whole minutes
        ("01:59:00", 7140),  # hours:minutes:seconds
        ("100:00:00", 360000),
        ("2-12", 216000),  # days-hours
        ("1-2:30", 95400),  # days-hours:minutes
        ("3-00:00:00", 259200),  # days-hours:minutes:seconds
        ("UNLIMITED", None),
        ("INFINITE", None),
        ("-1", None),
        ("0", None),
    ],
)
def test_every_time_format_sets_the_deadline_and_the_runtime_estimate(text: str, seconds: int | None) -> None:
    objs = submit(script(f"--time={text}"))
    expected = ABSENT if seconds is None else seconds
    assert lookup(objs, "job:spec.activeDeadlineSeconds") == expected
    estimate = lookup(objs, "ann:kubehpc.io/runtime-estimate-seconds")
    assert estimate == (ABSENT if seconds is None else str(seconds))
