"""squeue, sacct, sinfo and scontrol: Slurm's formats from Job, Pod and Node objects, compared
with Slurm's own output in shared/samples/slurm-output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from viewkit import T0_EPOCH, busy_pod, finished, node, pod, running, sbatch_job

from kubehpc.slurm.columns import FormatError
from kubehpc.slurm.jobs import collect
from kubehpc.slurm.mapping import parse_mapping
from kubehpc.slurm.nodes import SINFO_NODES, node_records, scontrol_node, scontrol_partition, sinfo_text
from kubehpc.slurm.views import sacct_json, sacct_text, scontrol_job, squeue_json, squeue_text

NOW = T0_EPOCH + 24 * 60 + 19


def sample(shared_dir: Path, name: str) -> str:
    text = (shared_dir / "samples" / "slurm-output" / name).read_text()
    return "".join(line + "\n" for line in text.splitlines()[1:])  # drop the "adev0: cmd" prompt


def quickstart_queue() -> tuple[list[dict], list[dict]]:
    chem = sbatch_job(65646, "-J chem", "-p batch", "-N 2", user="mike")
    bio = sbatch_job(65647, "-J bio", "-p batch", user="joan")
    math = sbatch_job(65648, "-J math", "-p batch", "-N 6", user="phil")
    pods = running(chem, ["adev7", "adev8"], 0) + running(bio, ["adev14"], 24 * 60 + 10)
    pods += [pod(math, i, None, phase="Pending") for i in range(6)]
    return [chem, bio, math], pods


def test_squeue_reproduces_the_quickstart_sample_with_its_format(shared_dir: Path) -> None:
    # The quickstart page shows narrower columns than today's default; this is its format.
    jobs, pods = quickstart_queue()
    text = squeue_text(collect(jobs, pods), NOW, fmt="%.5i %.9P %.5j %.5u %.2t %.5M %.5D %R")
    assert text == sample(shared_dir, "schedmd-docs-squeue.txt")


def test_squeue_default_columns_are_slurms() -> None:
    jobs, pods = quickstart_queue()
    lines = squeue_text(collect(jobs, pods), NOW).splitlines()
    assert lines[0] == "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"
    assert lines[1] == "             65646     batch     chem     mike  R      24:19      2 adev[7-8]"
    assert lines[3] == "             65648     batch     math     phil PD       0:00      6 (Resources)"


def test_squeue_cuts_values_to_the_column_width() -> None:
    job = sbatch_job(1, "-J a-very-long-name")
    assert squeue_text(collect([job], []), NOW, fmt="%.8j", header=False) == "a-very-l\n"


def test_squeue_long_format_names_fields() -> None:
    job = sbatch_job(7, "-J x", "-t 30")
    text = squeue_text(collect([job], []), NOW, long_format="JobID:.6,State:10,TimeLimit")
    assert text.splitlines() == [
        " JOBIDSTATE     TIME_LIMIT          ",
        "     7PENDING   30:00               ",
    ]


def test_an_unknown_format_field_is_an_error_naming_it() -> None:
    with pytest.raises(FormatError, match='"%W"'):
        squeue_text([], NOW, fmt="%i %W")


@pytest.mark.parametrize(
    ("directives", "reason"),
    [(("--hold",), "JobHeldUser"), (("-d afterok:5",), "Dependency"), (("--begin=now+1hour",), "BeginTime")],
)
def test_held_jobs_show_slurms_pending_reason(directives: tuple[str, ...], reason: str) -> None:
    [rec] = collect([sbatch_job(9, *directives)], [])
    assert (rec.state, rec.reason, rec.nodelist_or_reason) == ("PENDING", reason, f"({reason})")


def test_a_suspended_job_waiting_for_its_queue_is_pending_on_priority() -> None:
    job = sbatch_job(9, "-p batch")
    job["spec"]["suspend"] = True
    assert collect([job], [])[0].reason == "Priority"


def test_a_pending_array_is_one_row_with_its_pending_tasks_and_throttle() -> None:
    job = sbatch_job(20, "--array=0-7%2")
    pods = [pod(job, 0, "n1", started=0), pod(job, 1, "n2", started=0)]
    job["status"] = {"startTime": "2026-12-02T12:00:00Z"}
    ids = [r.job_id for r in collect([job], pods)]
    assert ids == ["20_[2-7%2]", "20_0", "20_1"]


def test_array_tasks_have_their_own_job_ids_and_states() -> None:
    job = sbatch_job(30, "--array=1,3,5")
    job["status"] = {"completedIndexes": "0", "failedIndexes": "1", "startTime": "2026-12-02T12:00:00Z"}
    pods = [
        pod(job, 0, "n1", "Succeeded", exit_code=0),
        pod(job, 1, "n1", "Failed", exit_code=2),
        pod(job, 2, "n2"),
    ]
    recs = {r.job_id: r for r in collect([job], pods)}
    assert (recs["30_1"].state, recs["30_3"].state, recs["30_5"].state) == ("COMPLETED", "FAILED", "RUNNING")
    assert (recs["30_1"].numeric_id, recs["30_3"].numeric_id, recs["30_5"].numeric_id) == (31, 32, 30)
    assert recs["30_3"].exit_code == 2


@pytest.mark.parametrize(
    ("condition", "reason", "exit_code", "state", "code"),
    [
        ("Complete", "CompletionsReached", 0, "COMPLETED", "0:0"),
        ("Failed", "BackoffLimitExceeded", 3, "FAILED", "3:0"),
        ("Failed", "DeadlineExceeded", 143, "TIMEOUT", "0:15"),
    ],
)
def test_sacct_states_and_exit_codes_follow_the_job(
    condition: str, reason: str, exit_code: int, state: str, code: str
) -> None:
    job = sbatch_job(40, "-J done", "-p batch", "-A proj", "-c 2")
    pods = finished(job, condition, reason, 0, 90, exit_code)
    text = sacct_text(collect([job], pods), NOW, tz=0)
    assert text.splitlines() == [
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode ",
        "------------ ---------- ---------- ---------- ---------- ---------- -------- ",
        f"40                 done      batch       proj          2 {state:>10} {code:>8} ",
    ]


def test_sacct_parsable_and_chosen_fields() -> None:
    job = sbatch_job(41, "-J x" * 1, "-p batch")
    pods = finished(job, "Complete", "CompletionsReached", 0, 75, 0)
    text = sacct_text(collect([job], pods), NOW, fmt="JobID,State,Elapsed,Start", parsable="P", tz=0)
    assert text.splitlines() == ["JobID|State|Elapsed|Start", "41|COMPLETED|00:01:15|2026-12-02T12:00:00"]
    assert (
        sacct_text(collect([job], pods), NOW, fmt="JobID,State", parsable="p").splitlines()[1]
        == "41|COMPLETED|"
    )


def test_sacct_marks_a_cut_value_with_a_plus() -> None:
    job = sbatch_job(42, "-J averyverylongname")
    assert "averyvery+" in sacct_text(collect([job], []), NOW, header=False)


def test_sacct_json_carries_state_exit_code_and_times() -> None:
    job = sbatch_job(43, "-J j")
    rec = sacct_json(collect([job], finished(job, "Failed", "BackoffLimitExceeded", 0, 30, 7)), NOW)["jobs"][
        0
    ]
    assert rec["state"]["current"] == ["FAILED"]
    assert rec["exit_code"]["return_code"] == 7
    assert rec["time"]["elapsed"] == 30


def test_squeue_json_uses_the_field_names_and_types_of_slurmrestd(shared_dir: Path) -> None:
    sample_jobs = json.loads((shared_dir / "samples" / "slurm-output" / "rivos-squeue.json").read_text())[
        "jobs"
    ]
    jobs, pods = quickstart_queue()
    ours = squeue_json(collect(jobs, pods), NOW)["jobs"]
    for key, value in ours[0].items():
        assert key in sample_jobs[0], key
        theirs = sample_jobs[0][key]
        if value is not None and theirs is not None:
            assert type(value) is type(theirs), key
    assert [j["job_state"] for j in ours] == ["RUNNING", "RUNNING", "PENDING"]
    assert ours[2]["state_reason"] == "Resources"


def quickstart_nodes() -> list[dict]:
    down = {1, 2, 6, 13, 15}
    nodes = [
        node(f"adev{i}", ready=i not in down, partitions=("debug",) if i <= 5 else ("batch",))
        for i in range(1, 16)
    ]
    return nodes


def test_sinfo_reproduces_the_quickstart_sample_with_its_format(shared_dir: Path) -> None:
    # The quickstart page predates today's default (%.6D); its NODES column is %.5D.
    mapping = parse_mapping(
        {"defaultPartition": "debug", "partitions": {"debug": {"maxTime": 30}, "batch": {"maxTime": 30}}}, "m"
    )
    pods = [busy_pod(f"adev{i}", 8) for i in (7, 8, 14)]
    records = node_records(quickstart_nodes(), pods, mapping)
    text = sinfo_text(records, mapping, fmt="%#P %.5a %.10l %.5D %.6t %N")
    assert text == sample(shared_dir, "schedmd-docs-sinfo.txt")
    assert sinfo_text(records, mapping).splitlines()[0] == "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST"


def test_sinfo_node_states_from_nodes_and_pods() -> None:
    mapping = parse_mapping({}, "m")
    nodes = [node("n1"), node("n2"), node("n3"), node("n4", cordoned=True), node("n5", ready=False)]
    recs = node_records(nodes, [busy_pod("n2", 2), busy_pod("n3", 8)], mapping)
    assert [r.state for r in recs] == ["idle", "mix", "alloc", "drain", "down*"]
    assert sinfo_text(recs, mapping, node_oriented=True, fmt="%N %t %P", header=False).splitlines() == [
        "n1 idle default*",
        "n2 mix default*",
        "n3 alloc default*",
        "n4 drain default*",
        "n5 down* default*",
    ]


def test_scontrol_show_job_node_and_partition_use_key_value_lines() -> None:
    jobs, pods = quickstart_queue()
    text = scontrol_job(collect(jobs, pods)[0], NOW, tz=0)
    assert text.startswith("JobId=65646 JobName=chem\n   UserId=mike ")
    assert "   JobState=RUNNING Reason=None" in text and "NodeList=adev[7-8]" in text
    mapping = parse_mapping({"defaultPartition": "gpu", "partitions": {"gpu": {"maxTime": 60}}}, "m")
    recs = node_records([node("g1", gpus=4, partitions=("gpu",))], [], mapping)
    assert "Gres=gpu:4" in scontrol_node(recs[0])
    part = scontrol_partition("gpu", recs, mapping)
    assert part.startswith("PartitionName=gpu\n") and "Default=YES" in part and "MaxTime=01:00:00" in part


# Captured from real Slurm 22.05 (shared/tools/slurm-peer, 2 nodes) with the same jobs: a
# running job named longjobname_here (10), a held job (11), an array 0-7%2 (13) with two tasks
# running; and the two nodes, one partly used.
SLURM_SQUEUE = """\
             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
        13_[2-7%2]       gpu      arr     root PD       0:00      1 (JobArrayTaskLimit)
                11       gpu     held     root PD       0:00      1 (JobHeldUser)
                10       gpu longjobn     root  R       0:03      1 gpu0001
              13_0       gpu      arr     root  R       0:03      1 gpu0001
              13_1       gpu      arr     root  R       0:03      1 gpu0001
"""
SLURM_SINFO = """\
PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up   infinite      1    mix gpu0001
gpu*         up   infinite      1   idle gpu0002
"""
SLURM_SINFO_N = (  # sinfo -N pads its last column: trailing spaces are part of the output
    "NODELIST   NODES PARTITION STATE \n"
    "gpu0001        1      gpu* mix   \n"
    "gpu0002        1      gpu* idle  \n"
)


def test_squeue_matches_real_slurm_for_running_held_and_throttled_array_jobs() -> None:
    from kubehpc.slurm.views import squeue_order

    long = sbatch_job(10, "-J longjobname_here", "-p gpu", user="root")
    held = sbatch_job(11, "-J held", "-p gpu", "--hold", user="root")
    arr = sbatch_job(13, "-J arr", "-p gpu", "--array=0-7%2", user="root")
    pods = [*running(long, ["gpu0001"], 0), pod(arr, 0, "gpu0001"), pod(arr, 1, "gpu0001")]
    arr["status"] = {"startTime": "2026-12-02T12:00:00Z", "active": 2}
    records = squeue_order(collect([long, held, arr], pods))
    assert squeue_text(records, T0_EPOCH + 3) == SLURM_SQUEUE


def test_sinfo_matches_real_slurm_by_partition_and_by_node() -> None:
    mapping = parse_mapping({"defaultPartition": "gpu"}, "m")
    nodes = [node("gpu0001", partitions=("gpu",)), node("gpu0002", partitions=("gpu",))]
    records = node_records(nodes, [busy_pod("gpu0001", 1)], mapping)
    assert sinfo_text(records, mapping) == SLURM_SINFO
    assert sinfo_text(records, mapping, SINFO_NODES, node_oriented=True) == SLURM_SINFO_N


def test_an_array_task_stopped_by_scancel_is_cancelled_not_failed() -> None:
    job = sbatch_job(30, "--array=1,3,5")
    job["metadata"]["annotations"]["slurm.kubehpc.io/cancelled-tasks"] = "3"
    job["status"] = {"failedIndexes": "1", "startTime": "2026-12-02T12:00:00Z"}
    pods = [pod(job, 0, "n1"), pod(job, 1, "n1", "Failed", exit_code=137), pod(job, 2, "n2")]
    states = {r.job_id: r.state for r in collect([job], pods)}
    assert states == {"30_1": "RUNNING", "30_3": "CANCELLED", "30_5": "RUNNING"}
