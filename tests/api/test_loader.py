"""Manifests load from YAML and JSON files, directories and stdin; bad input names file, doc and field."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kubehpc.api.kinds import build_registry
from kubehpc.api.loader import ManifestError, check_document, load_documents
from kubehpc.api.registry import FieldValidation, Registry

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
      - name: solver
        image: solver:v1
        resources:
          limits:
            memory: {memory}
      restartPolicy: Never
"""
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"


@pytest.fixture(scope="module")
def registry() -> Registry:
    return build_registry(("kubehpc.api.kinds.core",))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_multi_document_yaml_counts_documents_from_one(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.yaml", CM.format(name="a") + "---\n" + CM.format(name="b"))
    docs = load_documents([path])
    assert [(d.index, d.obj["metadata"]["name"]) for d in docs] == [(1, "a"), (2, "b")]
    assert docs[0].source == str(path)


def test_empty_and_comment_only_documents_are_skipped_but_keep_their_number(tmp_path: Path) -> None:
    text = (
        "# leading comment\n---\n"
        + CM.format(name="a")
        + "---\n# only a comment\n---\n"
        + CM.format(name="b")
        + "---\n"
    )
    docs = load_documents([_write(tmp_path, "a.yaml", text)])
    assert [(d.index, d.obj["metadata"]["name"]) for d in docs] == [(1, "a"), (3, "b")]


def test_json_objects_load_one_document_each(tmp_path: Path) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    path = _write(tmp_path, "a.json", json.dumps(obj) + "\n" + json.dumps(obj | {"metadata": {"name": "b"}}))
    assert [d.obj["metadata"]["name"] for d in load_documents([path])] == ["a", "b"]


def test_list_kinds_expand_to_their_items(tmp_path: Path) -> None:
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}} for n in ("a", "b")]
    path = _write(tmp_path, "l.yaml", json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    docs = load_documents([path])
    assert [(d.index, d.item, d.obj["metadata"]["name"]) for d in docs] == [(1, 0, "a"), (1, 1, "b")]


def test_typed_lists_expand_too(tmp_path: Path) -> None:
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]
    path = _write(
        tmp_path, "l.yaml", json.dumps({"apiVersion": "v1", "kind": "ConfigMapList", "items": items})
    )
    assert [d.obj["kind"] for d in load_documents([path])] == ["ConfigMap"]


def test_directories_load_manifest_files_in_name_order(tmp_path: Path) -> None:
    _write(tmp_path, "d/b.yml", CM.format(name="b"))
    _write(tmp_path, "d/a.yaml", CM.format(name="a"))
    _write(
        tmp_path, "d/c.json", json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    )
    _write(tmp_path, "d/readme.txt", "not a manifest")
    _write(tmp_path, "d/sub/e.yaml", CM.format(name="e"))
    assert [d.obj["metadata"]["name"] for d in load_documents([tmp_path / "d"])] == ["a", "b", "c"]
    assert [d.obj["metadata"]["name"] for d in load_documents([tmp_path / "d"], recursive=True)] == [
        "a",
        "b",
        "c",
        "e",
    ]


def test_dash_reads_stdin() -> None:
    docs = load_documents(["-"], stdin=io.StringIO(CM.format(name="a")))
    assert [(d.source, d.obj["metadata"]["name"]) for d in docs] == [("<stdin>", "a")]


def test_malformed_yaml_names_file_document_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.yaml", CM.format(name="a") + "---\nkind: ConfigMap\nmetadata: {name: [\n")
    with pytest.raises(ManifestError) as err:
        load_documents([path])
    assert str(err.value).startswith(f"{path} doc 2: invalid YAML at line ")


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.json", '{"apiVersion": "v1",\n "kind": }')
    with pytest.raises(ManifestError) as err:
        load_documents([path])
    assert str(err.value).startswith(f"{path} doc 1: invalid JSON at line 2, column 10")


def test_missing_kind_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.yaml", "apiVersion: v1\nmetadata:\n  name: a\n")
    with pytest.raises(ManifestError) as err:
        load_documents([path])
    assert str(err.value) == f"{path} doc 1: kind: Required value: kind must be set"


def test_a_document_that_is_not_an_object_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="expected an object"):
        load_documents([_write(tmp_path, "a.yaml", "- a\n- b\n")])


def test_missing_file_is_named() -> None:
    with pytest.raises(ManifestError, match="no such file"):
        load_documents(["/nonexistent/job.yaml"])


def test_yaml_1_1_booleans_are_booleans_and_timestamps_stay_strings() -> None:
    docs = load_documents(
        ["-"], stdin="apiVersion: v1\nkind: ConfigMap\ndata:\n  a: yes\n  b: n\n  c: 2024-01-01\n  on: x\n"
    )
    data = docs[0].obj["data"]
    assert (data["a"], data["b"], data["c"], data["true"]) == (True, False, "2024-01-01", "x")


def test_bad_quantity_error_reads_exactly_as_in_the_issue(tmp_path: Path, registry: Registry) -> None:
    text = JOB.format(name="ok", memory="8Gi") + "---\n" + JOB.format(name="bad", memory="8Gx")
    path = _write(tmp_path, "job.yaml", text)
    docs = load_documents([path])
    assert check_document(docs[0], registry) == []
    with pytest.raises(ManifestError) as err:
        check_document(docs[1], registry)
    assert str(err.value) == (
        f'{path} doc 2: spec.template.spec.containers[0].resources.limits.memory: invalid quantity "8Gx"'
    )
    assert (err.value.index, err.value.field_path) == (
        2,
        "spec.template.spec.containers[0].resources.limits.memory",
    )


def test_unknown_kind_lists_what_is_supported(tmp_path: Path, registry: Registry) -> None:
    (doc,) = load_documents(
        [_write(tmp_path, "a.yaml", "apiVersion: v1\nkind: Gizmo\nmetadata: {name: a}\n")]
    )
    with pytest.raises(ManifestError) as err:
        check_document(doc, registry)
    message = str(err.value)
    assert message.startswith(
        f'{tmp_path}/a.yaml doc 1: no kind "Gizmo" is registered for version "v1"; supported: '
    )
    assert "batch/v1 Job" in message and "v1 Pod" in message


def test_invalid_name_is_named_with_its_field(tmp_path: Path, registry: Registry) -> None:
    (doc,) = load_documents([_write(tmp_path, "a.yaml", CM.format(name="Bad_Name"))])
    with pytest.raises(ManifestError) as err:
        check_document(doc, registry)
    assert str(err.value).startswith(f'{tmp_path}/a.yaml doc 1: metadata.name: Invalid value: "Bad_Name": ')


def test_errors_inside_a_list_name_the_item(tmp_path: Path, registry: Registry) -> None:
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "dta": {}}]
    (doc,) = load_documents(
        [_write(tmp_path, "l.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))]
    )
    with pytest.raises(ManifestError) as err:
        check_document(doc, registry)
    assert err.value.field_path == "items[0].dta"


def test_warn_mode_returns_prefixed_warnings(tmp_path: Path, registry: Registry) -> None:
    (doc,) = load_documents([_write(tmp_path, "a.yaml", CM.format(name="a") + "extra: 1\n")])
    assert check_document(doc, registry, FieldValidation.WARN) == [
        f'{tmp_path}/a.yaml doc 1: unknown field "extra"'
    ]


def test_several_problems_are_reported_one_per_line(tmp_path: Path, registry: Registry) -> None:
    (doc,) = load_documents([_write(tmp_path, "a.yaml", CM.format(name="a") + "extra: 1\nmore: 2\n")])
    with pytest.raises(ManifestError) as err:
        check_document(doc, registry)
    assert str(err.value).splitlines() == [
        f'{tmp_path}/a.yaml doc 1: extra: unknown field "extra"',
        f'{tmp_path}/a.yaml doc 1: more: unknown field "more"',
    ]


def test_check_document_does_not_modify_the_document(tmp_path: Path, registry: Registry) -> None:
    (doc,) = load_documents([_write(tmp_path, "job.yaml", JOB.format(name="a", memory="1Gi"))])
    before = json.dumps(doc.obj, sort_keys=True)
    check_document(doc, registry)
    assert json.dumps(doc.obj, sort_keys=True) == before


def test_a_yaml_flow_mapping_is_not_mistaken_for_json(tmp_path: Path) -> None:
    path = _write(tmp_path, "flow.yaml", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a},}\n")
    assert [d.obj["metadata"]["name"] for d in load_documents([path])] == ["a"]


def test_json_on_stdin_is_read_as_json() -> None:
    docs = load_documents(["-"], stdin='{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}')
    assert docs[0].obj["kind"] == "ConfigMap"


def test_a_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + CM.format(name="a").encode())
    assert load_documents([path])[0].obj["apiVersion"] == "v1"
