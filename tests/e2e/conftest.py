"""End-to-end fixtures: the real `kubehpc up` as a subprocess, driven by the real kubectl."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2ekit import KUBECTL, Plane


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    if not Path(KUBECTL).exists():
        pytest.fail(f"{KUBECTL} is missing: `make test` installs it (scripts/system-deps.sh)")
    p = Plane(tmp_path_factory.mktemp("e2e") / "home").start()
    try:
        yield p
    finally:
        p.stop()
