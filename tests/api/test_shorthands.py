"""The seed article's Kueue queues (section 4) deviate from Kueue's schema; `kubehpc apply`
reads them as their author meant and says what it changed."""

from __future__ import annotations

from pathlib import Path

from kubehpc.api.kinds import build_registry
from kubehpc.api.loader import check_document, parse_text
from kubehpc.api.registry import FieldValidation
from kubehpc.api.shorthands import expand_shorthands

FLAT_CQ = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
    - flavors: [a100, h100]
      resources: [{ name: "nvidia.com/gpu", nominalQuota: 16 }]
"""


def seed_kueue_paragraph(shared_dir: Path) -> str:
    for path in sorted((shared_dir / "seed").glob("*.txt")):
        for paragraph in path.read_text(encoding="utf-8").split("\n\n"):
            if "kind: ClusterQueue" in paragraph:
                return paragraph.strip("\n")
    raise AssertionError("the seed article's Kueue example was not found")


def test_the_seed_kueue_example_applies_with_warnings(shared_dir: Path) -> None:
    docs = parse_text(seed_kueue_paragraph(shared_dir), "seed.yaml")
    warnings = expand_shorthands(docs)
    assert len(warnings) == 3
    assert any("named 'cluster-a'" in w for w in warnings)
    assert any("spec.namespaceSelector" in w for w in warnings)
    registry = build_registry()
    for doc in docs:
        assert check_document(doc, registry, FieldValidation.STRICT) == []
    cq = next(d.obj for d in docs if d.obj["kind"] == "ClusterQueue")
    assert cq["metadata"]["name"] == "cluster-a"
    assert cq["spec"]["namespaceSelector"] == {}
    gpus = [{"name": "nvidia.com/gpu", "nominalQuota": 16}]
    assert cq["spec"]["resourceGroups"] == [
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "gpu-flavor", "resources": gpus}]}
    ]


def test_flavor_names_with_quotas_beside_them_give_each_flavor_the_quotas() -> None:
    docs = parse_text(FLAT_CQ, "cq.yaml")
    warning = expand_shorthands(docs)[0]
    assert "cq.yaml doc 1: spec.resourceGroups[0]" in warning
    flavors = docs[0].obj["spec"]["resourceGroups"][0]["flavors"]
    assert [f["name"] for f in flavors] == ["a100", "h100"]
    assert all(f["resources"] == [{"name": "nvidia.com/gpu", "nominalQuota": 16}] for f in flavors)


def test_a_schema_conformant_cluster_queue_is_left_alone() -> None:
    text = FLAT_CQ.replace(
        '    - flavors: [a100, h100]\n      resources: [{ name: "nvidia.com/gpu", nominalQuota: 16 }]\n',
        '    - coveredResources: ["nvidia.com/gpu"]\n'
        '      flavors: [{name: a100, resources: [{name: "nvidia.com/gpu", nominalQuota: 16}]}]\n',
    )
    docs = parse_text(text, "cq.yaml")
    before = docs[0].obj["spec"]
    assert expand_shorthands(docs) == []
    assert docs[0].obj["spec"] == before


def test_an_unnamed_cluster_queue_without_a_single_local_queue_pointing_at_it_stays_unnamed() -> None:
    docs = parse_text(FLAT_CQ.replace("metadata: {name: cq}\n", ""), "cq.yaml")
    expand_shorthands(docs)
    assert "name" not in docs[0].obj.get("metadata", {})


def test_a_schema_conformant_cluster_queue_keeps_kueues_closed_namespace_selector() -> None:
    text = FLAT_CQ.replace(
        '    - flavors: [a100, h100]\n      resources: [{ name: "nvidia.com/gpu", nominalQuota: 16 }]\n',
        '    - coveredResources: ["nvidia.com/gpu"]\n'
        '      flavors: [{name: a100, resources: [{name: "nvidia.com/gpu", nominalQuota: 16}]}]\n',
    )
    docs = parse_text(text, "cq.yaml")
    expand_shorthands(docs)
    assert "namespaceSelector" not in docs[0].obj["spec"]
