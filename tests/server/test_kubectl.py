"""The real kubectl (/usr/bin/kubectl) against `python -m kubehpc.server` in a subprocess."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from serverkit import ControlPlane

pytestmark = pytest.mark.kubectl


def manifest(tmp_path: Path, name: str, *docs: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def pod(name: str, namespace: str, labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "60"]}]},
    }


def job(name: str, namespace: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "t", "image": "python"}]}}
        },
    }


@pytest.fixture
def ns(control_plane: ControlPlane, request: pytest.FixtureRequest) -> str:
    name = request.node.name.removeprefix("test_").replace("_", "-")[:50].strip("-")
    control_plane.kubectl("create", "namespace", name)
    return name


def test_apply_creates_then_configures_then_is_unchanged(
    control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    first = manifest(tmp_path, "a.yaml", pod("web", ns), job("train", ns))
    changed = manifest(tmp_path, "b.yaml", pod("web", ns, {"app": "web", "tier": "fe"}), job("train", ns))
    out = control_plane.kubectl("apply", "-f", first)
    assert "pod/web created" in out and "job.batch/train created" in out
    out = control_plane.kubectl("apply", "-f", changed)
    assert "pod/web configured" in out and "job.batch/train unchanged" in out
    assert "pod/web unchanged" in control_plane.kubectl("apply", "-f", changed)
    labels = json.loads(control_plane.kubectl("get", "pod", "web", "-n", ns, "-o", "json"))["metadata"][
        "labels"
    ]
    assert labels == {"app": "web", "tier": "fe"}


def test_apply_reports_a_misspelt_field_by_path(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    bad = pod("typo", ns)
    bad["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    out = control_plane.kubectl("apply", "-f", manifest(tmp_path, "bad.yaml", bad), check=False)
    assert 'unknown field "spec.containers[0].imagePullPolicyy"' in out


def test_apply_of_a_kind_nobody_serves_says_so_as_against_any_api_server(
    control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": ns}}
    out = control_plane.kubectl("apply", "-f", manifest(tmp_path, "gadget.yaml", gadget), check=False)
    assert 'no matches for kind "Gadget" in version "example.com/v1"' in out, out
    assert "openapi" not in out


def test_get_prints_a_table(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    lines = control_plane.kubectl("get", "pods", "-n", ns).splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:3] == ["web", "0/1", "Pending"]


def test_get_wide_adds_priority_columns(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    header = control_plane.kubectl("get", "pods", "-n", ns, "-o", "wide").splitlines()[0]
    assert "NODE" in header and "IP" in header


def test_get_yaml_and_json(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    as_yaml = yaml.safe_load(control_plane.kubectl("get", "pod", "web", "-n", ns, "-o", "yaml"))
    as_json = json.loads(control_plane.kubectl("get", "pods", "-n", ns, "-o", "json"))
    assert as_yaml["metadata"]["uid"] == as_json["items"][0]["metadata"]["uid"]


def test_get_with_label_selector_and_all_namespaces(
    control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    docs = [pod("a", ns, {"app": "one"}), pod("b", ns, {"app": "two"})]
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", *docs))
    selected = control_plane.kubectl("get", "pods", "-n", ns, "-l", "app=two", "-o", "name").split()
    assert selected == ["pod/b"]
    everywhere = control_plane.kubectl("get", "pods", "-A")
    assert everywhere.splitlines()[0].split()[0] == "NAMESPACE" and ns in everywhere


def test_get_watch_prints_new_objects(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    path = manifest(tmp_path, "p.yaml", pod("late", ns))

    def create_later() -> None:
        time.sleep(1.5)
        control_plane.kubectl("apply", "-f", path)

    threading.Thread(target=create_later, daemon=True).start()
    out = control_plane.kubectl(
        "get", "pods", "-n", ns, "-w", "--request-timeout=4s", check=False, timeout=20
    )
    assert "late" in out


def test_describe_shows_events(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "j.yaml", job("train", ns)))
    uid = control_plane.kubectl("get", "job", "train", "-n", ns, "-o", "jsonpath={.metadata.uid}")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "train.1", "namespace": ns},
        "involvedObject": {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "namespace": ns,
            "uid": uid,
        },
        "reason": "SuccessfulCreate",
        "message": "Created pod: train-abc",
        "type": "Normal",
        "source": {"component": "job-controller"},
        "count": 1,
    }
    control_plane.kubectl("create", "-f", manifest(tmp_path, "e.yaml", event))
    out = control_plane.kubectl("describe", "job", "train", "-n", ns)
    assert "SuccessfulCreate" in out and "Created pod: train-abc" in out


def test_describe_pod(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    out = control_plane.kubectl("describe", "pod", "web", "-n", ns)
    assert "Name:" in out and "busybox" in out and "Events:" in out


def test_delete_removes_the_object(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    assert 'pod "web" deleted' in control_plane.kubectl("delete", "pod", "web", "-n", ns)
    assert "NotFound" in control_plane.kubectl("get", "pod", "web", "-n", ns, check=False)


def test_delete_cascade_orphan_marks_the_object(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "j.yaml", job("train", ns)))
    out = control_plane.kubectl("delete", "job", "train", "-n", ns, "--cascade=orphan", "--wait=false")
    assert 'job.batch "train" deleted' in out
    meta = json.loads(control_plane.kubectl("get", "job", "train", "-n", ns, "-o", "json"))["metadata"]
    assert meta.get("deletionTimestamp") and "orphan" in meta["finalizers"]


def test_delete_cascade_foreground_marks_the_object(
    control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    # Completing a foreground deletion is the garbage collector's work; the API's part is to
    # keep the object with deletionTimestamp and the foregroundDeletion finalizer.
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "j.yaml", job("train", ns)))
    control_plane.kubectl("delete", "job", "train", "-n", ns, "--cascade=foreground", "--wait=false")
    meta = json.loads(control_plane.kubectl("get", "job", "train", "-n", ns, "-o", "json"))["metadata"]
    assert meta.get("deletionTimestamp") and "foregroundDeletion" in meta["finalizers"]


def write_log(control_plane: ControlPlane, ns: str, pod_name: str, text: str) -> None:
    path = control_plane.home / "logs" / ns / pod_name / "main.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write(text)


def test_logs(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    write_log(control_plane, ns, "web", "hello\nworld\n")
    assert control_plane.kubectl("logs", "web", "-n", ns) == "hello\nworld\n"
    assert control_plane.kubectl("logs", "web", "-n", ns, "--tail=1") == "world\n"


def test_logs_follow_streams_until_the_pod_goes(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    write_log(control_plane, ns, "web", "one\n")

    def later() -> None:
        time.sleep(1)
        write_log(control_plane, ns, "web", "two\n")
        time.sleep(1)
        control_plane.kubectl("delete", "pod", "web", "-n", ns, "--wait=false")

    threading.Thread(target=later, daemon=True).start()
    assert control_plane.kubectl("logs", "-f", "web", "-n", ns, timeout=20) == "one\ntwo\n"


def test_create_namespace_and_configmap(control_plane: ControlPlane, ns: str) -> None:
    # kubectl sends these as Kubernetes protobuf.
    control_plane.kubectl("create", "configmap", "settings", "-n", ns, "--from-literal=a=b")
    data = json.loads(control_plane.kubectl("get", "configmap", "settings", "-n", ns, "-o", "json"))["data"]
    assert data == {"a": "b"}
    assert ns in control_plane.kubectl("get", "namespaces", "-o", "name")


def test_patch_strategic_merge_and_json(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    control_plane.kubectl("patch", "pod", "web", "-n", ns, "-p", '{"metadata":{"labels":{"s":"1"}}}')
    control_plane.kubectl(
        "patch", "pod", "web", "-n", ns, "--type=merge", "-p", '{"metadata":{"labels":{"m":"2"}}}'
    )
    control_plane.kubectl(
        "patch",
        "pod",
        "web",
        "-n",
        ns,
        "--type=json",
        "-p",
        '[{"op":"add","path":"/metadata/labels/j","value":"3"}]',
    )
    labels = json.loads(control_plane.kubectl("get", "pod", "web", "-n", ns, "-o", "json"))["metadata"][
        "labels"
    ]
    assert {"s": "1", "m": "2", "j": "3"}.items() <= labels.items()


def test_label_and_annotate(control_plane: ControlPlane, ns: str, tmp_path: Path) -> None:
    control_plane.kubectl("apply", "-f", manifest(tmp_path, "p.yaml", pod("web", ns)))
    control_plane.kubectl("label", "pod", "web", "-n", ns, "color=red")
    control_plane.kubectl("annotate", "pod", "web", "-n", ns, "note=hi")
    meta = json.loads(control_plane.kubectl("get", "pod", "web", "-n", ns, "-o", "json"))["metadata"]
    assert meta["labels"]["color"] == "red" and meta["annotations"]["note"] == "hi"


def test_get_raw(control_plane: ControlPlane) -> None:
    body = json.loads(control_plane.kubectl("get", "--raw", "/api/v1"))
    assert body["kind"] == "APIResourceList"


def test_without_the_token_kubectl_is_refused(control_plane: ControlPlane, tmp_path: Path) -> None:
    config = yaml.safe_load(control_plane.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "wrong"
    bad = tmp_path / "bad-kubeconfig"
    bad.write_text(yaml.safe_dump(config))
    result = subprocess.run(
        ["/usr/bin/kubectl", "--kubeconfig", str(bad), "get", "pods"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (result.returncode != 0 and "Unauthorized" in result.stderr) or "credentials" in result.stderr


def test_create_priorityclass_sent_as_protobuf(control_plane: ControlPlane) -> None:
    control_plane.kubectl("create", "priorityclass", "kubectl-low", "--value=-5", "--description=spare")
    body = json.loads(control_plane.kubectl("get", "priorityclass", "kubectl-low", "-o", "json"))
    assert (body["value"], body["description"]) == (-5, "spare")


def test_validate_warn_creates_and_prints_the_warning(
    control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    doc = pod("lenient", ns)
    doc["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    out = control_plane.kubectl(
        "apply", "-f", manifest(tmp_path, "w.yaml", doc), "--validate=warn", stderr=True
    )
    assert "pod/lenient created" in out
    assert 'Warning: unknown field "spec.containers[0].imagePullPolicyy"' in out
