"""MPIJob fixtures: one real `kubehpc up` for the module (see mpikit)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mpikit import KUBECTL, Plane, drain


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    if not Path(KUBECTL).exists():
        pytest.fail(f"{KUBECTL} is missing: `make test` installs it (scripts/system-deps.sh)")
    p = Plane(tmp_path_factory.mktemp("mpi") / "home").start()
    try:
        yield p
    finally:
        drain(p.kubeconfig)
        p.stop()
