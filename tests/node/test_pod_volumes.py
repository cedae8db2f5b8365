"""Volumes as host directories; mounts found through KUBEHPC_ROOT and KUBEHPC_MOUNT_<NAME>."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kubehpc.node.env import ContainerConfigError, PodContext
from kubehpc.node.volumes import container_mounts, host_working_dir, prepare_volumes, remove_pod_dir
from kubehpc.store.home import Home

CTX = PodContext("n0")


def pod(name: str, volumes: list, mounts: list) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}-0000"},
        "spec": {"volumes": volumes, "containers": [{"name": "c", "image": "i", "volumeMounts": mounts}]},
    }


def mounted(home: Home, p: dict, objects: dict | None = None):
    vols = prepare_volumes(home, p, lambda k, ns, n: (objects or {}).get((k, n)), CTX)
    return container_mounts(home, p, p["spec"]["containers"][0], vols)


def test_empty_dir_is_a_fresh_directory_seen_at_the_mount_path(tmp_path):
    home = Home(tmp_path)
    root, env, _ = mounted(
        home, pod("a", [{"name": "scratch", "emptyDir": {}}], [{"name": "scratch", "mountPath": "/scratch"}])
    )
    (Path(env["KUBEHPC_MOUNT_SCRATCH"]) / "f").write_text("x")
    assert (root / "scratch" / "f").read_text() == "x"
    assert env["KUBEHPC_ROOT"] == str(root)


def test_config_map_and_secret_volumes_are_files(tmp_path):
    objects = {
        ("ConfigMap", "cfg"): {"data": {"app.conf": "a=1"}},
        ("Secret", "sec"): {"data": {"key": base64.b64encode(b"k").decode()}},
    }
    vols = [
        {"name": "cfg", "configMap": {"name": "cfg"}},
        {"name": "sec", "secret": {"secretName": "sec", "items": [{"key": "key", "path": "dir/k.txt"}]}},
    ]
    mounts = [{"name": "cfg", "mountPath": "/etc/app"}, {"name": "sec", "mountPath": "/etc/sec"}]
    root, _, _ = mounted(Home(tmp_path), pod("a", vols, mounts), objects)
    assert (root / "etc/app/app.conf").read_text() == "a=1"
    assert (root / "etc/sec/dir/k.txt").read_text() == "k"


def test_a_missing_config_map_volume_keeps_the_pod_waiting(tmp_path):
    with pytest.raises(ContainerConfigError, match='configmap "nope" not found'):
        mounted(Home(tmp_path), pod("a", [{"name": "v", "configMap": {"name": "nope"}}], []))


def test_pods_mounting_one_claim_share_its_directory(tmp_path):
    home = Home(tmp_path)
    vol = [{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]
    _, env_a, _ = mounted(home, pod("a", vol, [{"name": "data", "mountPath": "/data"}]))
    root_b, _, _ = mounted(home, pod("b", vol, [{"name": "data", "mountPath": "/mnt/d"}]))
    (Path(env_a["KUBEHPC_MOUNT_DATA"]) / "result").write_text("42")
    assert (root_b / "mnt/d/result").read_text() == "42"
    assert (home.pvc_dir("ns", "shared") / "result").exists()


def test_sub_path_mounts_a_subdirectory(tmp_path):
    vol = [{"name": "data", "emptyDir": {}}]
    _, env, _ = mounted(
        Home(tmp_path), pod("a", vol, [{"name": "data", "mountPath": "/w", "subPath": "run1"}])
    )
    assert env["KUBEHPC_MOUNT_DATA"].endswith("/volumes/data/run1")


def test_working_dir_inside_a_mount_runs_in_the_mounted_directory(tmp_path):
    vol = [{"name": "work-area", "emptyDir": {}}]
    root, env, mounts = mounted(Home(tmp_path), pod("a", vol, [{"name": "work-area", "mountPath": "/work"}]))
    assert host_working_dir("/work/sub", root, mounts) == Path(env["KUBEHPC_MOUNT_WORK_AREA"]) / "sub"
    assert host_working_dir("/no/such/dir", root, mounts) == root / "no/such/dir"


def test_removing_the_pod_dir_keeps_claim_data(tmp_path):
    home = Home(tmp_path)
    p = pod(
        "a",
        [{"name": "data", "persistentVolumeClaim": {"claimName": "keep"}}],
        [{"name": "data", "mountPath": "/d"}],
    )
    _, env, _ = mounted(home, p)
    (Path(env["KUBEHPC_MOUNT_DATA"]) / "x").write_text("1")
    remove_pod_dir(home, p)
    assert (home.pvc_dir("ns", "keep") / "x").read_text() == "1"
