"""``kubehpc sbatch`` submitting for real (to a store, through the real command line): the reply
sbatch gives, ids handed out in order (an array takes one per task), warnings that name what
kubehpc does not honour, and nothing left behind when a submission fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmclusterkit import cli

from kubehpc.api.kinds import build_registry
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


def sbatch(store: Store, *argv: str) -> tuple[int, str, str]:
    return cli(store, "sbatch", "--namespace", "default", *argv)


def names(store: Store, kind: str) -> list[str]:
    items = store.list("v1" if kind != "Job" else "batch/v1", kind, ListOptions(namespace="default")).items
    return sorted(o["metadata"]["name"] for o in items)


@pytest.fixture
def job_sh(tmp_path: Path) -> Path:
    path = tmp_path / "job.sh"
    path.write_text(
        "#!/bin/bash\n#SBATCH -J demo\n#SBATCH --frobnicate=3\n#SBATCH --mail-type=END\necho hi\n"
    )
    return path


def test_sbatch_creates_the_objects_and_answers_as_sbatch_does(store: Store, job_sh: Path) -> None:
    code, out, err = sbatch(store, str(job_sh))
    assert (code, out) == (0, "Submitted batch job 1\n"), err
    assert names(store, "Job") == ["slurm-1"] and names(store, "ConfigMap") == ["slurm-1"]
    assert sbatch(store, "-N", "2", str(job_sh))[1] == "Submitted batch job 2\n"
    assert names(store, "Service") == ["slurm-2"]


def test_an_array_reserves_an_id_per_task(store: Store, job_sh: Path) -> None:
    assert sbatch(store, "--array=0-2", str(job_sh))[1] == "Submitted batch job 1\n"
    assert sbatch(store, str(job_sh))[1] == "Submitted batch job 4\n"


def test_parsable_prints_only_the_id(store: Store, job_sh: Path) -> None:
    assert sbatch(store, "--parsable", str(job_sh))[1] == "1\n"


def test_unknown_options_are_named_in_a_warning_and_the_job_is_still_submitted(
    store: Store, job_sh: Path
) -> None:
    code, out, err = sbatch(store, "--also-unknown", str(job_sh))
    assert code == 0 and out.startswith("Submitted batch job")
    assert f"sbatch: warning: {job_sh}: line 3: unknown option --frobnicate=3 ignored" in err
    assert "sbatch: warning: command line: unknown option --also-unknown ignored" in err


def test_options_that_change_meaning_are_listed_with_the_reason(store: Store, job_sh: Path) -> None:
    _, _, err = sbatch(store, "--requeue", str(job_sh))
    assert f"sbatch: note: {job_sh}: line 4: --mail-type=END: no mail is sent" in err
    assert "sbatch: note: command line: --requeue: a failed or preempted job is not requeued" in err


def test_a_bad_directive_creates_nothing(store: Store, tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/bash\n#SBATCH -J ok\n#SBATCH --mem=4X\n")
    code, _, err = sbatch(store, str(bad))
    assert code == 1 and f'{bad}: line 3: --mem: invalid memory size "4X": unknown unit "X"' in err
    assert names(store, "Job") == [] and names(store, "ConfigMap") == []


def test_a_job_that_cannot_be_created_leaves_no_script_behind(store: Store, job_sh: Path) -> None:
    taken = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "slurm-7", "namespace": "default"}}
    taken["spec"] = {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}
    }
    store.create(taken)
    code, _, err = sbatch(store, "--jobid=7", str(job_sh))
    assert code == 1 and 'jobs.batch "slurm-7" already exists' in err
    assert names(store, "ConfigMap") == []
