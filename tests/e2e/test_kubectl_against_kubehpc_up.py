"""The real kubectl against `kubehpc up` (store, controllers, scheduler and node agent running):
every kubectl command issue 2 names, on objects that really run."""

from __future__ import annotations

import json
import subprocess
import textwrap
import threading
import time

import pytest
import yaml
from e2ekit import KUBECTL, Plane

pytestmark = pytest.mark.kubectl


def job_yaml(name: str, command: str, *, completions: int = 1, labels: str = "app: demo") -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: {name}
          labels: {{{labels}}}
        spec:
          completions: {completions}
          parallelism: {completions}
          template:
            spec:
              restartPolicy: Never
              containers:
              - name: main
                image: busybox:1.36
                command: ["sh", "-c", {json.dumps(command)}]
                resources:
                  requests: {{cpu: 100m, memory: 32Mi}}
        """
    )


def apply(plane: Plane, text: str, *args: str) -> str:
    return plane.kubectl("apply", "-f", "-", *args, stdin=text)


def test_apply_creates_then_configures_then_reports_unchanged(plane: Plane) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n"
    assert apply(plane, cm).strip() == "configmap/settings created"
    assert apply(plane, cm.replace("fast", "safe")).strip() == "configmap/settings configured"
    assert apply(plane, cm.replace("fast", "safe")).strip() == "configmap/settings unchanged"
    assert json.loads(plane.kubectl("get", "cm", "settings", "-o", "json"))["data"] == {"mode": "safe"}


def test_apply_rejects_a_misspelt_field_by_path_and_stores_nothing(plane: Plane) -> None:
    bad = job_yaml("typo", "true").replace("restartPolicy", "restartPolicyy")
    out = plane.kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert "restartPolicyy" in out
    assert "NotFound" in plane.kubectl("get", "job", "typo", check=False)


def test_a_job_runs_to_completion_and_wait_sees_it(plane: Plane) -> None:
    apply(plane, job_yaml("hello", "echo hello from $HOSTNAME", completions=2))
    out = plane.kubectl("wait", "job/hello", "--for=condition=Complete", "--timeout=60s")
    assert "job.batch/hello condition met" in out
    table = plane.kubectl("get", "job", "hello")
    assert "Complete" in table and "2/2" in table


def test_get_prints_tables_wide_yaml_json_and_selects_by_label(plane: Plane) -> None:
    apply(plane, job_yaml("formats", "true", labels="app: formats"))
    plane.kubectl("wait", "job/formats", "--for=condition=Complete", "--timeout=60s")
    header = plane.kubectl("get", "pods", "-l", "job-name=formats").splitlines()[0].split()
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    wide = plane.kubectl("get", "pods", "-l", "job-name=formats", "-o", "wide")
    assert "NODE" in wide.splitlines()[0] and "cpu-" in wide
    assert yaml.safe_load(plane.kubectl("get", "job", "formats", "-o", "yaml"))["kind"] == "Job"
    listed = json.loads(plane.kubectl("get", "jobs", "-l", "app=formats", "-o", "json"))
    assert [j["metadata"]["name"] for j in listed["items"]] == ["formats"]
    everywhere = plane.kubectl("get", "namespaces", "-A")
    assert "kube-system" in everywhere
    all_pods = plane.kubectl("get", "pods", "-A")
    assert all_pods.splitlines()[0].split()[0] == "NAMESPACE"


def test_get_watch_streams_later_changes(plane: Plane) -> None:
    watcher = subprocess.Popen(
        [KUBECTL, "--cache-dir", str(plane.home / "kubectl-cache"), "get", "configmaps", "-w"],
        env={"KUBECONFIG": str(plane.kubeconfig), "PATH": "/usr/bin:/bin", "HOME": str(plane.home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        apply(plane, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched}\ndata: {a: b}\n")
        deadline = time.monotonic() + 20
        seen = ""
        assert watcher.stdout is not None
        while time.monotonic() < deadline and "watched" not in seen:
            seen += watcher.stdout.readline()
        assert "watched" in seen
    finally:
        watcher.terminate()
        watcher.wait(10)


def test_describe_shows_the_job_controllers_events(plane: Plane) -> None:
    apply(plane, job_yaml("described", "true"))
    plane.kubectl("wait", "job/described", "--for=condition=Complete", "--timeout=60s")
    out = plane.kubectl("describe", "job", "described")
    assert "SuccessfulCreate" in out and "Created pod: described-" in out
    pod = plane.kubectl("get", "pods", "-l", "job-name=described", "-o", "name").split()[0]
    assert "Scheduled" in plane.kubectl("describe", pod)


def test_logs_print_and_follow_a_running_pod(plane: Plane) -> None:
    apply(plane, job_yaml("talker", "echo one; sleep 2; echo two"))
    plane.kubectl("wait", "pod", "-l", "job-name=talker", "--for=condition=Ready", "--timeout=60s")
    pod = plane.kubectl("get", "pods", "-l", "job-name=talker", "-o", "name").split()[0]
    assert plane.kubectl("logs", "-f", pod, timeout=60) == "one\ntwo\n"
    assert plane.kubectl("logs", "job/talker") == "one\ntwo\n"


def test_delete_cascade_foreground_removes_the_pods_before_the_job(plane: Plane) -> None:
    apply(plane, job_yaml("fg", "sleep 30"))
    plane.kubectl("wait", "pod", "-l", "job-name=fg", "--for=condition=Ready", "--timeout=60s")
    out = plane.kubectl("delete", "job", "fg", "--cascade=foreground", timeout=90)
    assert 'job.batch "fg" deleted' in out
    assert plane.kubectl("get", "pods", "-l", "job-name=fg", "-o", "name").strip() == ""


def test_delete_cascade_orphan_leaves_the_pods(plane: Plane) -> None:
    apply(plane, job_yaml("orphaned", "true"))
    plane.kubectl("wait", "job/orphaned", "--for=condition=Complete", "--timeout=60s")
    plane.kubectl("delete", "job", "orphaned", "--cascade=orphan", timeout=60)
    pods = json.loads(plane.kubectl("get", "pods", "-l", "job-name=orphaned", "-o", "json"))["items"]
    assert len(pods) == 1 and not pods[0]["metadata"].get("ownerReferences")


def test_create_patch_label_annotate_and_get_raw(plane: Plane) -> None:
    assert "namespace/team-a created" in plane.kubectl("create", "namespace", "team-a")
    plane.kubectl("create", "configmap", "knobs", "-n", "team-a", "--from-literal=x=1")
    plane.kubectl("patch", "configmap", "knobs", "-n", "team-a", "-p", '{"data":{"y":"2"}}')
    plane.kubectl("patch", "configmap", "knobs", "-n", "team-a", "--type=merge", "-p", '{"data":{"z":"3"}}')
    remove_x = '[{"op":"remove","path":"/data/x"}]'
    plane.kubectl("patch", "configmap", "knobs", "-n", "team-a", "--type=json", "-p", remove_x)
    plane.kubectl("label", "configmap", "knobs", "-n", "team-a", "tier=gold")
    plane.kubectl("annotate", "configmap", "knobs", "-n", "team-a", "owner=alice")
    cm = json.loads(plane.kubectl("get", "configmap", "knobs", "-n", "team-a", "-o", "json"))
    assert cm["data"] == {"y": "2", "z": "3"}
    assert cm["metadata"]["labels"]["tier"] == "gold"
    assert cm["metadata"]["annotations"]["owner"] == "alice"
    raw = json.loads(plane.kubectl("get", "--raw", "/api/v1/namespaces/team-a/configmaps/knobs"))
    assert raw["metadata"]["name"] == "knobs"


def test_the_official_python_client_lists_and_watches(plane: Plane) -> None:
    from kubernetes import client, config, watch

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(plane.kubeconfig)))
    listed = api.list_namespaced_config_map("default")
    start_rv = listed.metadata.resource_version

    def create_later() -> None:
        time.sleep(1)
        body = {"metadata": {"name": "from-python"}, "data": {"k": "v"}}
        api.create_namespaced_config_map("default", body)

    threading.Thread(target=create_later, daemon=True).start()
    names = []
    for event in watch.Watch().stream(
        api.list_namespaced_config_map, "default", resource_version=start_rv, timeout_seconds=15
    ):
        names.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "from-python":
            break
    assert ("ADDED", "from-python") in names
