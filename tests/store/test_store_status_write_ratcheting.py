"""A status write changes the status alone, so it is validated as the API server validates it:
the status against the schema, while the rest of the object, the stored version's own, is not
checked again (the built-in kinds' status strategies validate the status only; a custom
resource's unchanged fields are ratcheted). A stored spec that today's rules refuse (written
before a rule was added) does not block the controller writing the status; a write that
changes the spec is checked in full."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import default_registry
from kubehpc.api.registry import FieldValidation
from kubehpc.store.store import Store

Obj = dict[str, Any]


def job() -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
            }
        },
    }


def workload() -> Obj:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


def break_stored_spec(db: Path, resource: str, name: str, change: Callable[[Obj], None]) -> None:
    """Edit the stored object's current row behind the store's back, as data written under older
    rules."""
    with sqlite3.connect(db) as conn:
        rv, data = conn.execute(
            "SELECT rv, data FROM events WHERE resource = ? AND name = ? ORDER BY rv DESC LIMIT 1",
            (resource, name),
        ).fetchone()
        obj = orjson.loads(data)
        change(obj["spec"])
        conn.execute("UPDATE events SET data = ? WHERE rv = ?", (orjson.dumps(obj), rv))


def negative_parallelism(spec: Obj) -> None:
    spec["parallelism"] = -1


def bad_template_quantity(spec: Obj) -> None:
    spec["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"


@dataclass(frozen=True)
class Case:
    make: Callable[[], Obj]
    resource: str
    name: str
    breaks: Callable[[Obj], None]
    status: Obj
    field: str


CASES = [
    Case(job, "jobs.batch", "j", negative_parallelism, {"active": 1}, "spec.parallelism"),
    Case(
        workload,
        "workloads.kueue.x-k8s.io",
        "w",
        bad_template_quantity,
        {"conditions": []},
        "spec.podSets[0].template.spec.containers[0].resources.requests.cpu",
    ),
]


@pytest.fixture(params=CASES, ids=lambda case: case.resource)
def case(request: pytest.FixtureRequest) -> Case:
    given: Case = request.param
    return given


def reopened_with_a_broken_spec(tmp_path: Path, case: Case) -> tuple[Store, Obj]:
    """A store whose object's spec breaks today's rules, and that object as stored."""
    db = tmp_path / "store.db"
    with Store(default_registry(), db) as store:
        store.create(case.make())
    break_stored_spec(db, case.resource, case.name, case.breaks)
    store = Store(default_registry(), db)
    obj = case.make()
    return store, store.get(obj["apiVersion"], obj["kind"], case.name, "default")


def test_a_status_write_does_not_check_the_stored_spec_again(tmp_path: Path, case: Case) -> None:
    store, current = reopened_with_a_broken_spec(tmp_path, case)
    with store:
        written = store.update_status({**current, "status": case.status})
    assert written["status"] == case.status


def test_a_write_of_the_whole_object_checks_the_stored_spec(tmp_path: Path, case: Case) -> None:
    store, current = reopened_with_a_broken_spec(tmp_path, case)
    current["metadata"]["labels"] = {"touched": "yes"}
    with store, pytest.raises(Invalid) as err:
        store.update(current)
    assert case.field in str(err.value)


def test_a_status_write_still_checks_the_status() -> None:
    store = Store(default_registry(), None)
    try:
        created = store.create(job())
        with pytest.raises(Invalid, match=r"status\.active"):
            store.update_status({**created, "status": {"active": "many"}})
    finally:
        store.close()


def test_a_built_in_validator_skips_only_the_fields_it_is_told_are_unchanged() -> None:
    validate = default_registry().for_kind("batch/v1", "Job")[1].validate
    bad = job()
    negative_parallelism(bad["spec"])
    bad["status"] = {"active": 1}
    assert validate(bad, FieldValidation.STRICT, unchanged=frozenset({"spec"})) == []
    with pytest.raises(Invalid, match=r"spec\.parallelism"):
        validate(bad, FieldValidation.STRICT)
    bad["status"] = {"active": "many"}
    with pytest.raises(Invalid, match=r"status\.active"):
        validate(bad, FieldValidation.STRICT, unchanged=frozenset({"spec"}))
