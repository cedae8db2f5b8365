"""Installing the CustomResourceDefinitions of the kinds kubehpc owns into a real cluster.

The kinds come from kubehpc's registry (Kueue's, and whatever other groups it serves); each CRD is
the ``apiextensions.k8s.io/v1`` document :func:`kubehpc.api.crd.custom_resource_definition`
generates, with structural schemas. Kinds of Kubernetes' own groups (core, ``batch``,
``*.k8s.io``) are the API server's, never installed.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kubehpc.api.errors import AlreadyExists, ApiError, Invalid, NotFound
from kubehpc.api.registry import Registry, ResourceType
from kubehpc.store.client import Client

log = logging.getLogger(__name__)
Obj = dict[str, Any]
CRD_API = "apiextensions.k8s.io/v1"
BUILTIN_GROUPS = frozenset({"", "batch", "apps", "policy", "autoscaling"})


def owned(rt: ResourceType) -> bool:
    """Whether kubehpc, not the API server, defines ``rt`` in a cluster."""
    return rt.group not in BUILTIN_GROUPS and not rt.group.endswith(".k8s.io")


FLOAT_EXACT = 2**53


def _float_safe(node: Any) -> Any:
    """Drop ``minimum``/``maximum`` bounds a float64 cannot hold exactly: the API server decodes
    them as float64 and converts back, so int64's max (pydantic's bound for a 64-bit int)
    wraps round to int64's min and rejects every value (found on kube-apiserver 1.20)."""
    if isinstance(node, dict):
        return {
            k: _float_safe(v)
            for k, v in node.items()
            if not (k in ("minimum", "maximum") and isinstance(v, int | float) and abs(v) >= FLOAT_EXACT)
        }
    if isinstance(node, list):
        return [_float_safe(v) for v in node]
    return node


def _list_map_keys_defaulted(node: Any) -> Any:
    """Kubernetes requires each key of an ``x-kubernetes-list-type: map`` list to be required or
    defaulted. Where a generated schema has neither (pod templates embedded in custom kinds:
    ports keyed by containerPort+protocol, imagePullSecrets by name), the key gets the
    default Kubernetes applies itself (protocol: TCP), else the list is left a plain list."""
    if isinstance(node, list):
        return [_list_map_keys_defaulted(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _list_map_keys_defaulted(v) for k, v in node.items()}
    if out.get("x-kubernetes-list-type") == "map":
        items = out.get("items") or {}
        props = items.get("properties") or {}
        required = set(items.get("required") or ())
        for key in out.get("x-kubernetes-list-map-keys") or ():
            if key in required or "default" in (props.get(key) or {}):
                continue
            if key == "protocol" and key in props:
                props[key] = {**props[key], "default": "TCP"}
                continue
            out.pop("x-kubernetes-list-type", None)
            out.pop("x-kubernetes-list-map-keys", None)
            break
    return out


NUMERIC = frozenset({"integer", "number"})


def _structural(node: Any) -> Any:
    """What the real API server's structural-schema check refuses, rewritten into what it takes
    (generated from pydantic models, kubehpc's schemas say the same things another way):

    * ``anyOf`` with a ``{type: null}`` branch (an Optional field) -> ``nullable: true``;
    * ``anyOf`` of typed scalar branches: integer|number -> ``type: number``; with string
      (a quantity) -> ``x-kubernetes-int-or-string``; else the value is kept as given;
    * ``default: null`` dropped, and ``default: ""`` too (1.20 reads an empty-string default as
      null and refuses it; absent and "" mean the same to kubehpc's readers).
    """
    if isinstance(node, list):
        return [_structural(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _structural(v) for k, v in node.items()}
    if "default" in out and out["default"] in (None, ""):
        del out["default"]
    branches = out.get("anyOf")
    if isinstance(branches, list) and all(isinstance(b, dict) for b in branches):
        kept = [b for b in branches if b.get("type") != "null"]
        if len(kept) != len(branches):
            out["nullable"] = True
        types = {b.get("type") for b in kept}
        if kept and all(set(b) == {"type"} for b in kept) and None not in types:
            del out["anyOf"]
            if len(kept) == 1:
                out["type"] = kept[0]["type"]
            elif types <= NUMERIC:
                out["type"] = "number"
            elif types <= NUMERIC | {"string"}:
                out["x-kubernetes-int-or-string"] = True
            else:
                out["x-kubernetes-preserve-unknown-fields"] = True
        elif len(kept) == 1 and "type" not in out:
            del out["anyOf"]
            out.update(kept[0])
        else:
            out["anyOf"] = kept
    return out


def owned_crds(registry: Registry) -> list[Obj]:
    # Imported here: the schema generator is pydantic's, a cost only installing CRDs pays.
    from kubehpc.api.crd import custom_resource_definition

    return [
        _list_map_keys_defaulted(_structural(_float_safe(custom_resource_definition(rt))))
        for rt in sorted(registry, key=lambda r: r.key)
        if owned(rt)
    ]


def established(crd: Obj) -> bool:
    for cond in (crd.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Established" and cond.get("status") == "True":
            return True
    return False


class CrdInstallError(Exception):
    pass


def install_crds(client: Client, crds: list[Obj], timeout_s: float = 60.0) -> dict[str, str]:
    """Create each CRD, or replace it when it differs; wait until those accepted are
    Established. Returns the CRDs the server refused as invalid (name -> its message): a
    permanent error, which must not keep the others (and scheduling) from starting. Any other
    error (unreachable, Forbidden) is raised unchanged, for the caller to retry."""
    refused: dict[str, str] = {}
    for crd in crds:
        name = crd["metadata"]["name"]
        try:
            _create_or_update(client, crd)
        except Invalid as err:
            refused[name] = str(err)
    deadline = time.monotonic() + timeout_s
    for crd in crds:
        name = crd["metadata"]["name"]
        while name not in refused:
            try:
                if established(client.get(CRD_API, "CustomResourceDefinition", name)):
                    break
            except NotFound:
                pass
            if time.monotonic() > deadline:
                raise CrdInstallError(
                    f"CustomResourceDefinition {name} not Established after {timeout_s:.0f}s"
                )
            time.sleep(0.2)
    return refused


def _create_or_update(client: Client, crd: Obj) -> None:
    try:
        client.create(crd)
        return
    except AlreadyExists:
        pass
    name = crd["metadata"]["name"]
    current = client.get(CRD_API, "CustomResourceDefinition", name)
    # The server adds defaults of its own to the spec (conversion strategy, ...): compare only
    # what we set, or every start would rewrite every CRD.
    theirs = current.get("spec") or {}
    if any(theirs.get(key) != value for key, value in crd["spec"].items()):
        rv = current["metadata"]["resourceVersion"]
        client.update({**crd, "metadata": {**crd["metadata"], "resourceVersion": rv}})


__all__ = ["ApiError", "CrdInstallError", "install_crds", "owned", "owned_crds"]
