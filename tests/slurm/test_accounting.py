"""Slurm accounting (sacct -P / --json) -> the simulator's workload file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from viewkit import finished, sbatch_job

from kubehpc.cli.main import main
from kubehpc.sim.traces.workload import parse_workload
from kubehpc.slurm.accounting import AccountingError, convert_sacct
from kubehpc.slurm.jobs import collect
from kubehpc.slurm.mapping import parse_mapping
from kubehpc.slurm.views import sacct_json

SACCT_P = """\
JobID|Submit|Start|Elapsed|Timelimit|Partition|User|NNodes|AllocCPUS|AllocTRES|State
100|2026-11-30T10:00:00|2026-11-30T10:00:05|01:00:00|02:00:00|gpu|alice|2|32|billing=32,cpu=32,gres/gpu=16,mem=256G,node=2|COMPLETED
100.batch|2026-11-30T10:00:05|2026-11-30T10:00:05|01:00:00||||1|16|cpu=16,mem=128G,node=1|COMPLETED
101_3|2026-11-30T10:10:00|2026-11-30T10:11:00|00:00:30|UNLIMITED|batch|bob|1|1|cpu=1,mem=4000M,node=1|FAILED
102|2026-11-30T10:20:00|Unknown|00:00:00|1-00:00:00|batch|bob|1|0||CANCELLED
"""


def test_sacct_parsable_output_becomes_a_valid_workload() -> None:
    workload, report = convert_sacct(SACCT_P, "sacct.txt")
    parsed = parse_workload(workload, "converted")
    jobs = {j.name: j for j in parsed.spec.jobs}
    assert sorted(jobs) == ["job-100", "job-101_3"]
    big = jobs["job-100"]
    assert (big.submit, big.runtime, big.requested_time, big.queue, big.user) == (
        0,
        3600,
        7200,
        "gpu",
        "alice",
    )
    assert big.pod_sets[0].count == 2
    assert big.pod_sets[0].requests == {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": 8}
    small = jobs["job-101_3"]
    assert (small.submit, small.runtime, small.requested_time) == (600, 30, None)
    assert report == ["1 jobs never ran (no start or no elapsed time) and are left out"]


def test_partitions_map_to_queues_through_the_mapping() -> None:
    mapping = parse_mapping({"partitions": {"gpu": {"localQueue": "lq-gpu"}}}, "m")
    workload, _ = convert_sacct(SACCT_P, "sacct.txt", mapping)
    assert workload["spec"]["jobs"][0]["queue"] == "lq-gpu"


def test_a_header_without_the_needed_fields_is_an_error_naming_them() -> None:
    with pytest.raises(AccountingError, match="line 1: the header lacks Submit, Elapsed"):
        convert_sacct("JobID|State|NNodes\n1|COMPLETED|1\n", "sacct.txt")


def test_a_bad_elapsed_names_its_line() -> None:
    with pytest.raises(AccountingError, match="line 2: bad Elapsed"):
        convert_sacct("JobID|Submit|Elapsed|NNodes\n1|2026-01-01T00:00:00|soon|1\n", "sacct.txt")


def test_kubehpcs_own_sacct_json_converts_back_to_a_workload() -> None:
    job = sbatch_job(7, "-N 2", "-c 4", "--gres=gpu:2", "-t 30", "-p batch")
    pods = finished(job, "Complete", "CompletionsReached", 0, 90, 0)
    data = sacct_json(collect([job], pods), 0)
    workload, _ = convert_sacct(json.dumps(data), "sacct.json")
    [j] = parse_workload(workload).spec.jobs
    assert (j.runtime, j.requested_time, j.queue, j.pod_sets[0].count) == (90, 1800, "batch", 2)
    assert j.pod_sets[0].requests == {"cpu": "4", "nvidia.com/gpu": 2}


def test_the_import_sacct_command_writes_the_workload(tmp_path: Path) -> None:
    src = tmp_path / "sacct.txt"
    src.write_text(SACCT_P)
    out, err = io.StringIO(), io.StringIO()
    code = main(["import", "sacct", str(src), "--workload", str(tmp_path / "w.yaml")], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().strip() == f"Wrote 2 jobs to {tmp_path / 'w.yaml'}"
    parse_workload(yaml.safe_load((tmp_path / "w.yaml").read_text()))
