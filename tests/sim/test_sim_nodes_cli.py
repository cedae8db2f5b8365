"""``kubehpc sim --placement nodes`` end to end, on the example files under examples/sim/."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from kubehpc.cli.main import main
from kubehpc.sim.nodes import NEVER_FITS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sim"
WORKLOAD = str(EXAMPLES / "gang-workload.yaml")
CLUSTER = str(EXAMPLES / "racks-cluster.yaml")


def sim(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["sim", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_json_of_both_node_policies_on_the_example(tmp_path: Path) -> None:
    # The example's header works the schedule out: rack-gang waits for a whole rack until 600
    # under both; "single" waits behind it under fcfs (580 s) and starts at once under first-fit.
    code, out, _ = sim(
        "--trace", WORKLOAD, "--cluster", CLUSTER, "--placement", "nodes",
        "--policy", "fcfs", "--policy", "first-fit", "--json",
    )  # fmt: skip
    assert code == 0
    fcfs, first_fit = json.loads(out)["runs"]
    for run in (fcfs, first_fit):
        assert run["placement"] == "nodes"
        assert run["jobs"] == 4
        assert run["skipped_by_reason"] == {NEVER_FITS: 1}
        assert run["resources"]["nvidia.com/gpu"] == 32
    assert (fcfs["policy"], first_fit["policy"]) == ("fcfs", "first-fit")
    assert fcfs["avg_wait_s"] == (0 + 0 + 590 + 580) / 4
    assert first_fit["avg_wait_s"] == (0 + 0 + 590 + 0) / 4
    assert (fcfs["backfilled_jobs"], first_fit["backfilled_jobs"]) == (0, 1)


def test_the_pool_replay_of_the_same_files_sees_no_nodes(tmp_path: Path) -> None:
    code, out, _ = sim("--trace", WORKLOAD, "--cluster", CLUSTER, "--json")
    assert code == 0
    pool = json.loads(out)
    assert pool["placement"] == "pool"
    assert pool["jobs"] == 5  # three-nodes fits the pool's 32 GPUs
    assert pool["avg_wait_s"] == (0 + 0 + 0 + 0 + 3580) / 5


def test_csv_has_each_jobs_node_count_and_domains(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    code, _, _ = sim("--trace", WORKLOAD, "--cluster", CLUSTER, "--placement", "nodes", "--csv", str(path))
    assert code == 0
    rows = list(csv.DictReader(path.open()))
    gang = next(r for r in rows if r["id"] == "3")
    # Four workers on the two nodes of one rack, the launcher on a node of the other.
    assert (gang["start_s"], gang["nodes"]) == ("600", "3")
    assert gang["domains"] in ("workers=rack-1", "workers=rack-2")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "easy"], "--policy easy: not modelled with --placement nodes"),
        (["--queues", WORKLOAD], "--queues is not modelled on nodes"),
        (["--start-estimates"], "--start-estimates is not modelled"),
    ],
)
def test_what_the_node_replay_does_not_model_is_a_one_line_error(extra: list[str], message: str) -> None:
    code, out, err = sim("--trace", WORKLOAD, "--cluster", CLUSTER, "--placement", "nodes", *extra)
    assert code != 0 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_first_fit_needs_the_node_replay_and_the_node_replay_needs_a_cluster() -> None:
    code, _, err = sim("--trace", WORKLOAD, "--cluster", CLUSTER, "--policy", "first-fit")
    assert code != 0 and "--policy first-fit: needs --placement nodes" in err
    code, _, err = sim("--trace", WORKLOAD, "--procs", "8", "--placement", "nodes")
    assert code != 0 and "give the nodes with --cluster FILE" in err


def test_a_trace_without_pod_sets_is_refused_on_nodes(tmp_path: Path) -> None:
    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 4\n1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    code, _, err = sim("--trace", str(swf), "--cluster", CLUSTER, "--placement", "nodes")
    assert code != 0 and "needs a workload YAML (kind: SimWorkload)" in err


def test_topology_file_replaces_the_cluster_configs_levels(tmp_path: Path) -> None:
    # A Topology of blocks and hosts only: the example's rack requests name no level of it.
    path = tmp_path / "topology.yaml"
    path.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata: {name: t}\n"
        "spec:\n  levels:\n  - nodeLabel: topology.kubehpc.io/block\n  - nodeLabel: kubernetes.io/hostname\n"
    )
    argv = ["--trace", WORKLOAD, "--cluster", CLUSTER, "--placement", "nodes", "--topology", str(path)]
    code, _, err = sim(*argv)
    assert code != 0
    assert f"{WORKLOAD}: spec.jobs[0].podSets[0].requiredTopology (job warmup-a)" in err
    assert "(its levels: topology.kubehpc.io/block, kubernetes.io/hostname)" in err
    code, _, err = sim("--trace", WORKLOAD, "--cluster", CLUSTER, "--topology", str(path))
    assert code != 0 and "--topology: needs --placement nodes" in err
