"""Kueue's TAS samples (shared/samples/manifests/kueue/v1beta2/tas-*) behave as documented: the
Job's 10 pods, each asking 1 cpu with podset-required-topology rack, land in one rack or wait."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from sched_builders import node

from kubehpc.sched import NodeTable
from kubehpc.sched.gang import Gang, GangOptions, GangPodSet, decide_gangs
from kubehpc.sched.podspec import shape_of
from kubehpc.sched.topology import Mode, Packing, TopologyRequest, TopologyTree, request_from_annotations

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples" / "manifests" / "kueue" / "v1beta2"


def load(name: str) -> list[dict[str, Any]]:
    path = SAMPLES / name
    if not path.exists():
        pytest.fail(f"sample {path} is missing: the shared samples must be checked out beside the repository")
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def topology_levels() -> list[str]:
    topology = next(d for d in load("tas-sample-queues.yaml") if d["kind"] == "Topology")
    return [level["nodeLabel"] for level in topology["spec"]["levels"]]


def sample_gang() -> Gang:
    job = load("tas-sample-job-required.yaml")[0]
    template = job["spec"]["template"]
    request = request_from_annotations(template["metadata"]["annotations"])
    count = job["spec"]["parallelism"]
    ids = tuple(f"pod-{i}" for i in range(count))
    pod_set = GangPodSet("main", shape_of(template["spec"]), count, topology=request, pod_ids=ids)
    return Gang("tas-sample-required", (pod_set,), topology="default")


def tas_nodes(cpu_used: dict[str, str]) -> NodeTable:
    """2 blocks x 2 racks x 3 nodes of 4 cpus, labelled as the sample's Topology expects."""
    nodes = []
    for b in range(2):
        for r in range(2):
            for h in range(3):
                name = f"b{b}-r{r}-n{h}"
                nodes.append(
                    node(
                        name,
                        cpu="4",
                        memory="16Gi",
                        used={"cpu": cpu_used[name]} if name in cpu_used else None,
                        labels={
                            "cloud.provider.com/node-group": "tas-group",
                            "cloud.provider.com/topology-block": f"b{b}",
                            "cloud.provider.com/topology-rack": f"b{b}-r{r}",
                            "kubernetes.io/hostname": name,
                        },
                    )
                )
    return NodeTable.build(nodes)


def options(table: NodeTable) -> GangOptions:
    return GangOptions(Packing.BINPACK, (("default", TopologyTree.from_labels(table, topology_levels())),))


def test_the_sample_job_asks_for_one_rack() -> None:
    assert sample_gang().pod_sets[0].topology == TopologyRequest(
        Mode.REQUIRED, "cloud.provider.com/topology-rack"
    )


def test_the_sample_jobs_pods_all_land_in_one_rack() -> None:
    # Every rack has room for 10 except b0-r1; the job goes to the tightest rack that holds it.
    table = tas_nodes({"b0-r1-n0": "3", "b1-r0-n0": "1"})
    decisions = decide_gangs(table, [sample_gang()], 0.0, options=options(table))
    racks = {b.node.rsplit("-", 1)[0] for b in decisions.placed[0].bindings}
    assert len(decisions.placed[0].bindings) == 10
    assert racks == {"b1-r0"}


def test_the_sample_job_waits_whole_when_no_rack_holds_ten_pods() -> None:
    table = tas_nodes({f"b{b}-r{r}-n0": "3" for b in range(2) for r in range(2)})
    decisions = decide_gangs(table, [sample_gang()], 0.0, options=options(table))
    assert decisions.placed == ()
    assert decisions.pending[0].message == (
        "gang tas-sample-required: pod set main needs 10 x (1 cpu, 200Mi memory) in one rack; "
        "the best rack (b0-r0) has room for 9"
    )
