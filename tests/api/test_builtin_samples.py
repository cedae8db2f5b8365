"""Real-world manifests of built-in kinds load and validate under Strict.

Sources: ../shared/samples/manifests (attributed in its INDEX.md) and the YAML examples of the
article in ../shared/seed/ (written inline in prose, extracted by paragraph).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubehpc.api import schema
from kubehpc.api.errors import BadRequest
from kubehpc.api.kinds import build_registry
from kubehpc.api.loader import Document, check_document, load_documents, parse_text
from kubehpc.api.registry import FieldValidation, Registry


@pytest.fixture(scope="module")
def registry() -> Registry:
    return build_registry(("kubehpc.api.kinds.core",))


def _built_in(registry: Registry, docs: list[Document]) -> list[Document]:
    out = []
    for doc in docs:
        try:
            registry.for_kind(doc.obj["apiVersion"], doc.obj["kind"])
        except BadRequest:
            continue
        out.append(doc)
    return out


def test_every_sample_manifest_parses(shared_dir: Path) -> None:
    docs = load_documents([shared_dir / "samples" / "manifests"], recursive=True)
    assert len({d.source for d in docs}) == len(list((shared_dir / "samples" / "manifests").rglob("*.yaml")))


def test_every_built_in_sample_validates_under_strict_without_warnings(
    shared_dir: Path, registry: Registry
) -> None:
    docs = _built_in(registry, load_documents([shared_dir / "samples" / "manifests"], recursive=True))
    kinds = {d.obj["kind"] for d in docs}
    assert {"Job", "Pod", "ConfigMap"} <= kinds
    for doc in docs:
        assert check_document(doc, registry, FieldValidation.STRICT) == [], doc.source


def _seed_paragraphs(shared_dir: Path) -> list[str]:
    """Paragraphs of the seed articles that hold YAML (the article has no code fences)."""
    paragraphs = []
    for path in sorted((shared_dir / "seed").glob("*.txt")):
        for paragraph in path.read_text(encoding="utf-8").split("\n\n"):
            lines = paragraph.strip("\n").splitlines()
            if lines and any(line.startswith(("apiVersion:", "resources:")) for line in lines):
                paragraphs.append("\n".join(lines))
    return paragraphs


def test_seed_article_built_in_manifests_validate_under_strict(shared_dir: Path, registry: Registry) -> None:
    docs = [
        d for text in _seed_paragraphs(shared_dir) if "apiVersion:" in text for d in parse_text(text, "seed")
    ]
    built_in = _built_in(registry, docs)
    assert [d.obj["kind"] for d in built_in] == ["Job"]
    for doc in built_in:
        assert check_document(doc, registry, FieldValidation.STRICT) == []


def test_seed_article_resource_fragments_are_valid_resource_requirements(shared_dir: Path) -> None:
    fragments = [
        yaml.safe_load(text)["resources"]
        for text in _seed_paragraphs(shared_dir)
        if "apiVersion:" not in text
    ]
    assert {name for f in fragments for name in f["limits"]} == {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"}
    for fragment in fragments:
        causes, warnings = schema.validate_definition(
            "io.k8s.api.core.v1.ResourceRequirements", fragment, "resources", FieldValidation.STRICT
        )
        assert (causes, warnings) == ([], [])
