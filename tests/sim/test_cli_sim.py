"""``kubehpc sim``: one JSON object, tables, CSV and the HTML report; bad input as one error line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kubehpc.cli.main import main

SWF = (
    "; MaxProcs: 10\n"
    + "\n".join(
        " ".join(str(x) for x in [i, s, -1, r, n, -1, -1, n, e, -1, 1, u, 1, -1, 1, -1, -1, -1])
        for i, s, r, n, e, u in [
            (1, 0, 10, 6, 10, 1),
            (2, 0, 10, 8, 10, 2),
            (3, 0, 10, 9, 10, 1),
            (4, 0, 25, 2, 25, 2),
            (5, 0, 10, 20, 10, 1),  # larger than the machine
        ]
    )
    + "\nnot a job line\n"
)


def sim(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["sim", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_json_output_is_one_object_with_the_headline_figures(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(SWF)
    code, out, _ = sim("--trace", str(tmp_path / "t.swf"), "--policy", "easy", "--json")
    assert code == 0
    s = json.loads(out)
    assert s["jobs"] == 4
    assert s["skipped"] == 2
    assert s["skipped_by_reason"] == {"malformed line": 1, "larger than the machine": 1}
    assert s["avg_wait_s"] == (0 + 10 + 25 + 0) / 4
    assert s["max_wait_s"] == 25
    # Waits 0, 0, 10, 25: the median halves 0 and 10; p95 interpolates 95% of the way along the
    # three gaps (2.85 of them): 10 + 0.85 x 15. Responses add each job's run time.
    assert (s["wait_s"]["median"], s["wait_s"]["p95"]) == (5.0, pytest.approx(22.75))
    assert (s["response_s"]["max"], s["bsld"]["max"]) == (35.0, 3.5)
    for key in ("avg_bsld", "utilization", "sim_seconds", "backfilled_jobs", "users", "queues"):
        assert key in s


def test_procs_overrides_the_header(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(SWF)
    _, out, _ = sim("--trace", str(tmp_path / "t.swf"), "--procs", "100", "--json")
    assert json.loads(out)["jobs"] == 5


def test_several_policies_print_one_object_with_a_run_each(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(SWF)
    _, out, _ = sim(
        "--trace", str(tmp_path / "t.swf"), "--policy", "fcfs", "--policy", "conservative", "--json"
    )
    runs = json.loads(out)["runs"]
    assert [r["policy"] for r in runs] == ["fcfs", "conservative"]


def test_report_writes_an_html_page_comparing_the_policies(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(SWF)
    report = tmp_path / "report"
    code, out, _ = sim(
        "--trace", str(tmp_path / "t.swf"), "--policy", "fcfs", "--policy", "easy", "--report", str(report)
    )
    assert code == 0 and "avg wait" in out
    page = (report / "index.html").read_text()
    assert "<th>fcfs</th><th>easy</th>" in page
    assert "larger than the machine" in page
    for name in ("utilization.png", "queue.png", "wait_cdf.png", "fairness_users.png", "jobs-easy.csv"):
        assert (report / name).stat().st_size > 0


def test_csv_has_one_row_per_job(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(SWF)
    sim("--trace", str(tmp_path / "t.swf"), "--csv", str(tmp_path / "jobs.csv"))
    lines = (tmp_path / "jobs.csv").read_text().splitlines()
    assert lines[0].startswith("id,user,queue,priority,submit_s,start_s")
    assert len(lines) == 1 + 4


def test_csv_gives_each_jobs_wait_response_and_bounded_slowdown(tmp_path: Path) -> None:
    """FCFS on 10 procs: job 1 (6) runs [0, 10); job 2 (8) waits 10 and runs 10 s: response 20,
    bsld (10 + 10) / max(10, 10) = 2."""
    (tmp_path / "t.swf").write_text(SWF)
    sim("--trace", str(tmp_path / "t.swf"), "--csv", str(tmp_path / "jobs.csv"))
    header, *rows = [r.split(",") for r in (tmp_path / "jobs.csv").read_text().splitlines()]
    job2 = dict(zip(header, next(r for r in rows if r[0] == "2"), strict=True))
    assert (job2["wait_s"], job2["response_s"], job2["bsld"]) == ("10", "20", "2.0000")


def test_an_empty_trace_reports_zero_jobs(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text("; MaxProcs: 10\n")
    code, out, _ = sim("--trace", str(tmp_path / "t.swf"), "--json")
    assert code == 0
    s = json.loads(out)
    assert s["jobs"] == 0 and s["avg_wait_s"] is None


def test_a_trace_without_a_machine_size_needs_procs(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text("1 0 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    code, _, err = sim("--trace", str(tmp_path / "t.swf"))
    assert code == 1
    assert "give --procs N (processors) or --cluster FILE" in err


def test_an_unknown_trace_format_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("x")
    code, _, err = sim("--trace", str(tmp_path / "t.txt"))
    assert code == 1 and err.startswith("error: ") and "unknown trace format" in err


def _swf(rows: list[tuple[int, int, int, int, int, int]], procs: int = 10) -> str:
    """rows: (id, submit, run, procs, requested time, user)."""
    return f"; MaxProcs: {procs}\n" + "\n".join(
        " ".join(str(x) for x in [i, s, -1, r, n, -1, -1, n, e, -1, 1, u, 1, -1, 1, -1, -1, -1])
        for i, s, r, n, e, u in rows
    )


# A (6 procs) asks 100 s but runs 10; head B (8) waits for A; C (4 procs, 50 s) fits beside A.
# Planning with the requested times, C ends (50) before B's shadow time (100): C backfills and
# B waits for it until 50. Planning with the actual run times, the shadow is 10: C would delay
# B, so it waits for B (10 -> 20).
OVERESTIMATED = [(1, 0, 10, 6, 100, 1), (2, 0, 10, 8, 10, 1), (3, 0, 50, 4, 50, 1)]


def test_estimate_flag_chooses_what_the_policy_plans_with(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(_swf(OVERESTIMATED))
    by_source = {}
    for source in ("requested", "actual"):
        _, out, _ = sim(
            "--trace", str(tmp_path / "t.swf"), "--policy", "easy", "--estimate", source, "--json"
        )
        by_source[source] = json.loads(out)
    assert by_source["requested"]["estimate"] == "requested"
    assert by_source["requested"]["max_wait_s"] == 50
    assert by_source["actual"]["estimate"] == "actual"
    assert by_source["actual"]["max_wait_s"] == 20


def test_estimate_predictor_is_accepted_and_reported(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(_swf(OVERESTIMATED))
    code, out, _ = sim(
        "--trace", str(tmp_path / "t.swf"), "--policy", "easy", "--estimate", "predictor", "--json"
    )
    assert code == 0 and json.loads(out)["estimate"] == "predictor"


def test_jobs_run_past_their_limit_unless_kill_at_limit_is_given(tmp_path: Path) -> None:
    """D runs 30 s with a 20 s limit: by default its estimate is raised to 30 (counted); with
    --kill-at-limit it is ended at 20 (counted) and the makespan shrinks by 10."""
    (tmp_path / "t.swf").write_text(_swf([(1, 0, 30, 10, 20, 1)]))
    _, kept, _ = sim("--trace", str(tmp_path / "t.swf"), "--json")
    _, killed, _ = sim("--trace", str(tmp_path / "t.swf"), "--kill-at-limit", "--json")
    kept_s, killed_s = json.loads(kept), json.loads(killed)
    assert kept_s["kill_at_limit"] is False and kept_s["makespan_s"] == 30
    assert kept_s["adjusted_by_reason"] == {"requested time < run time: estimate raised to run time": 1}
    assert killed_s["kill_at_limit"] is True and killed_s["makespan_s"] == 20
    assert killed_s["adjusted_by_reason"] == {"run time > requested time: killed at the limit": 1}


def test_start_estimates_flag_reports_their_accuracy(tmp_path: Path) -> None:
    """Under FCFS, B is promised A's estimated end (100) and starts at 10: 90 s early."""
    (tmp_path / "t.swf").write_text(_swf(OVERESTIMATED[:2]))
    _, plain, _ = sim("--trace", str(tmp_path / "t.swf"), "--json")
    _, out, _ = sim("--trace", str(tmp_path / "t.swf"), "--start-estimates", "--json")
    assert json.loads(plain)["start_estimates"] is None
    assert json.loads(out)["start_estimates"]["mean_abs_error_s"] == 90


def test_cluster_flag_sizes_the_pool_from_a_cluster_config(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(_swf([(1, 0, 10, 12, 10, 1)]))
    (tmp_path / "c.yaml").write_text(
        "apiVersion: kubehpc.io/v1alpha1\nkind: ClusterConfig\nspec:\n  nodePools:\n"
        "    - {name: cpu, count: 2, cpu: '8', memory: 32Gi}\n"
    )
    _, out, _ = sim("--trace", str(tmp_path / "t.swf"), "--cluster", str(tmp_path / "c.yaml"), "--json")
    s = json.loads(out)
    assert s["resources"] == {"cpu": 16}
    assert s["jobs"] == 1 and s["skipped"] == 0


def test_a_workload_yaml_and_a_philly_csv_replay_through_the_command(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(
        "apiVersion: kubehpc.io/v1alpha1\nkind: SimWorkload\nspec:\n  jobs:\n"
        "    - {name: a, submit: 0, runtime: 10, podSets: [{count: 2, requests: {cpu: '2'}}]}\n"
        "    - {name: b, submit: 0, runtime: 10, podSets: [{requests: {cpu: '2'}}]}\n"
    )
    _, out, _ = sim("--trace", str(tmp_path / "w.yaml"), "--procs", "4", "--json")
    assert json.loads(out)["max_wait_s"] == 10
    (tmp_path / "p.csv").write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:00:00,10.0,8,80.0,vc1\n2017-10-09 07:00:00,5.0,8,40.0,vc2\n"
    )
    _, out, _ = sim("--trace", str(tmp_path / "p.csv"), "--procs", "8", "--json")
    s = json.loads(out)
    assert s["resources"] == {"nvidia.com/gpu": 8} and s["max_wait_s"] == 10


def test_a_pool_of_no_processors_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "t.swf").write_text(_swf([(1, 0, 10, 1, 10, 1)]))
    code, _, err = sim("--trace", str(tmp_path / "t.swf"), "--procs", "0")
    assert code == 1 and err.startswith("error: --procs")
