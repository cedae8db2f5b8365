"""Kueue's topology-aware scheduling samples applied unchanged through kubectl: the sample Job's
10 pods, each requiring one cloud.provider.com/topology-rack, all land in one rack.

The cluster has two racks of labelled nodes: rack r1 (3 nodes x 4 cpu) holds the 10 one-cpu
pods, rack r2 (2 nodes x 4 cpu) does not, and binpacking alone would fill r2's nodes first
(they come first). The pods run ``pause`` from an image this host does not have, so they end
Failed; where they were bound is what the sample is about.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2ekit import KUBECTL, Plane

SAMPLES = Path("/work/shared/samples/manifests/kueue/v1beta2")
RACK = "cloud.provider.com/topology-rack"


def pool(name: str, count: int, rack: str) -> str:
    return f"""\
    - name: {name}
      count: {count}
      cpu: "4"
      memory: 8Gi
      labels:
        cloud.provider.com/node-group: tas-group
        cloud.provider.com/topology-block: b1
        {RACK}: {rack}
"""


CLUSTER = (
    "apiVersion: kubehpc.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: tas}\nspec:\n  nodePools:\n"
    + pool("a", 2, "r2")
    + pool("b", 3, "r1")
)


@pytest.fixture(scope="module")
def tas_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    if not Path(KUBECTL).exists():
        pytest.fail(f"{KUBECTL} is missing: `make test` installs it (scripts/system-deps.sh)")
    if not SAMPLES.is_dir():
        pytest.fail(f"{SAMPLES} is missing")
    p = Plane(tmp_path_factory.mktemp("tas") / "home").start(CLUSTER)
    try:
        yield p
    finally:
        p.stop()


def test_the_required_topology_sample_lands_in_one_rack(tas_plane: Plane) -> None:
    tas_plane.kubectl("apply", "-f", str(SAMPLES / "tas-sample-queues.yaml"))
    tas_plane.kubectl("create", "-f", str(SAMPLES / "tas-sample-job-required.yaml"))
    racks = {
        n["metadata"]["name"]: n["metadata"]["labels"][RACK]
        for n in json.loads(tas_plane.kubectl("get", "nodes", "-o", "json"))["items"]
    }
    deadline = time.monotonic() + 90
    bound: dict[str, str] = {}
    while time.monotonic() < deadline:
        pods = json.loads(tas_plane.kubectl("get", "pods", "-o", "json"))["items"]
        bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
        if len(bound) >= 10 and all(bound.values()):
            break
        time.sleep(0.5)
    else:
        raise AssertionError(
            f"the sample's pods were not all bound: {bound}\n{tas_plane.log.read_text()[-2000:]}"
        )
    first_ten = sorted(bound.items())[:10]
    assert {racks[node] for _, node in first_ten} == {"r1"}
