"""``kubehpc sim``: one JSON object, tables, CSV and the HTML report; bad input as one error line."""

from __future__ import annotations

import io
import json
from pathlib import Path

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
    assert "give --procs or --cluster" in err


def test_an_unknown_trace_format_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("x")
    code, _, err = sim("--trace", str(tmp_path / "t.txt"))
    assert code == 1 and err.startswith("error: ") and "unknown trace format" in err
