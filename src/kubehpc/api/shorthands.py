"""Shorthands that people write but no real schema has, accepted with a warning.

Manifests copied from articles and slides are sometimes abbreviated in ways that real Kueue (or
the MPI Operator, …) rejects. kubehpc runs them as written when the intent is unambiguous, and
says on stderr exactly what it changed, so the user can fix the file for a real cluster.

Rewrites here work on a whole set of documents (one ``kubehpc apply``), because some need
context from the other documents: a ClusterQueue written without a name gets the one name a
LocalQueue of the same set points at.
"""

from __future__ import annotations

from typing import Any

from kubehpc.api.kinds.kubeflow.shorthand import expand_mpijob_shorthands
from kubehpc.api.loader import Document

KUEUE_GROUP = "kueue.x-k8s.io"


def _is(doc: Document, kind: str) -> bool:
    api_version = str(doc.obj.get("apiVersion", ""))
    return doc.obj.get("kind") == kind and api_version.startswith(KUEUE_GROUP + "/")


def _where(doc: Document) -> str:
    return f"{doc.source} doc {doc.index}"


def expand_shorthands(docs: list[Document]) -> list[str]:
    """Rewrite known shorthands in place; returns one warning per rewrite."""
    warnings: list[str] = []
    abbreviated: list[Document] = []
    for doc in docs:
        if _is(doc, "ClusterQueue"):
            rewritten = _flavor_name_lists(doc)
            warnings += rewritten
            if rewritten:
                abbreviated.append(doc)
    warnings += _unnamed_cluster_queues(docs)
    for doc in abbreviated:
        warnings += _open_to_all_namespaces(doc)
    warnings += expand_mpijob_shorthands(docs)
    return warnings


REQUEST = "request"


def expand_request_shorthands(obj: dict[str, Any]) -> list[str]:
    """The same rewrites for one object sent to the API server (``kubectl apply`` / ``create``):
    those that need no other document of a file. The warnings go back to the client as
    ``Warning`` headers, which kubectl prints."""
    warnings = expand_shorthands([Document(REQUEST, 0, obj)])
    prefix = f"{REQUEST} doc 0: "
    return [w.removeprefix(prefix) for w in warnings]


def _open_to_all_namespaces(doc: Document) -> list[str]:
    """In Kueue a ClusterQueue without ``namespaceSelector`` admits no namespace at all. A queue
    written in the abbreviated style above never meant that (its LocalQueue would wait forever),
    so only such a queue is read as open to every namespace; a schema-conformant one keeps
    Kueue's meaning."""
    spec = _spec(doc)
    if "namespaceSelector" in spec or not isinstance(doc.obj.get("spec"), dict):
        return []
    spec["namespaceSelector"] = {}
    return [
        f"{_where(doc)}: spec.namespaceSelector: not set, which in Kueue admits no namespace; "
        "read as {} (every namespace) for this abbreviated ClusterQueue"
    ]


def _flavor_name_lists(doc: Document) -> list[str]:
    """``resourceGroups: [{flavors: [f], resources: [{name, nominalQuota}]}]`` — flavors as bare
    names with the quotas beside them — is Kueue's structure written flat. Real Kueue nests the
    quotas under each flavor and lists the group's resources in ``coveredResources``."""
    spec = doc.obj.get("spec")
    if not isinstance(spec, dict):
        return []
    warnings = []
    for i, group in enumerate(spec.get("resourceGroups") or []):
        if not isinstance(group, dict):
            continue
        flavors, resources = group.get("flavors"), group.get("resources")
        if not (isinstance(flavors, list) and flavors and all(isinstance(f, str) for f in flavors)):
            continue
        if not (isinstance(resources, list) and all(isinstance(r, dict) for r in resources)):
            continue
        quotas: list[dict[str, Any]] = [dict(r) for r in resources]
        group.pop("resources")
        group["coveredResources"] = [str(r.get("name", "")) for r in quotas]
        group["flavors"] = [{"name": f, "resources": [dict(q) for q in quotas]} for f in flavors]
        each = " each" if len(flavors) > 1 else ""
        warnings.append(
            f"{_where(doc)}: spec.resourceGroups[{i}]: flavors given as names with the quotas beside "
            f"them is not Kueue's schema; read as coveredResources {group['coveredResources']} with "
            f"those quotas under flavor{'s' if len(flavors) > 1 else ''} {', '.join(flavors)}{each}"
        )
    return warnings


def _unnamed_cluster_queues(docs: list[Document]) -> list[str]:
    unnamed = [d for d in docs if _is(d, "ClusterQueue") and not _name(d)]
    if not unnamed:
        return []
    defined = {_name(d) for d in docs if _is(d, "ClusterQueue")}
    pointed_at = {_spec(d).get("clusterQueue") for d in docs if _is(d, "LocalQueue")}
    wanted = sorted({str(name) for name in pointed_at if name} - defined)
    if len(unnamed) != 1 or len(wanted) != 1:
        return []  # ambiguous: leave it to validation, which names the missing field
    doc, name = unnamed[0], wanted[0]
    doc.obj.setdefault("metadata", {})
    if not isinstance(doc.obj["metadata"], dict):
        return []
    doc.obj["metadata"]["name"] = name
    return [
        f"{_where(doc)}: metadata.name: the ClusterQueue has no name; named {name!r}, the ClusterQueue "
        "the LocalQueue of the same file points at"
    ]


def _spec(doc: Document) -> dict[str, Any]:
    spec = doc.obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _name(doc: Document) -> str:
    meta = doc.obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""
