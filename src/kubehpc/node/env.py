"""A container's environment, built as the kubelet builds it.

Order and precedence follow Kubernetes: ``envFrom`` sources first (later sources win, keys
that are not valid variable names are skipped), then ``env`` entries in order, overriding.
``env`` values may refer to variables defined before them as ``$(VAR)``; ``command`` and
``args`` may refer to any variable of the container (:func:`expand`). ``$$`` escapes a
dollar; a reference to an undefined variable is left as written.

ConfigMaps and Secrets are read through a ``Lookup`` callable so this module stays free of
I/O and is tested without a store. A missing, non-optional source is a
:class:`ContainerConfigError` (reason ``CreateContainerConfigError``), which keeps the
container waiting as the kubelet does.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubehpc.api.quantity import parse_quantity

# (kind, namespace, name) -> the object, or None when it does not exist.
Lookup = Callable[[str, str, str], Mapping[str, Any] | None]

_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


class ContainerConfigError(Exception):
    """The container cannot be configured (yet); it stays Waiting with this reason."""

    reason = "CreateContainerConfigError"


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion (k8s.io/kubernetes third_party/forked/golang/expansion)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "$" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2 : end]
                    if name in env:
                        out.append(env[name])
                    else:
                        out.append(text[i : end + 1])
                    i = end + 1
                    continue
        out.append(ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class PodContext:
    """What fieldRef and resourceFieldRef read besides the pod itself."""

    node_name: str
    pod_ip: str = "127.0.0.1"
    host_ip: str = "127.0.0.1"
    node_cpu_millis: int = 0  # allocatable, for limits.cpu of a container with no limit
    node_memory_bytes: int = 0


def _label_map(m: Mapping[str, str]) -> str:
    # As the downward API renders labels/annotations: key="value" lines, sorted.
    return "\n".join(f'{k}="{v}"' for k, v in sorted(m.items()))


def field_ref(pod: Mapping[str, Any], path: str, ctx: PodContext) -> str:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", "default"),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName") or ctx.node_name,
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": ctx.pod_ip,
        "status.podIPs": ctx.pod_ip,
        "status.hostIP": ctx.host_ip,
        "status.hostIPs": ctx.host_ip,
    }
    if path in simple:
        return str(simple[path])
    if path == "metadata.labels":
        return _label_map(meta.get("labels") or {})
    if path == "metadata.annotations":
        return _label_map(meta.get("annotations") or {})
    for prefix, key in (("metadata.labels['", "labels"), ("metadata.annotations['", "annotations")):
        if path.startswith(prefix) and path.endswith("']"):
            return str((meta.get(key) or {}).get(path[len(prefix) : -2], ""))
    raise ContainerConfigError(f'unsupported fieldRef fieldPath "{path}"')


def resource_field_ref(
    pod: Mapping[str, Any], container: Mapping[str, Any], ref: Mapping[str, Any], ctx: PodContext
) -> str:
    name = ref.get("containerName") or container.get("name")
    target = next(
        (
            c
            for c in [*pod["spec"].get("containers", []), *pod["spec"].get("initContainers", [])]
            if c.get("name") == name
        ),
        None,
    )
    if target is None:
        raise ContainerConfigError(f'resourceFieldRef: no container "{name}"')
    resource = str(ref.get("resource", ""))
    kind, _, res = resource.partition(".")
    res_spec = target.get("resources") or {}
    raw = (res_spec.get(kind) or {}).get(res)
    if raw is None and kind == "requests":
        raw = (res_spec.get("limits") or {}).get(res)  # requests default to limits
    divisor = parse_quantity(ref.get("divisor", "1")).amount
    if raw is None:
        # Unset limits read as the node's allocatable, as the downward API does.
        if res == "cpu":
            amount = parse_quantity(f"{ctx.node_cpu_millis}m").amount if kind == "limits" else 0
        elif res == "memory":
            amount = ctx.node_memory_bytes if kind == "limits" else 0
        else:
            amount = 0
    else:
        amount = parse_quantity(raw).amount
    if divisor <= 0:
        raise ContainerConfigError(f"resourceFieldRef {resource}: divisor must be positive")
    return str(math.ceil(amount / divisor))


def _decode(obj: Mapping[str, Any], kind: str) -> dict[str, str]:
    data = dict(obj.get("data") or {})
    if kind == "Secret":
        out = {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in data.items()}
        out.update(obj.get("stringData") or {})
        return out
    out = {k: str(v) for k, v in data.items()}
    for k, v in (obj.get("binaryData") or {}).items():
        out[k] = base64.b64decode(v).decode("utf-8", "replace")
    return out


def _source(lookup: Lookup, kind: str, namespace: str, ref: Mapping[str, Any]) -> dict[str, str] | None:
    name = str(ref.get("name", ""))
    obj = lookup(kind, namespace, name)
    if obj is None:
        if ref.get("optional"):
            return None
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    return _decode(obj, kind)


def build_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    ctx: PodContext,
    lookup: Lookup,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The container's variables from the pod spec, on top of ``base`` (set by the node)."""
    namespace = (pod.get("metadata") or {}).get("namespace", "default")
    env: dict[str, str] = dict(base or {})
    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            if key in src:
                values = _source(lookup, kind, namespace, src[key])
                for k, v in (values or {}).items():
                    if _VAR_NAME.fullmatch(prefix + k):
                        env[prefix + k] = v
    for var in container.get("env") or []:
        name = var["name"]
        if "value" in var or "valueFrom" not in var:
            env[name] = expand(str(var.get("value", "")), env)
            continue
        vf = var["valueFrom"]
        if "fieldRef" in vf:
            env[name] = field_ref(pod, vf["fieldRef"]["fieldPath"], ctx)
        elif "resourceFieldRef" in vf:
            env[name] = resource_field_ref(pod, container, vf["resourceFieldRef"], ctx)
        else:
            for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                if key not in vf:
                    continue
                ref = vf[key]
                values = _source(lookup, kind, namespace, ref)
                if values is None:
                    break
                if ref["key"] not in values:
                    if ref.get("optional"):
                        break
                    raise ContainerConfigError(
                        f"couldn't find key {ref['key']} in {kind} {namespace}/{ref.get('name', '')}"
                    )
                env[name] = values[ref["key"]]
    return env
