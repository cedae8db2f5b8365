"""Every sample manifest whose kind kubehpc serves is stored and read back with everything its
author wrote unchanged: the server only adds (metadata it owns, defaults), never drops or
rewrites a field — also across versions (Kueue v1beta1 samples are stored as v1beta2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubehpc.api.errors import BadRequest
from kubehpc.api.kinds import build_registry
from kubehpc.api.loader import load_documents
from kubehpc.store.store import Store

SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "manifests"


def registered_documents() -> list[tuple[str, dict[str, Any]]]:
    registry = build_registry()
    docs = []
    for doc in load_documents([SAMPLES], recursive=True):
        try:
            registry.for_kind(doc.obj["apiVersion"], doc.obj["kind"])
        except BadRequest:
            continue  # Volcano, KubeRay and MPI Operator kinds come with their issues
        docs.append((f"{Path(doc.source).relative_to(SAMPLES)} doc {doc.index}", doc.obj))
    return docs


def missing_or_changed(written: Any, stored: Any, path: str = "") -> list[str]:
    """Paths of ``written`` that ``stored`` lacks or holds with another value (in lists: same
    items in the same order, each compared the same way)."""
    if isinstance(written, dict):
        if not isinstance(stored, dict):
            return [path or "."]
        out: list[str] = []
        for key, value in written.items():
            if key not in stored:
                out.append(f"{path}.{key}")
            else:
                out += missing_or_changed(value, stored[key], f"{path}.{key}")
        return out
    if isinstance(written, list):
        # Defaults may add fields inside list items (a container's terminationMessagePath),
        # but the items themselves and their order are the author's.
        if not isinstance(stored, list) or len(stored) != len(written):
            return [path or "."]
        return [
            p for i, item in enumerate(written) for p in missing_or_changed(item, stored[i], f"{path}[{i}]")
        ]
    return [] if written == stored else [path or "."]


def test_the_samples_include_registered_kinds(shared_dir: Path) -> None:
    kinds = {obj["kind"] for _, obj in registered_documents()}
    assert {"Job", "ConfigMap", "Pod", "ClusterQueue", "LocalQueue", "ResourceFlavor"} <= kinds


@pytest.mark.parametrize(
    ("where", "obj"), registered_documents(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_a_sample_reads_back_with_every_written_field_unchanged(where: str, obj: dict[str, Any]) -> None:
    store = Store(build_registry(), None)
    namespace = obj["metadata"].get("namespace")
    if namespace and namespace not in ("default", "kube-system"):
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    created = store.create(obj)
    meta = created["metadata"]
    stored = store.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    written = {k: v for k, v in obj.items() if k != "metadata"}
    written_meta = {k: v for k, v in obj["metadata"].items() if k not in ("generateName", "namespace")}
    assert missing_or_changed(written, stored) == [], where
    assert missing_or_changed(written_meta, stored["metadata"]) == [], where
    assert stored["apiVersion"] == obj["apiVersion"]
