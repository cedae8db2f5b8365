"""Discovery documents, shaped exactly as the Kubernetes API server shapes them.

kubectl and client-go read these to map kinds to REST paths. Both forms are served: the legacy
documents (/api, /apis, /api/v1, /apis/<group>/<version>) and aggregated discovery
(``APIGroupDiscoveryList``, apidiscovery.k8s.io/v2 and v2beta1) that kubectl >= 1.30 asks
for first, which saves it one request per group version. Everything here depends only on the
registry, so the documents are built once and served as bytes.
"""

from __future__ import annotations

from typing import Any

from kubehpc.api.registry import Registry, ResourceType
from kubehpc.server.http import dumps

KUBERNETES_MINOR = 32
GIT_VERSION = f"v1.{KUBERNETES_MINOR}.0-kubehpc"

OBJECT_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]
# Subresources beyond status that kubehpc serves: (kind's plural, subresource) -> verbs.
EXTRA_SUBRESOURCES = {("", "pods", "log"): ["get"]}


def version_info() -> dict[str, str]:
    return {
        "major": "1",
        "minor": str(KUBERNETES_MINOR),
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _subresources(rt: ResourceType) -> list[tuple[str, list[str]]]:
    subs: list[tuple[str, list[str]]] = []
    for (group, plural, sub), verbs in EXTRA_SUBRESOURCES.items():
        if (group, plural) == (rt.group, rt.plural):
            subs.append((sub, verbs))
    if rt.status_subresource:
        subs.append(("status", STATUS_VERBS))
    return subs


def _types_in(registry: Registry, group: str, version: str) -> list[ResourceType]:
    return sorted(
        (rt for rt in registry if rt.group == group and any(v.name == version for v in rt.versions)),
        key=lambda rt: rt.plural,
    )


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    """APIResourceList for /api/v1 or /apis/<group>/<version>."""
    resources: list[dict[str, Any]] = []
    for rt in _types_in(registry, group, version):
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": OBJECT_VERBS,
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for sub, verbs in _subresources(rt):
            resources.append(
                {
                    "name": f"{rt.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": rt.kind,
                    "verbs": verbs,
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": _group_version(group, version),
        "resources": resources,
    }


def api_versions(server_address: str) -> dict[str, Any]:
    """APIVersions for /api (the core group)."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group(registry: Registry, group: str) -> dict[str, Any]:
    versions = registry.groups()[group]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
        "preferredVersion": {"groupVersion": f"{group}/{versions[0]}", "version": versions[0]},
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    """APIGroupList for /apis (every named group, preferred version first)."""
    groups = [api_group(registry, g) for g in sorted(registry.groups()) if g]
    for g in groups:
        del g["kind"], g["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _discovery_group(registry: Registry, group: str, versions: list[str]) -> dict[str, Any]:
    out_versions = []
    for version in versions:
        resources = []
        for rt in _types_in(registry, group, version):
            response_kind = {"group": group, "version": version, "kind": rt.kind}
            entry: dict[str, Any] = {
                "resource": rt.plural,
                "responseKind": response_kind,
                "scope": "Namespaced" if rt.namespaced else "Cluster",
                "singularResource": rt.singular,
                "verbs": OBJECT_VERBS,
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            subs = _subresources(rt)
            if subs:
                entry["subresources"] = [
                    {"subresource": sub, "responseKind": response_kind, "verbs": verbs} for sub, verbs in subs
                ]
            resources.append(entry)
        out_versions.append({"version": version, "resources": resources, "freshness": "Current"})
    metadata: dict[str, Any] = {"creationTimestamp": None}
    if group:
        metadata["name"] = group
    return {"metadata": metadata, "versions": out_versions}


def aggregated(registry: Registry, core: bool, content_type: str) -> dict[str, Any]:
    """APIGroupDiscoveryList: /api (core=True) or /apis (every named group)."""
    groups = registry.groups()
    names = [""] if core else sorted(g for g in groups if g)
    version = "v2beta1" if "v=v2beta1" in content_type else "v2"
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": [_discovery_group(registry, g, groups[g]) for g in names if g in groups],
    }


class DiscoveryDocuments:
    """Every discovery document of one registry, encoded once."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.version = dumps(version_info())
        self.apis = dumps(api_group_list(registry))
        self.groups = {g: dumps(api_group(registry, g)) for g in registry.groups() if g}
        self.resource_lists: dict[tuple[str, str], bytes] = {}
        for group, versions in registry.groups().items():
            for version in versions:
                self.resource_lists[(group, version)] = dumps(resource_list(registry, group, version))
        self._aggregated: dict[tuple[bool, str], bytes] = {}

    def aggregated(self, core: bool, content_type: str) -> bytes:
        key = (core, content_type)
        if key not in self._aggregated:
            self._aggregated[key] = dumps(aggregated(self.registry, core, content_type))
        return self._aggregated[key]
