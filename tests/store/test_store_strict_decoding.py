"""Fields the schema does not know, under Strict field validation (what kubectl sends): the API
server refuses such a request while decoding it — 400 BadRequest, "strict decoding error",
naming only the unknown fields — before it validates anything else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kubehpc.api.errors import BadRequest, Invalid
from kubehpc.api.kinds import default_registry
from kubehpc.store.client import WriteOptions
from kubehpc.store.store import Store

Obj = dict[str, Any]


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(default_registry(), None) as s:
        yield s


def pod(**spec: Any) -> Obj:
    container = {"name": "main", "image": "busybox"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [container], **spec},
    }


def test_an_unknown_field_is_a_strict_decoding_error(store: Store) -> None:
    with pytest.raises(BadRequest) as err:
        store.create(pod(bogus=1))
    assert str(err.value) == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.bogus"'
    )


def test_only_the_unknown_fields_are_named_whatever_else_is_wrong(store: Store) -> None:
    with pytest.raises(BadRequest) as err:
        store.create(pod(bogus=1, restartPolicy="Sometimes", other=2))
    message = str(err.value)
    assert message.endswith('strict decoding error: unknown field "spec.bogus", unknown field "spec.other"')


def test_a_bad_value_without_unknown_fields_is_still_invalid(store: Store) -> None:
    with pytest.raises(Invalid):
        store.create(pod(restartPolicy="Sometimes"))


def test_a_status_write_with_an_unknown_field_is_a_strict_decoding_error(store: Store) -> None:
    created = store.create(pod())
    with pytest.raises(BadRequest, match=r'unknown field "status\.bogus"'):
        store.update_status({**created, "status": {"bogus": 1}})


def test_a_custom_kind_names_its_version(store: Store) -> None:
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": "f"},
        "spec": {"nodeLabelz": {}},
    }
    with pytest.raises(BadRequest) as err:
        store.create(flavor)
    assert str(err.value) == (
        'ResourceFlavor in version "v1beta1" cannot be handled as a ResourceFlavor: '
        'strict decoding error: unknown field "spec.nodeLabelz"'
    )


def test_under_warn_the_unknown_field_is_a_warning_and_dropped(store: Store) -> None:
    out = store.create_result(pod(bogus=1), WriteOptions(field_validation="Warn"))
    assert out.warnings == ['unknown field "spec.bogus"']
    assert "bogus" not in out.object["spec"]
