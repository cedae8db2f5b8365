"""Topology on the node-level replay: required and preferred levels, as Kueue TAS asks for them.

The cluster: one block of two racks, r1 and r2, of two 8-cpu nodes each (32 cpu).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from simnodekit import BLOCK, RACK, cluster, cpu_nodes, job, pods, replay, row, starts, workload

from kubehpc.sim.nodecluster import NodeCluster, load_node_cluster, read_topology
from kubehpc.sim.nodes import NEVER_FITS
from kubehpc.sim.traces import TraceError
from kubehpc.sim.traces.workload import parse_workload

HOSTNAME = "kubernetes.io/hostname"


def racks(tmp_path: Path) -> NodeCluster:
    return cluster(tmp_path, cpu_nodes("r1", 2, 8, rack="r1"), cpu_nodes("r2", 2, 8, rack="r2"))


def test_the_levels_are_the_topology_labels_the_cluster_config_declares(tmp_path: Path) -> None:
    assert racks(tmp_path).levels == (BLOCK, RACK, "kubernetes.io/hostname")
    assert cluster(tmp_path, cpu_nodes("n", 2, 8)).levels == ("kubernetes.io/hostname",)


def test_a_gang_requiring_one_rack_waits_until_a_rack_frees_up(tmp_path: Path) -> None:
    # "first" and "second" each hold one rack with 2 x 5 cpu (5 + 5 > 8: one pod per node),
    # leaving 3 cpu on every node: 12 free in all, 6 per rack. The gang of 4 x 3 cpu fits the
    # cluster (one pod per node) but a rack holds only 2 of its pods (3 + 3 > 3 per node) until
    # "first" ends at 100 and its rack is empty: 2 pods on each of its nodes.
    nodes = racks(tmp_path)
    fill = [
        job("first", 0, 100, pods(2, 5, requiredTopology=RACK)),
        job("second", 0, 200, pods(2, 5, requiredTopology=RACK)),
    ]
    result = replay(nodes, [*fill, job("gang", 0, 10, pods(4, 3, requiredTopology=RACK))])
    assert starts(result) == {"first": 0.0, "second": 0.0, "gang": 100.0}
    assert result.job_domains is not None
    first_rack = result.job_domains[row(result, "first")]
    assert first_rack in ("main=r1", "main=r2")
    assert result.job_domains[row(result, "gang")] == first_rack
    assert result.job_domains[row(result, "second")] != first_rack
    # Without the requirement, the same gang starts at once, one pod on each node.
    free = replay(nodes, [*fill, job("gang", 0, 10, pods(4, 3))])
    assert starts(free)["gang"] == 0.0
    assert free.job_nodes is not None and free.job_nodes[row(free, "gang")] == 4


def test_preferred_topology_packs_into_one_rack_when_one_holds_the_gang(tmp_path: Path) -> None:
    # 4 x 4 cpu: two pods per node, so one rack (2 nodes) holds all four.
    result = replay(racks(tmp_path), [job("packed", 0, 10, pods(4, 4, preferredTopology=RACK))])
    assert starts(result) == {"packed": 0.0}
    assert result.job_nodes is not None and result.job_nodes.tolist() == [2]
    assert result.job_domains == ["main=r1"] or result.job_domains == ["main=r2"]


def test_preferred_topology_spreads_over_racks_when_no_rack_holds_the_gang(tmp_path: Path) -> None:
    # 6 x 4 cpu: a rack holds 4 of them, the block 8; preferred starts at once in the block,
    # on three or four nodes of both racks; required cannot ever start, and is dropped.
    nodes = racks(tmp_path)
    result = replay(nodes, [job("wide", 0, 10, pods(6, 4, preferredTopology=RACK))])
    assert starts(result) == {"wide": 0.0}
    assert result.job_nodes is not None and result.job_nodes[0] >= 3
    assert result.job_domains == ["main=b1"]
    required = replay(nodes, [job("wide", 0, 10, pods(6, 4, requiredTopology=RACK))])
    assert len(required.trace) == 0 and required.trace.skipped == {NEVER_FITS: 1}


def test_a_level_the_cluster_does_not_have_is_an_error_naming_file_job_and_field(tmp_path: Path) -> None:
    nodes = cluster(tmp_path, cpu_nodes("n", 2, 8))
    with pytest.raises(TraceError) as err:
        replay(nodes, [job("ok", 0, 1, pods(1, 1)), job("bad", 0, 1, pods(1, 1, requiredTopology=RACK))])
    text = str(err.value)
    assert "w.yaml: spec.jobs[1].podSets[0].requiredTopology (job bad)" in text
    assert "kubernetes.io/hostname" in text  # the levels it has


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        (
            {"requiredTopology": RACK, "preferredTopology": RACK},
            "w.yaml: spec.jobs[0].podSets[0]: Value error, requiredTopology and preferredTopology "
            "are mutually exclusive",
        ),
        (
            {"requiredTopology": ""},
            "w.yaml: spec.jobs[0].podSets[0].requiredTopology: Value error, not a node label",
        ),
        (
            {"preferredTopology": "rack!"},
            "w.yaml: spec.jobs[0].podSets[0].preferredTopology: Value error, not a node",
        ),
    ],
)
def test_a_bad_topology_request_in_the_workload_is_an_error_naming_file_job_and_field(
    topology: dict[str, str], message: str
) -> None:
    with pytest.raises(TraceError) as err:
        parse_workload(workload(job("j", 0, 1, pods(1, 1, **topology))), "w.yaml")
    assert message in str(err.value)


SUPERPOD = "example.com/superpod"


def topology_file(tmp_path: Path, levels: list[object]) -> Path:
    path = tmp_path / "topology.yaml"
    doc = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {"levels": levels},
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_kueue_topology_makes_any_node_label_a_level(tmp_path: Path) -> None:
    # Two superpods of one 8-cpu node each, set by the pools' own labels: 2 x 5 cpu fits the
    # cluster (one pod per node) but no superpod, so requiring one is never possible; 2 x 3 cpu is.
    levels = read_topology(topology_file(tmp_path, [{"nodeLabel": SUPERPOD}, {"nodeLabel": HOSTNAME}]))
    assert levels == (SUPERPOD, HOSTNAME)
    pools = [{**cpu_nodes(f"p{i}", 1, 8), "labels": {SUPERPOD: f"sp{i}"}} for i in (1, 2)]
    nodes = load_node_cluster(cluster(tmp_path, *pools).source, levels)
    result = replay(
        nodes,
        [
            job("wide", 0, 10, pods(2, 5, requiredTopology=SUPERPOD)),
            job("narrow", 0, 10, pods(2, 3, requiredTopology=SUPERPOD)),
        ],
    )
    assert starts(result) == {"narrow": 0.0}
    assert result.trace.skipped == {NEVER_FITS: 1}
    # The domain reported is the tightest that holds the pods: here the superpod's one node.
    assert result.job_domains is not None and result.job_domains[0] in ("main=p1-0", "main=p2-0")


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ([], "spec.levels: a non-empty list"),
        ([{"nodeLabel": "bad label!"}], "spec.levels[0].nodeLabel:"),
        (
            [{"nodeLabel": RACK}, {"nodeLabel": RACK}],
            "spec.levels[1].nodeLabel: 'topology.kubehpc.io/rack' appears twice",
        ),
    ],
)
def test_a_bad_topology_file_is_an_error_naming_the_field(
    tmp_path: Path, levels: list[object], message: str
) -> None:
    with pytest.raises(TraceError) as err:
        read_topology(topology_file(tmp_path, levels))
    assert str(err.value).startswith(f"--topology {tmp_path / 'topology.yaml'}: ")
    assert message in str(err.value)


def test_a_level_no_node_carries_is_an_error(tmp_path: Path) -> None:
    nodes = load_node_cluster(cluster(tmp_path, cpu_nodes("n", 2, 8)).source, (SUPERPOD, HOSTNAME))
    with pytest.raises(TraceError, match=r"spec.jobs\[0\].podSets\[0\].preferredTopology .*no node of"):
        replay(nodes, [job("j", 0, 1, pods(1, 1, preferredTopology=SUPERPOD))])
