"""Builders for store tests: a small registry of kinds and objects to put in it.

Pods, Jobs, ConfigMaps, Namespaces, Nodes and Events get a tiny validator and defaulter shaped
like the real ones (the Pod defaulter sets ``status.phase: Pending``, the Job defaulter reads
the uid); ``widgets.example.com`` is a custom kind served in two versions without strategic
merge support. (A module of its own, not conftest.py: test modules import from it, and
several conftest.py files share one module name.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubehpc.api.errors import Cause, invalid
from kubehpc.api.registry import FieldValidation, PatchMeta, Registry, ResourceType, VersionSpec

Obj = dict[str, Any]


@dataclass
class TreePatchMeta:
    """PatchMeta over a literal tree: ``children`` by key, ``items`` for list items."""

    strategy: str = ""
    merge_key: str = ""
    children: dict[str, TreePatchMeta] = field(default_factory=dict)
    items: TreePatchMeta | None = None

    def child(self, key: str) -> PatchMeta | None:
        return self.children.get(key)

    def item(self) -> PatchMeta | None:
        return self.items


_CONTAINER = TreePatchMeta(
    children={
        "env": TreePatchMeta("merge", "name", items=TreePatchMeta()),
        "ports": TreePatchMeta("merge", "containerPort", items=TreePatchMeta()),
    }
)
POD_PATCH_META = TreePatchMeta(
    children={
        "metadata": TreePatchMeta(
            children={
                "finalizers": TreePatchMeta("merge"),
                "ownerReferences": TreePatchMeta("merge", "uid", items=TreePatchMeta()),
            }
        ),
        "spec": TreePatchMeta(
            children={
                "containers": TreePatchMeta("merge", "name", items=_CONTAINER),
                "volumes": TreePatchMeta("merge,retainKeys", "name", items=TreePatchMeta()),
                "tolerations": TreePatchMeta(),
            }
        ),
    }
)


def _require_spec_dict(
    obj: Obj, mode: FieldValidation, /, *, unchanged: frozenset[str] = frozenset()
) -> list[str]:
    if "spec" in obj and not isinstance(obj["spec"], dict):
        raise invalid(obj["kind"], obj["metadata"].get("name", ""), [Cause("spec", "must be an object")])
    return []


def _validate_pod(
    obj: Obj, mode: FieldValidation, /, *, unchanged: frozenset[str] = frozenset()
) -> list[str]:
    _require_spec_dict(obj, mode)
    containers = (obj.get("spec") or {}).get("containers")
    name = obj["metadata"].get("name", "")
    if not isinstance(containers, list) or not containers:
        raise invalid("Pod", name, [Cause("spec.containers", "Required value", "FieldValueRequired")])
    for i, c in enumerate(containers):
        if not c.get("image"):
            raise invalid(
                "Pod", name, [Cause(f"spec.containers[{i}].image", "Required value", "FieldValueRequired")]
            )
    return []


def _default_pod(obj: Obj) -> None:
    obj["spec"].setdefault("restartPolicy", "Always")
    obj.setdefault("status", {}).setdefault("phase", "Pending")


def _default_job(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    uid = obj["metadata"]["uid"]  # the real Job defaulter labels the template with the uid
    spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})


def _no_parallelism_change(old: Obj, new: Obj) -> list[Cause]:
    if (old.get("spec") or {}).get("completions") != (new.get("spec") or {}).get("completions"):
        return [Cause("spec.completions", "field is immutable", "FieldValueInvalid")]
    return []


def _widget_to_storage(obj: Obj) -> Obj:  # v1alpha1 calls it "size", v1 "replicas"
    spec = obj.get("spec") or {}
    if "size" in spec:
        spec["replicas"] = spec.pop("size")
    return obj


def _widget_from_storage(obj: Obj) -> Obj:
    spec = dict(obj.get("spec") or {})
    if "replicas" in spec:
        spec["size"] = spec.pop("replicas")
    obj["spec"] = spec
    return obj


def small_registry() -> Registry:
    r = Registry()
    r.register(
        ResourceType(
            "",
            "Namespace",
            "namespaces",
            False,
            (VersionSpec("v1", _require_spec_dict),),
            "v1",
            short_names=("ns",),
        )
    )
    r.register(ResourceType("", "Node", "nodes", False, (VersionSpec("v1", _require_spec_dict),), "v1"))
    r.register(
        ResourceType(
            "",
            "Pod",
            "pods",
            True,
            (VersionSpec("v1", _validate_pod, _default_pod, POD_PATCH_META),),
            "v1",
            short_names=("po",),
        )
    )
    r.register(
        ResourceType(
            "",
            "ConfigMap",
            "configmaps",
            True,
            (VersionSpec("v1", _require_spec_dict, None, TreePatchMeta()),),
            "v1",
            status_subresource=False,
        )
    )
    r.register(
        ResourceType(
            "",
            "Event",
            "events",
            True,
            (VersionSpec("v1", _require_spec_dict, None, TreePatchMeta()),),
            "v1",
            status_subresource=False,
        )
    )
    r.register(
        ResourceType(
            "batch",
            "Job",
            "jobs",
            True,
            (VersionSpec("v1", _require_spec_dict, _default_job, TreePatchMeta()),),
            "v1",
            validate_update=_no_parallelism_change,
        )
    )
    r.register(
        ResourceType(
            "example.com",
            "Widget",
            "widgets",
            True,
            (
                VersionSpec("v1", _require_spec_dict),
                VersionSpec(
                    "v1alpha1",
                    _require_spec_dict,
                    to_storage=_widget_to_storage,
                    from_storage=_widget_from_storage,
                ),
            ),
            "v1",
        )
    )
    return r


def pod(name: str, namespace: str = "default", labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def event(name: str, namespace: str = "default") -> Obj:
    """A pod's Scheduled Event, as the scheduler records one."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
        "reason": "Scheduled",
        "message": "Successfully assigned default/p to node-1",
        "type": "Normal",
    }


def configmap(name: str, namespace: str = "default", **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def job(name: str, namespace: str = "default", **spec: Any) -> Obj:
    template = {
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": template, **spec},
    }


class PlainClient:
    """A client without ``batch`` (as the REST client of cluster mode)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        if name == "batch":
            raise AttributeError(name)
        return getattr(self.store, name)
