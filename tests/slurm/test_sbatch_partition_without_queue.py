"""sbatch -p NAME where NAME maps to a LocalQueue the namespace lacks: the job is taken (the
queue may come later, as in Kueue) but sbatch says it will wait, instead of leaving the user
with a job pending on "Priority" and nothing else to go on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmclusterkit import cli

from kubehpc.api.kinds import build_registry
from kubehpc.store.store import Store

WARNING = "sbatch: warning: partition gpu: namespace default has no LocalQueue gpu"


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


@pytest.fixture
def job_sh(tmp_path: Path) -> Path:
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/bash\n#SBATCH -p gpu\necho hi\n")
    return path


def sbatch(store: Store, *argv: str) -> tuple[int, str, str]:
    return cli(store, "sbatch", "--namespace", "default", *argv)


def test_a_partition_without_its_local_queue_is_submitted_with_a_warning(store: Store, job_sh: Path) -> None:
    code, out, err = sbatch(store, str(job_sh))
    assert (code, out) == (0, "Submitted batch job 1\n")
    assert WARNING in err


def test_a_partition_whose_local_queue_exists_is_submitted_quietly(store: Store, job_sh: Path) -> None:
    store.create(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "gpu", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        }
    )
    code, _, err = sbatch(store, str(job_sh))
    assert code == 0
    assert "LocalQueue" not in err
