"""Choosing jobs as squeue / sacct / scancel options do, and scontrol's host list helpers."""

from __future__ import annotations

import io

import pytest
from viewkit import pod, running, sbatch_job

from kubehpc.cli.main import main
from kubehpc.slurm.jobs import collect
from kubehpc.slurm.select import Filter, JobRef, SelectError, parse_job_ids, parse_states


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("PD", {"PENDING"}),
        ("pd,r", {"PENDING", "RUNNING"}),
        ("running,COMPLETED", {"RUNNING", "COMPLETED"}),
        ("CA", {"CANCELLED"}),
        ("canceled", {"CANCELLED"}),
        ("all", None),
    ],
)
def test_states_are_read_in_short_and_long_forms(text: str, states: set[str] | None) -> None:
    assert parse_states(text) == states


def test_an_unknown_state_is_an_error_listing_the_known_ones() -> None:
    with pytest.raises(SelectError, match='invalid state "XX"; use PENDING \\(PD\\)'):
        parse_states("XX")


@pytest.mark.parametrize(
    ("texts", "refs"),
    [
        (["12"], [JobRef(12)]),
        (["12,13"], [JobRef(12), JobRef(13)]),
        (["12_3"], [JobRef(12, 3)]),
        (["12_[1-3,5]"], [JobRef(12, 1), JobRef(12, 2), JobRef(12, 3), JobRef(12, 5)]),
        (["12_[1-2],14"], [JobRef(12, 1), JobRef(12, 2), JobRef(14)]),
    ],
)
def test_job_ids_include_array_tasks_and_ranges(texts: list[str], refs: list[JobRef]) -> None:
    assert parse_job_ids(texts) == refs


def test_a_bad_job_id_is_an_error_naming_it() -> None:
    with pytest.raises(SelectError, match='invalid job id "abc"'):
        parse_job_ids(["abc"])


def test_filters_match_user_partition_state_name_and_ids_together() -> None:
    a = sbatch_job(1, "-J a", "-p gpu", user="alice")
    b = sbatch_job(2, "-J b", "-p cpu", user="bob")
    records = collect([a, b], running(a, ["n1"], 0))
    pick = lambda f: [r.job_id for r in records if f.matches(r)]  # noqa: E731
    assert pick(Filter(users={"alice"})) == ["1"]
    assert pick(Filter(partitions={"cpu"})) == ["2"]
    assert pick(Filter(states={"RUNNING"})) == ["1"]
    assert pick(Filter(names={"b"}, users={"alice"})) == []
    assert pick(Filter(refs=[JobRef(2)])) == ["2"]


def test_an_array_task_id_picks_that_task_and_the_array_id_picks_all() -> None:
    arr = sbatch_job(10, "--array=1-3")
    arr["status"] = {"startTime": "2026-12-02T12:00:00Z"}
    records = collect([arr], [pod(arr, 0, "n1"), pod(arr, 1, "n1")])
    assert [r.job_id for r in records] == ["10_3", "10_1", "10_2"]
    assert [r.job_id for r in records if Filter(refs=[JobRef(10, 2)]).matches(r)] == ["10_2"]
    assert [r.job_id for r in records if Filter(refs=[JobRef(10)]).matches(r)] == ["10_3", "10_1", "10_2"]


@pytest.mark.parametrize(
    ("args", "out"),
    [
        (["scontrol", "show", "hostnames", "gpu[01-03]"], "gpu01\ngpu02\ngpu03\n"),
        (["scontrol", "show", "hostlist", "n1,n2,n3,n7"], "n[1-3,7]\n"),
    ],
)
def test_scontrol_host_list_helpers_need_no_server(args: list[str], out: str) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    assert main(args, stdout=stdout, stderr=stderr) == 0, stderr.getvalue()
    assert stdout.getvalue() == out
