"""``kubehpc apply -f``: kubectl's client-side apply and its messages."""

from __future__ import annotations

from pathlib import Path

from cli_harness import Kubehpc, run_subprocess

from kubehpc.api.errors import NotFound
from kubehpc.cli.apply import last_applied_json
from kubehpc.kube.rest import RestClient

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl
        command: ["perl", "-e", "print 1"]
"""

CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: {mode}
"""


def manifest(tmp_path: Path, text: str, name: str = "m.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_apply_of_a_new_object_prints_created(kubehpc: Kubehpc, tmp_path: Path) -> None:
    result = kubehpc("apply", "-f", manifest(tmp_path, JOB))
    assert (result.code, result.out) == (0, "job.batch/pi created\n")


def test_apply_of_the_same_file_again_prints_unchanged(kubehpc: Kubehpc, tmp_path: Path) -> None:
    path = manifest(tmp_path, JOB)
    kubehpc("apply", "-f", path)
    assert kubehpc("apply", "-f", path).out == "job.batch/pi unchanged\n"


def test_apply_of_a_changed_file_prints_configured_and_stores_the_change(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    kubehpc("apply", "-f", manifest(tmp_path, CONFIG.format(mode="fast")))
    result = kubehpc("apply", "-f", manifest(tmp_path, CONFIG.format(mode="safe")))
    assert result.out == "configmap/settings configured\n"
    assert api.get("v1", "ConfigMap", "settings", namespace)["data"] == {"mode": "safe"}


def test_a_field_removed_from_the_file_is_removed_from_the_object(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    kubehpc("apply", "-f", manifest(tmp_path, CONFIG.format(mode="fast") + "  extra: yes-please\n"))
    kubehpc("apply", "-f", manifest(tmp_path, CONFIG.format(mode="fast")))
    assert api.get("v1", "ConfigMap", "settings", namespace)["data"] == {"mode": "fast"}


def test_apply_keeps_fields_set_by_others(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    kubehpc("apply", "-f", manifest(tmp_path, CONFIG.format(mode="fast")))
    api.patch("v1", "ConfigMap", "settings", {"metadata": {"labels": {"owner": "ops"}}}, namespace=namespace)
    kubehpc("apply", "-f", manifest(tmp_path, CONFIG.format(mode="safe")))
    assert api.get("v1", "ConfigMap", "settings", namespace)["metadata"]["labels"] == {"owner": "ops"}


def test_apply_records_the_last_applied_configuration_as_kubectl_does(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    kubehpc("apply", "-f", manifest(tmp_path, CONFIG.format(mode="fast")))
    annotations = api.get("v1", "ConfigMap", "settings", namespace)["metadata"]["annotations"]
    assert '"data":{"mode":"fast"}' in annotations["kubectl.kubernetes.io/last-applied-configuration"]


def test_a_bad_document_is_reported_by_file_doc_and_field_and_not_stored(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    bad = JOB.replace("image: perl", "image: perl\n        resources: {limits: {memory: 8Gx}}")
    path = manifest(tmp_path, CONFIG.format(mode="fast") + "---\n" + bad, "job.yaml")
    result = kubehpc("apply", "-f", path)
    assert result.code == 1
    assert f"{path} doc 2: spec.template.spec.containers[0].resources.limits.memory:" in result.err
    assert "8Gx" in result.err
    try:
        api.get("batch/v1", "Job", "pi", namespace)
        raise AssertionError("the bad Job was stored")
    except NotFound:
        pass


def test_malformed_yaml_applies_nothing(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    path = manifest(tmp_path, CONFIG.format(mode="fast") + "---\nkind: [unclosed\n", "broken.yaml")
    result = kubehpc("apply", "-f", path)
    assert result.code == 1
    assert f"{path} doc 2" in result.err
    assert api.list("v1", "ConfigMap").items == [] or all(
        o["metadata"]["namespace"] != namespace for o in api.list("v1", "ConfigMap").items
    )


def test_apply_reads_stdin_with_dash(kubehpc: Kubehpc) -> None:
    assert kubehpc("apply", "-f", "-", stdin=JOB).out == "job.batch/pi created\n"


def test_client_dry_run_stores_nothing(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    result = kubehpc("apply", "-f", manifest(tmp_path, JOB), "--dry-run=client")
    assert result.out == "job.batch/pi created (dry run)\n"
    assert api.list("batch/v1", "Job").items == [] or all(
        o["metadata"]["namespace"] != namespace for o in api.list("batch/v1", "Job").items
    )


def test_apply_with_no_control_plane_starts_one_and_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    try:
        result = run_subprocess(home, "apply", "-f", manifest(tmp_path, JOB))
        assert result.code == 0, result.err
        assert "starting one" in result.err
        assert result.out == "job.batch/pi created\n"
    finally:
        run_subprocess(home, "down")


def test_server_dry_run_is_checked_by_the_server_but_not_stored(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    result = kubehpc("apply", "-f", manifest(tmp_path, JOB), "--dry-run=server")
    assert result.out == "job.batch/pi created (server dry run)\n"
    try:
        api.get("batch/v1", "Job", "pi", namespace)
        raise AssertionError("a server dry run stored the Job")
    except NotFound:
        pass


def test_the_last_applied_annotation_is_byte_for_byte_kubectls() -> None:
    # What kubectl 1.32 wrote for this object: an emptied annotations map stays, keys sorted,
    # HTML characters escaped as Go does, a newline at the end.
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm2", "namespace": "default"}}
    obj["data"] = {"a": "1", "b": "x<y"}
    assert last_applied_json(obj) == (
        '{"apiVersion":"v1","data":{"a":"1","b":"x\\u003cy"},"kind":"ConfigMap",'
        '"metadata":{"annotations":{},"name":"cm2","namespace":"default"}}\n'
    )


def test_a_bad_item_of_a_list_document_is_named_by_its_index(kubehpc: Kubehpc, tmp_path: Path) -> None:
    items = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: good}}\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: Bad_Name}}\n"
    )
    path = manifest(tmp_path, items, "list.yaml")
    result = kubehpc("apply", "-f", path)
    assert result.code == 1
    assert result.out == ""  # the whole file is refused: its good item is not stored either
    assert result.err.startswith(f"{path} doc 1: items[1].metadata.name: ")


def test_apply_of_an_object_without_a_name_names_the_missing_field(kubehpc: Kubehpc, tmp_path: Path) -> None:
    nameless = CONFIG.format(mode="fast").replace("  name: settings\n", "  generateName: settings-\n")
    path = manifest(tmp_path, nameless, "cm.yaml")
    result = kubehpc("apply", "-f", path)
    assert result.code == 1
    assert f"{path} doc 1: metadata.name: Required value: name is required" in result.err
    assert "generateName" in result.err


def test_apply_of_an_unknown_kind_lists_what_the_server_serves(kubehpc: Kubehpc, tmp_path: Path) -> None:
    path = manifest(tmp_path, "apiVersion: v1\nkind: Gizmo\nmetadata: {name: g}\n", "g.yaml")
    result = kubehpc("apply", "-f", path)
    assert result.code == 1
    assert 'no matches for kind "Gizmo" in version "v1"' in result.err
    assert "batch/v1 Job" in result.err and "v1 Pod" in result.err
