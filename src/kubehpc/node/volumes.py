"""Pod volumes as host directories, and how a container's process finds its mounts.

Containers run as plain host processes (no mount namespace), so a ``volumeMounts[].mountPath``
cannot appear at that path. Instead, for every pod the agent prepares::

    $KUBEHPC_HOME/pods/<namespace>/<pod>-<uid8>/
        volumes/<volume>/          emptyDir (a directory), configMap / secret / downwardAPI
                                   (the files), hostPath and persistentVolumeClaim (symlinks
                                   to the host directory and to $KUBEHPC_HOME/volumes/<ns>/<claim>)
        roots/<container>/<mountPath>  -> symlink to the volume (plus subPath)

and each container's process gets, in its environment:

* ``KUBEHPC_ROOT`` — its root: ``$KUBEHPC_ROOT/<mountPath>`` is the mount (so a program that
  opens ``$KUBEHPC_ROOT/data/x`` sees what a container would see at ``/data/x``);
* ``KUBEHPC_MOUNT_<VOLUME>`` — the host directory of each mounted volume (name upper-cased,
  every character other than A-Z, 0-9 turned into ``_``; subPath applied);
* a ``workingDir`` under a mountPath runs in the mounted host directory.

Every pod mounting the same PersistentVolumeClaim shares one host directory: the shared file
system of an HPC job. ``readOnly`` is recorded, not enforced.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubehpc.node.env import ContainerConfigError, Lookup, PodContext, field_ref
from kubehpc.store.home import Home

ROOT_ENV = "KUBEHPC_ROOT"
MOUNT_ENV_PREFIX = "KUBEHPC_MOUNT_"


def mount_env_name(volume: str) -> str:
    return MOUNT_ENV_PREFIX + re.sub(r"[^A-Z0-9]", "_", volume.upper())


def pod_dir(home: Home, pod: Mapping[str, Any]) -> Path:
    meta = pod["metadata"]
    uid = str(meta.get("uid", ""))[:8] or "nouid"
    return home.root / "pods" / str(meta.get("namespace", "default")) / f"{meta['name']}-{uid}"


def _write_items(target: Path, data: Mapping[str, str | bytes], items: list[Any] | None, mode: int) -> None:
    target.mkdir(parents=True, exist_ok=True)
    chosen = (
        [(i["key"], i.get("path", i["key"]), i.get("mode", mode)) for i in items]
        if items
        else [(k, k, mode) for k in data]
    )
    for key, rel, item_mode in chosen:
        if key not in data:
            raise ContainerConfigError(f'key "{key}" not found')
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise ContainerConfigError(f'volume item path "{rel}" must be relative without ".."')
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        value = data[key]
        path.write_bytes(value if isinstance(value, bytes) else value.encode())
        path.chmod(item_mode & 0o777)


def _object_data(kind: str, obj: Mapping[str, Any]) -> dict[str, str | bytes]:
    if kind == "Secret":
        out: dict[str, str | bytes] = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        out.update(obj.get("stringData") or {})
        return out
    out = dict(obj.get("data") or {})
    out.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return out


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        if link.is_symlink() and Path(os.readlink(link)) == target:
            return
        if link.is_dir() and not link.is_symlink():
            shutil.rmtree(link)
        else:
            link.unlink()
    link.symlink_to(target, target_is_directory=True)


def prepare_volumes(home: Home, pod: Mapping[str, Any], lookup: Lookup, ctx: PodContext) -> dict[str, Path]:
    """Create every volume of the pod; returns volume name -> host path. Idempotent: a
    restarted agent or container finds emptyDir contents as they were."""
    ns = pod["metadata"].get("namespace", "default")
    base = pod_dir(home, pod) / "volumes"
    out: dict[str, Path] = {}
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        name = vol["name"]
        path = base / name
        if "emptyDir" in vol:
            path.mkdir(parents=True, exist_ok=True)
        elif "hostPath" in vol:
            hp = Path(vol["hostPath"]["path"])
            kind = vol["hostPath"].get("type", "")
            if kind == "DirectoryOrCreate":
                hp.mkdir(parents=True, exist_ok=True)
            elif kind in ("Directory", "File", "Socket", "CharDevice", "BlockDevice") and not hp.exists():
                raise ContainerConfigError(f"hostPath type check failed: {hp} does not exist")
            _link(path, hp)
        elif "persistentVolumeClaim" in vol:
            claim = vol["persistentVolumeClaim"]["claimName"]
            target = home.pvc_dir(ns, claim)
            target.mkdir(parents=True, exist_ok=True)
            _link(path, target)
        elif "configMap" in vol or "secret" in vol:
            kind, spec = ("ConfigMap", vol["configMap"]) if "configMap" in vol else ("Secret", vol["secret"])
            obj_name = spec.get("name") or spec.get("secretName", "")
            obj = lookup(kind, ns, obj_name)
            if obj is None and not spec.get("optional"):
                raise ContainerConfigError(f'{kind.lower()} "{obj_name}" not found')
            _write_items(
                path, _object_data(kind, obj or {}), spec.get("items"), spec.get("defaultMode", 0o644)
            )
        elif "downwardAPI" in vol:
            spec = vol["downwardAPI"]
            data = {
                i["path"]: field_ref(pod, i["fieldRef"]["fieldPath"], ctx)
                for i in spec.get("items", [])
                if "fieldRef" in i
            }
            _write_items(path, dict(data), None, spec.get("defaultMode", 0o644))
        else:
            kinds = ", ".join(k for k in vol if k != "name")
            raise ContainerConfigError(f'volume "{name}": unsupported volume type {kinds}')
        out[name] = path
    return out


def container_mounts(
    home: Home, pod: Mapping[str, Any], container: Mapping[str, Any], volumes: Mapping[str, Path]
) -> tuple[Path, dict[str, str], dict[str, Path]]:
    """The container's root, its mount variables, and mountPath -> host path."""
    root = pod_dir(home, pod) / "roots" / container["name"]
    root.mkdir(parents=True, exist_ok=True)
    env = {ROOT_ENV: str(root)}
    paths: dict[str, Path] = {}
    for m in container.get("volumeMounts") or []:
        vol = m["name"]
        if vol not in volumes:
            raise ContainerConfigError(f'volumeMount "{vol}": no volume of that name in the pod')
        target = volumes[vol].resolve()
        sub = m.get("subPath", "")
        if sub:
            if sub.startswith("/") or ".." in Path(sub).parts:
                raise ContainerConfigError(
                    f'volumeMount "{vol}": subPath "{sub}" must be relative without ".."'
                )
            target = target / sub
            target.mkdir(parents=True, exist_ok=True)
        mount_path = m["mountPath"]
        _link(root / mount_path.lstrip("/"), target)
        env[mount_env_name(vol)] = str(target)
        paths[mount_path.rstrip("/") or "/"] = target
    return root, env, paths


def host_working_dir(working_dir: str, root: Path, mounts: Mapping[str, Path]) -> Path:
    """Where a ``workingDir`` is on the host: inside a mount -> the mounted directory; an
    existing host directory -> itself; otherwise created under the container's root."""
    for mount_path in sorted(mounts, key=len, reverse=True):
        if working_dir == mount_path or working_dir.startswith(mount_path.rstrip("/") + "/"):
            rest = working_dir[len(mount_path) :].lstrip("/")
            path = mounts[mount_path] / rest
            path.mkdir(parents=True, exist_ok=True)
            return path
    wd = Path(working_dir)
    if wd.is_dir():
        return wd
    path = root / working_dir.lstrip("/")
    path.mkdir(parents=True, exist_ok=True)
    return path


def remove_pod_dir(home: Home, pod: Mapping[str, Any]) -> None:
    """Delete the pod's directory (emptyDir data, written configMaps, symlinks). Symlinked
    hostPath and PVC targets are left alone: rmtree does not follow symlinks."""
    shutil.rmtree(pod_dir(home, pod), ignore_errors=True)
