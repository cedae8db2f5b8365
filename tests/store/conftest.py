"""Fixtures of the store tests. ``registry`` runs every test twice: against the small registry
of :mod:`storekit` and against the real kinds of ``kubehpc.api.kinds.core``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from storekit import small_registry

from kubehpc.api.registry import Registry
from kubehpc.store.store import Store


@pytest.fixture(params=["small", "core"])
def registry(request: pytest.FixtureRequest) -> Registry:
    if request.param == "small":
        return small_registry()
    from kubehpc.api.kinds import build_registry

    core = build_registry(("kubehpc.api.kinds.core",))
    # the custom kind of these tests lives beside the real built-ins
    core.register(small_registry().get("widgets.example.com"))
    return core


@pytest.fixture
def store(registry: Registry) -> Iterator[Store]:
    s = Store(registry, None, bookmark_interval=0.05)
    yield s
    s.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"
