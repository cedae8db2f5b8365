"""The API server's pod spec rules (``ValidatePodSpec``) remember a spec they found nothing
wrong with, by its JSON and path: the pods of one Job and the Jobs of one template are not
checked again. A spec with problems is checked, and its causes reported, on every write."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubehpc.api.kinds import core_validation

Obj = dict[str, Any]

GOOD: Obj = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
NO_IMAGE: Obj = {"restartPolicy": "Never", "containers": [{"name": "main"}]}


@pytest.fixture(autouse=True)
def remembered(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[bytes, str], None]:
    fresh: dict[tuple[bytes, str], None] = {}
    monkeypatch.setattr(core_validation, "_CLEAN_POD_SPECS", fresh)
    return fresh


def test_a_clean_spec_is_remembered_with_the_path_it_was_checked_at(
    remembered: dict[tuple[bytes, str], None],
) -> None:
    for path in ("spec", "spec.template.spec"):
        assert core_validation.pod_spec_causes(GOOD, path) == []
    assert set(remembered) == {(orjson.dumps(GOOD), "spec"), (orjson.dumps(GOOD), "spec.template.spec")}


def test_a_remembered_spec_is_not_checked_again(remembered: dict[tuple[bytes, str], None]) -> None:
    # Only a spec found clean is ever remembered; one planted here shows the rules are skipped.
    remembered[(orjson.dumps(NO_IMAGE), "spec")] = None
    assert core_validation.pod_spec_causes(NO_IMAGE, "spec") == []


def test_a_spec_with_problems_is_reported_at_its_path_on_every_write(
    remembered: dict[tuple[bytes, str], None],
) -> None:
    for path in ("spec", "spec", "spec.template.spec"):
        (cause,) = core_validation.pod_spec_causes(NO_IMAGE, path)
        assert cause.field == f"{path}.containers[0].image"
    assert remembered == {}


def test_the_remembered_specs_are_bounded(
    remembered: dict[tuple[bytes, str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core_validation, "_CLEAN_POD_SPECS_MAX", 3)
    for i in range(10):
        spec = {"restartPolicy": "Never", "containers": [{"name": f"c{i}", "image": "busybox"}]}
        assert core_validation.pod_spec_causes(spec, "spec") == []
    assert 0 < len(remembered) <= 3
