"""squeue, sinfo, sacct, scontrol and scancel as commands: their options as Slurm spells them,
parsed by the real command line and run against a store holding one small cluster (two nodes,
jobs of two users in two partitions, in every state, and an array with running and pending
tasks)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from slurmclusterkit import add_array, add_job, add_node, cli, job_of

from kubehpc.api.kinds import build_registry
from kubehpc.slurm.jobs import ANN_CANCELLED, ANN_CANCELLED_TASKS
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        add_node(s, "n1", gpus=4, partitions=("gpu",))
        add_node(s, "n2", partitions=("cpu",))
        add_job(s, 1, "-J train", "-p gpu", "--gres=gpu:2", "-t 60", state="RUNNING", nodes=("n1",))
        add_job(s, 2, "-J prep", "-p cpu", user="bob")
        add_job(s, 3, "-J held", "-p cpu", "--hold", state="HELD")
        add_array(s, 10, "-J arr", "-p cpu", "--array=0-3", user="bob", running_tasks=2, node_name="n2")
        add_job(s, 20, "-J done", "-p cpu", "-A proj", state="COMPLETED")
        add_job(s, 21, "-J bad", "-p gpu", user="bob", state="FAILED", exit_code=3)
        yield s


def ids(store: Store, *argv: str) -> list[str]:
    code, out, err = cli(store, "squeue", "-h", "-o", "%i", *argv)
    assert code == 0, err
    return sorted(out.split())


ALL_UNFINISHED = ["1", "2", "3", "10_0", "10_1", "10_[2-3]"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("-u", "alice"), ["1", "3"]),
        (("--user=bob",), ["2", "10_0", "10_1", "10_[2-3]"]),
        (("-p", "gpu"), ["1"]),
        (("-p", "gpu", "-t", "all"), ["1", "21"]),
        (("-t", "PD"), ["2", "3", "10_[2-3]"]),
        (("--states=R",), ["1", "10_0", "10_1"]),
        (("-t", "CD,F"), ["20", "21"]),
        (("-j", "10_1"), ["10_1"]),
        (("-j", "10"), ["10_0", "10_1", "10_[2-3]"]),
        (("--jobs=1,2",), ["1", "2"]),
        (("-n", "prep"), ["2"]),
        (("-t", "all", "-A", "proj"), ["20"]),
        (("-u", "alice,bob"), ALL_UNFINISHED),
    ],
)
def test_squeue_chooses_jobs_by_user_partition_state_id_and_name(
    store: Store, argv: tuple[str, ...], expected: list[str]
) -> None:
    assert ids(store, *argv) == sorted(expected)


def test_squeue_format_and_long_format_choose_the_columns(store: Store) -> None:
    _, out, _ = cli(store, "squeue", "-j", "1", "-o", "%.4i|%j|%u|%T|%l|%D|%b|%R")
    assert out.splitlines() == [
        "JOBI|NAME|USER|STATE|TIME_LIMIT|NODES|TRES_PER_NODE|NODELIST(REASON)",
        "   1|train|alice|RUNNING|1:00:00|1|gres/gpu:2|n1",
    ]
    _, out, _ = cli(store, "squeue", "-h", "-t", "PD", "-O", "JobID:9,UserName:6,Reason:12")
    assert out.splitlines() == [
        "2        bob   Resources   ",
        "10_[2-3] bob   Resources   ",
        "3        alice JobHeldUser ",
    ]


def test_squeue_json_lists_the_chosen_jobs_with_slurmrestds_fields(store: Store) -> None:
    _, out, _ = cli(store, "squeue", "--json", "-u", "bob", "-t", "R")
    jobs = json.loads(out)["jobs"]
    assert [(j["job_id"], j["array_job_id"], j["array_task_id"], j["job_state"]) for j in jobs] == [
        (11, 10, 0, "RUNNING"),
        (12, 10, 1, "RUNNING"),
    ]
    assert {j["user_name"] for j in jobs} == {"bob"} and {j["nodes"] for j in jobs} == {"n2"}


def test_an_unknown_state_is_an_error(store: Store) -> None:
    code, _, err = cli(store, "squeue", "-t", "WAITING")
    assert code == 1 and 'invalid state "WAITING"' in err


def test_sinfo_shows_partitions_with_gres_and_nodes_long(store: Store) -> None:
    _, out, _ = cli(store, "sinfo", "-o", "%P %G %D %c %t %N")
    assert out.splitlines() == [
        "PARTITION GRES NODES CPUS STATE NODELIST",
        "gpu gpu:4 1 8 mix n1",
        "cpu (null) 1 8 mix n2",
    ]
    _, out, _ = cli(store, "sinfo", "-N", "-l")
    lines = out.splitlines()
    assert lines[1].split() == [
        "NODELIST",
        "NODES",
        "PARTITION",
        "STATE",
        "CPUS",
        "S:C:T",
        "MEMORY",
        "TMP_DISK",
        "WEIGHT",
        "AVAIL_FE",
        "REASON",
    ]
    assert [line.split()[:5] for line in lines[2:]] == [
        ["n1", "1", "gpu", "mixed", "8"],
        ["n2", "1", "cpu", "mixed", "8"],
    ]
    _, out, _ = cli(store, "sinfo", "-N", "-h", "-p", "cpu", "-o", "%N %P %G")
    assert out == "n2 cpu (null)\n"


def test_scontrol_shows_a_job_a_node_and_a_partition(store: Store) -> None:
    _, out, _ = cli(store, "scontrol", "show", "job", "1")
    assert out.startswith("JobId=1 JobName=train\n   UserId=alice ")
    assert "JobState=RUNNING" in out and "TimeLimit=01:00:00" in out  # scontrol's HH:MM:SS
    assert "NodeList=n1" in out and "gres/gpu=2" in out
    _, out, _ = cli(store, "scontrol", "show", "node", "n1")
    assert out.startswith("NodeName=n1 ") and "Gres=gpu:4" in out and "Partitions=gpu" in out
    _, out, _ = cli(store, "scontrol", "show", "partition", "cpu")
    assert out.startswith("PartitionName=cpu\n") and "Nodes=n2" in out
    code, _, err = cli(store, "scontrol", "show", "job", "99")
    assert code == 1 and "Invalid job id specified: 99" in err


def test_sacct_shows_finished_jobs_with_state_elapsed_and_exit_code(store: Store) -> None:
    _, out, _ = cli(
        store, "sacct", "-a", "-P", "-n", "-j", "20,21", "-o", "JobID,JobName,User,State,Elapsed,ExitCode"
    )
    assert out.splitlines() == ["20|done|alice|COMPLETED|00:01:00|0:0", "21|bad|bob|FAILED|00:01:00|3:0"]
    _, out, _ = cli(store, "sacct", "-a", "-S", "2026-01-01", "-s", "F", "-n", "-P", "-o", "JobID")
    assert out == "21\n"


def test_sacct_json_carries_the_same_jobs(store: Store) -> None:
    _, out, _ = cli(store, "sacct", "--json", "-a", "-j", "20,21")
    jobs = json.loads(out)["jobs"]
    assert [(j["job_id"], j["state"]["current"], j["exit_code"]["return_code"]) for j in jobs] == [
        (20, ["COMPLETED"], 0),
        (21, ["FAILED"], 3),
    ]


def cancelled(store: Store) -> list[int]:
    jobs = store.list("batch/v1", "Job", ListOptions(namespace="default")).items
    return sorted(
        int(j["metadata"]["labels"]["slurm.kubehpc.io/job-id"])
        for j in jobs
        if ANN_CANCELLED in (j["metadata"].get("annotations") or {})
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("2",), [2]),
        (("2", "3"), [2, 3]),
        (("2,3",), [2, 3]),
        (("10",), [10]),
        (("-u", "alice"), [1, 3]),
        (("--user=bob", "--partition=cpu"), [2, 10]),
        (("-p", "gpu"), [1]),  # 21 has finished
        (("-n", "held"), [3]),
        (("-u", "alice", "--state=PENDING"), [3]),
    ],
)
def test_scancel_cancels_jobs_by_id_user_partition_name_and_state(
    store: Store, argv: tuple[str, ...], expected: list[int]
) -> None:
    code, _, err = cli(store, "scancel", *argv)
    assert code == 0, err
    assert cancelled(store) == expected
    assert job_of(store, expected[0])["spec"]["suspend"] is True


def test_scancel_of_a_running_array_task_stops_only_that_task(store: Store) -> None:
    assert cli(store, "scancel", "10_1")[0] == 0
    assert job_of(store, 10)["metadata"]["annotations"][ANN_CANCELLED_TASKS] == "1"
    assert cancelled(store) == []
    pods = store.list(
        "v1", "Pod", ListOptions(namespace="default", label_selector="slurm.kubehpc.io/job-id=10")
    ).items
    stopping = {p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp")}
    assert stopping == {"slurm-10-1-x"} or not any(p["metadata"]["name"] == "slurm-10-1-x" for p in pods)


def test_scancel_of_running_jobs_leaves_pending_array_tasks_and_other_jobs(store: Store) -> None:
    assert cli(store, "scancel", "--state=R", "-u", "bob")[0] == 0
    assert cancelled(store) == []
    assert job_of(store, 10)["metadata"]["annotations"][ANN_CANCELLED_TASKS] == "0,1"


def test_scancel_of_pending_jobs_never_stops_running_array_tasks(store: Store) -> None:
    code, _, err = cli(store, "scancel", "-t", "PD")
    assert cancelled(store) == [2, 3]
    assert code == 1 and "pending tasks of array 10 cannot be cancelled apart from its running ones" in err
    assert ANN_CANCELLED_TASKS not in job_of(store, 10)["metadata"]["annotations"]


def test_scancel_without_a_job_or_filter_is_refused(store: Store) -> None:
    code, _, err = cli(store, "scancel")
    assert code == 1 and "No job identification provided" in err
    assert cancelled(store) == []


def test_scancel_of_an_unknown_job_says_so(store: Store) -> None:
    code, _, err = cli(store, "scancel", "77")
    assert code == 1 and "Invalid job id 77" in err


@pytest.mark.parametrize(
    ("ref", "why"), [("10_9", "Invalid job id specified"), ("99_1", "Invalid job id 99")]
)
def test_scancel_of_an_array_task_that_does_not_exist_says_so(store: Store, ref: str, why: str) -> None:
    code, _, err = cli(store, "scancel", ref)
    assert code == 1 and why in err
    assert cancelled(store) == [] and ANN_CANCELLED_TASKS not in job_of(store, 10)["metadata"]["annotations"]


def test_scancel_of_a_pending_array_task_alone_is_refused_clearly(store: Store) -> None:
    code, _, err = cli(store, "scancel", "10_3")
    assert code == 1 and "job 10_3 is pending" in err
    assert cancelled(store) == []


def test_scancel_takes_an_array_tasks_own_job_id(store: Store) -> None:
    code, _, err = cli(store, "scancel", "12")  # 10_1 runs as job 12
    assert code == 0, err
    assert job_of(store, 10)["metadata"]["annotations"][ANN_CANCELLED_TASKS] == "1"
