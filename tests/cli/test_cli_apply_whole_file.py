"""``kubehpc apply -f`` and bad input: a file with a field mistake is refused as a whole (none
of its objects is stored, so fixing it and applying again starts clean), and a mistyped kind is
answered with the kinds it is nearest to."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kubehpc.api.errors import NotFound
from kubehpc.cli.main import main
from kubehpc.kube.rest import RestClient
from kubehpc.store.home import Home

CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
"""

JOB_WITH_BAD_QUANTITY = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: solver
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: solver
        image: solver
        command: ["true"]
        resources: {limits: {cpu: 2x}}
"""


def test_a_file_with_one_invalid_document_stores_none_of_its_objects(
    kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(CONFIG + "---\n" + JOB_WITH_BAD_QUANTITY)
    result = kubehpc("apply", "-f", str(path))
    assert result.code == 1
    assert f"{path} doc 2: spec.template.spec.containers[0].resources.limits.cpu:" in result.err
    assert "nothing was applied" in result.err
    assert result.out == ""
    with pytest.raises(NotFound):
        api.get("v1", "ConfigMap", "settings", namespace)


def test_a_namespace_and_the_objects_in_it_still_apply_from_one_file(
    control_plane: Home, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    fresh = f"{namespace}-made"
    path = tmp_path / "with-namespace.yaml"
    path.write_text(
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {fresh}}}\n---\n"
        + CONFIG.replace("name: settings", f"name: settings\n  namespace: {fresh}")
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(["--home", str(control_plane.root), "apply", "-f", str(path)], stdout=out, stderr=err)
    assert (code, out.getvalue()) == (0, f"namespace/{fresh} created\nconfigmap/settings created\n"), (
        err.getvalue()
    )
    assert api.get("v1", "ConfigMap", "settings", fresh)["data"] == {"mode": "fast"}


def test_a_mistyped_kind_is_answered_with_the_served_kind_it_is_nearest_to(
    kubehpc, namespace: str, tmp_path: Path
) -> None:
    path = tmp_path / "queue.yaml"
    path.write_text("apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueeu\nmetadata: {name: q}\n")
    result = kubehpc("apply", "-f", str(path))
    assert result.code == 1
    assert 'no matches for kind "LocalQueeu"' in result.err
    assert "did you mean LocalQueue (kueue.x-k8s.io/v1beta2)?" in result.err
