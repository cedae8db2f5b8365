"""--dependency and --begin: when a held job is released, and when it is cancelled."""

from __future__ import annotations

import pytest
from viewkit import T0_EPOCH, finished, pod, running, sbatch_job

from kubehpc.slurm.deps import Verdict, decide, evaluate
from kubehpc.slurm.jobs import SlurmJob, collect
from kubehpc.slurm.specs import parse_dependency

Obj = dict


def target(state: str) -> tuple[Obj, list[Obj]]:
    """Job 5 in ``state``."""
    job = sbatch_job(5, "-J target")
    if state == "PENDING":
        return job, []
    if state == "RUNNING":
        return job, running(job, ["n1"], 0)
    if state == "COMPLETED":
        return job, finished(job, "Complete", "CompletionsReached", 0, 60, 0)
    if state == "FAILED":
        return job, finished(job, "Failed", "BackoffLimitExceeded", 0, 60, 1)
    if state == "TIMEOUT":
        return job, finished(job, "Failed", "DeadlineExceeded", 0, 60, 143)
    job["metadata"].setdefault("annotations", {})["slurm.kubehpc.io/cancelled"] = "2026-12-02T12:01:00Z"
    return job, []


def verdict(dependency: str, state: str, now: float = T0_EPOCH + 3600) -> Verdict:
    tjob, tpods = target(state)
    me = sbatch_job(9, f"--dependency={dependency}")
    records = collect([tjob, me], tpods)
    mine = next(r for r in records if r.numeric_id == 9)
    return evaluate(parse_dependency(dependency), mine, records, now)


W, S, N = Verdict.WAITING, Verdict.SATISFIED, Verdict.NEVER
STATES = ("PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED")


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("afterok", (W, W, S, N, N, N)),
        ("afternotok", (W, W, N, S, S, S)),
        ("afterany", (W, W, S, S, S, S)),
        ("after", (W, S, S, S, S, S)),
        ("aftercorr", (W, W, S, N, N, N)),
    ],
)
def test_each_dependency_type_against_each_state_of_its_target(
    kind: str, expected: tuple[Verdict, ...]
) -> None:
    assert tuple(verdict(f"{kind}:5", s) for s in STATES) == expected


def test_after_with_a_delay_waits_that_long_after_the_start() -> None:
    assert verdict("after:5+10", "RUNNING", now=T0_EPOCH + 300) is W
    assert verdict("after:5+10", "RUNNING", now=T0_EPOCH + 601) is S


def test_all_terms_joined_by_comma_must_hold_and_any_joined_by_question_mark() -> None:
    assert verdict("afterok:5,afterany:5", "FAILED") is N
    assert verdict("afterok:5?afternotok:5", "FAILED") is S
    assert verdict("afterok:5?afternotok:5", "COMPLETED") is S
    assert verdict("afterok:5?afterok:5", "FAILED") is N


def test_an_unknown_target_satisfies_afterany_and_never_afterok() -> None:
    assert verdict("afterany:77", "PENDING") is S
    assert verdict("afterok:77", "PENDING") is N


def test_an_array_target_means_all_of_its_tasks() -> None:
    arr = sbatch_job(20, "--array=0-1")
    arr["status"] = {"completedIndexes": "0"}
    pods = [pod(arr, 0, "n1", "Succeeded", exit_code=0), pod(arr, 1, "n1")]
    me = sbatch_job(30, "-d afterok:20")
    records = collect([arr, me], pods)
    mine = next(r for r in records if r.numeric_id == 30)
    assert evaluate(parse_dependency("afterok:20"), mine, records, T0_EPOCH) is W
    assert evaluate(parse_dependency("afterok:20_0"), mine, records, T0_EPOCH) is S


def test_singleton_waits_for_earlier_jobs_of_the_same_name_and_user() -> None:
    first = sbatch_job(1, "-J same")
    other_user = sbatch_job(2, "-J same", user="bob")
    me = sbatch_job(3, "-J same", "-d singleton")
    records = collect([first, other_user, me], running(first, ["n1"], 0))
    mine: SlurmJob = records[-1]
    assert evaluate(parse_dependency("singleton"), mine, records, T0_EPOCH) is W
    records = collect([other_user, me], [])
    assert evaluate(parse_dependency("singleton"), records[-1], records, T0_EPOCH) is S


@pytest.mark.parametrize(
    ("state", "action"), [("COMPLETED", "release"), ("FAILED", "cancel"), ("RUNNING", None)]
)
def test_a_dependent_job_is_released_or_cancelled_or_kept(state: str, action: str | None) -> None:
    tjob, tpods = target(state)
    me = sbatch_job(9, "--dependency=afterok:5")
    assert decide(me, collect([tjob, me], tpods), T0_EPOCH + 60) == action


def test_a_user_hold_is_never_lifted_by_the_loop() -> None:
    tjob, tpods = target("COMPLETED")
    me = sbatch_job(9, "--hold", "--dependency=afterok:5")
    assert decide(me, collect([tjob, me], tpods), T0_EPOCH + 60) is None


def test_a_begin_time_releases_the_job_once_reached() -> None:
    me = sbatch_job(9, "--begin=now+1hour")
    assert decide(me, collect([me], []), T0_EPOCH + 60) is None
    assert decide(me, collect([me], []), T0_EPOCH + 3601) == "release"
