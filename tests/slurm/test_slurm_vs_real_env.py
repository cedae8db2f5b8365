"""The same sbatch scripts, submitted to a real Slurm 22.05 and to kubehpc, write the same output
files and see the same Slurm environment.

The real Slurm is four emulated nodes started by scripts/slurm_peer.py; kubehpc runs embedded on
the cluster ``kubehpc import slurm`` makes of that very slurm.conf (so node sizes, GPUs, the
partition and the cluster name agree). Every SLURM_* variable either has the same value on both
sides or is listed below with the reason it differs; a variable that appears on one side only
must be listed too. So a new difference — a variable kubehpc stops setting, a value it gets
wrong — fails this test.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from slurmpeerkit import Kubehpc, SlurmPeer, slurm_env, wait_for_files

from kubehpc.slurm import hostlist

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

END = "END-OF-JOB"
BODY = f"env | grep ^SLURM_ | sort\necho {END}\n"
SCRIPTS = {
    # Several nodes, tasks per node, CPUs per task; output pattern with %x and %j.
    "multi.sh": "#SBATCH -J multi\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\n#SBATCH -c 2\n"
    "#SBATCH -o out-%x-%j.txt\n",
    # An array with a step and a throttle; %A_%a names one file per task.
    "array.sh": "#SBATCH -J arr\n#SBATCH --array=1-5:2%2\n#SBATCH -o arr-%A_%a.out\n",
    # GPUs by --gres, tasks without nodes, %u in the output and a separate error file.
    "gpu.sh": "#SBATCH --job-name=gpujob\n#SBATCH --gres=gpu:2\n#SBATCH -n 3\n"
    "#SBATCH --output=%x.%u.log\n#SBATCH --error=%x-%j.err\n",
}
WRAP = ("-J", "wrapped", "-n", "2", "-t", "5", "--wrap", BODY.replace("\n", "; ").rstrip("; "))

# Variables only the real Slurm sets, and why kubehpc does not.
ONLY_SLURM = {
    "SLURM_CONF": "the path of slurm.conf: kubehpc has no slurm.conf",
    "SLURM_WORKING_CLUSTER": "slurmctld's address and protocol version",
    "SLURM_NODE_ALIASES": "cloud-node aliases, '(null)' without cloud nodes",
}
# Variables only kubehpc sets.
ONLY_KUBEHPC = {
    "SLURM_JOB_START_TIME": "added in Slurm 23.02; this real Slurm is 22.05",
    "SLURM_JOB_END_TIME": "likewise 23.02 (start + time limit)",
}
# Variables whose values legitimately differ, and what is checked instead.
DIFFERENT_VALUES = {
    "SLURM_JOB_ID": "each side numbers jobs itself: must equal that side's own job id",
    "SLURM_JOBID": "the same id, old name",
    "SLURM_ARRAY_JOB_ID": "the array's id on that side",
    "SLURM_TASK_PID": "a process id",
    "SLURM_SUBMIT_DIR": "each side's own submit directory",
    "SLURM_JOB_NODELIST": "host names: Slurm's nodes, kubehpc's pods (hostlist syntax checked)",
    "SLURM_NODELIST": "the same list, old name",
    "SLURM_TOPOLOGY_ADDR": "the first host's name",
    "SLURM_SUBMIT_HOST": "the submitting host's name",
}
HOSTLIST = re.compile(r"^[a-z0-9-]+(\[[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\])?$")


@dataclass
class Side:
    name: str
    workdir: Path
    ids: dict[str, str]


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    root = tmp_path_factory.mktemp("side-by-side")
    peer = SlurmPeer.start(root / "peer", "--nodes", "4", "--cpus", "4", "--gpus", "2", "--mem", "8192")
    kh: Kubehpc | None = None
    try:
        kh = Kubehpc.from_slurm(root / "kubehpc-home", peer, root)
        real = Side("slurm", root / "slurm", {})
        ours = Side("kubehpc", root / "kubehpc", {})
        for side, submit in ((real, peer.sbatch), (ours, kh.sbatch)):
            side.workdir.mkdir()
            for name, directives in SCRIPTS.items():
                (side.workdir / name).write_text(f"#!/bin/bash\n{directives}{BODY}")
                side.ids[name] = submit(name, cwd=side.workdir)
            side.ids["wrap"] = submit(*WRAP, cwd=side.workdir)
        for side in (real, ours):
            wait_for_files(
                [side.workdir / f for f in expected_files(side).values()], lambda t: END in t, timeout=60
            )
        yield real, ours
    finally:
        if kh is not None:
            kh.run("scancel", "-u", getpass.getuser())
            kh.stop()
        peer.stop()


def expected_files(side: Side) -> dict[str, str]:
    """Output file of each job (and array task), named by sbatch's patterns on that side."""
    ids, user = side.ids, getpass.getuser()
    files = {
        "multi": f"out-multi-{ids['multi.sh']}.txt",
        "gpu": f"gpujob.{user}.log",
        "wrap": f"slurm-{ids['wrap']}.out",
    }
    files.update({f"array-{t}": f"arr-{ids['array.sh']}_{t}.out" for t in (1, 3, 5)})
    return files


def envs(side: Side) -> dict[str, dict[str, str]]:
    return {job: slurm_env((side.workdir / f).read_text()) for job, f in expected_files(side).items()}


def test_both_write_the_output_files_sbatch_patterns_name(sides: tuple[Side, Side]) -> None:
    for side in sides:
        present = {p.name for p in side.workdir.iterdir() if not p.name.endswith(".sh")}
        wanted = set(expected_files(side).values()) | {f"gpujob-{side.ids['gpu.sh']}.err"}
        assert present == wanted, side.name


def test_the_same_variables_are_set_apart_from_the_listed_differences(sides: tuple[Side, Side]) -> None:
    real, ours = (envs(s) for s in sides)
    for job in real:
        only_real = set(real[job]) - set(ours[job])
        only_ours = set(ours[job]) - set(real[job])
        assert only_real <= set(ONLY_SLURM), (job, sorted(only_real - set(ONLY_SLURM)))
        assert only_ours <= set(ONLY_KUBEHPC), (job, sorted(only_ours - set(ONLY_KUBEHPC)))


def test_shared_variables_have_the_same_values(sides: tuple[Side, Side]) -> None:
    real, ours = (envs(s) for s in sides)
    for job in real:
        shared = (set(real[job]) & set(ours[job])) - set(DIFFERENT_VALUES)
        differ = {k: (real[job][k], ours[job][k]) for k in sorted(shared) if real[job][k] != ours[job][k]}
        assert not differ, (job, differ)
    # The comparison means something only if the jobs set what the scripts asked for.
    assert ours["multi"]["SLURM_NNODES"] == "2" and ours["multi"]["SLURM_NTASKS"] == "4"
    assert ours["multi"]["SLURM_CPUS_PER_TASK"] == "2" and ours["multi"]["SLURM_JOB_NAME"] == "multi"
    assert ours["gpu"]["SLURM_GPUS_ON_NODE"] == "2" and ours["gpu"]["SLURM_NTASKS"] == "3"
    assert ours["array-3"]["SLURM_ARRAY_TASK_ID"] == "3"
    assert (
        ours["array-3"]["SLURM_ARRAY_TASK_COUNT"] == "3" and ours["array-3"]["SLURM_ARRAY_TASK_STEP"] == "2"
    )


def test_ids_dirs_and_node_lists_are_each_sides_own_and_well_formed(sides: tuple[Side, Side]) -> None:
    for side in sides:
        env = envs(side)
        assert env["multi"]["SLURM_JOB_ID"] == side.ids["multi.sh"]
        assert env["wrap"]["SLURM_JOBID"] == side.ids["wrap"]
        assert {env[f"array-{t}"]["SLURM_ARRAY_JOB_ID"] for t in (1, 3, 5)} == {side.ids["array.sh"]}
        assert len({env[f"array-{t}"]["SLURM_JOB_ID"] for t in (1, 3, 5)}) == 3
        for job, values in env.items():
            assert values["SLURM_SUBMIT_DIR"] == str(side.workdir), (side.name, job)
            nodelist = values["SLURM_JOB_NODELIST"]
            assert HOSTLIST.match(nodelist), (side.name, job, nodelist)
            hosts = hostlist.expand(nodelist)
            assert len(hosts) == int(values["SLURM_NNODES"]), (side.name, job, nodelist)
            assert values["SLURM_NODELIST"] == nodelist
            assert values["SLURM_TOPOLOGY_ADDR"] == hosts[0]
