"""Every sbatch script of shared/samples/sbatch submits (dry run) to objects that the API
accepts under Strict validation, with the resources its directives ask for."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from slurmkit import NOW, container, job

from kubehpc.api.kinds import default_registry
from kubehpc.api.loader import Document, check_document
from kubehpc.api.registry import FieldValidation
from kubehpc.cli.main import main
from kubehpc.slurm.request import Submission, build_request
from kubehpc.slurm.translate import build_objects

# sample -> (pods, cpu per pod, memory per pod, GPUs per pod, time limit in seconds)
EXPECTED: dict[str, tuple[int, str, str | None, str | None, int | None]] = {
    "accelerate-submit-multinode.sh": (4, "160", None, "4", 7140),
    "bigscience-eval-array-step-throttle.slurm": (17, "40", None, "4", 14400),
    "bigscience-tr11-176B-ml.slurm": (24, "64", None, "8", 360000),
    "csc-run-ddp-gpu4.sh": (1, "40", None, "4", 900),
    "curc-mpi-hello.sh": (2, "20", None, None, 120),
    "libe-perlmutter.sh": (1, "1", None, None, 600),
    "megatron-sc21-SRUN.sh": (1, "8", None, None, 1800),
    "mleng-torchrun-launcher.slurm": (2, "96", None, "8", 600),
    "mlperf-ssd-run.sub": (1, "8", None, None, 43200),
    "openr1-train.slurm": (1, "1", None, "8", 259200),
    "princeton-cuda-mpi.slurm": (1, "2", "2Gi", "2", 60),
    "princeton-hybrid-mpi-openmp.slurm": (3, "10", "40Gi", None, 60),
    "princeton-job-array.slurm": (3, "1", "4Gi", None, 60),
    "princeton-pytorch-ddp.slurm": (2, "16", "32Gi", "2", 300),
    "slurmdocker-array_job.sh": (5, "1", None, None, 60),
    "slurmdocker-gpu_test.sh": (1, "1", None, "1", 300),
    "slurmdocker-job_dependency.sh": (1, "1", None, None, 60),
    "torchtitan-multinode.slurm": (4, "96", None, "8", None),
}


def samples(shared_dir: Path) -> list[Path]:
    return sorted((shared_dir / "samples" / "sbatch").iterdir())


def test_the_table_covers_every_sample(shared_dir: Path) -> None:
    assert sorted(p.name for p in samples(shared_dir)) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_sample_script_submits_to_valid_objects_with_its_resources(shared_dir: Path, name: str) -> None:
    path = shared_dir / "samples" / "sbatch" / name
    sub = Submission([str(path)], {"HOME": "/home/u"}, "/home/u/work", "u", "login1", NOW)
    req = build_request(sub, path.read_text(), name)
    objs = build_objects(req, 7, namespace="default", now_iso="2026-12-02T12:00:00Z")
    registry = default_registry()
    for i, obj in enumerate(objs, start=1):
        check_document(Document(name, i, obj), registry, FieldValidation.STRICT)
    pods, cpu, memory, gpus, limit = EXPECTED[name]
    spec = job(objs)["spec"]
    assert spec["completions"] == pods
    res = container(objs)["resources"]["requests"]
    assert res["cpu"] == cpu
    assert res.get("memory") == memory
    assert res.get("nvidia.com/gpu") == gpus
    assert spec.get("activeDeadlineSeconds") == limit
    assert len([o for o in objs if o["kind"] == "Service"]) == (1 if pods > 1 and not req.array else 0)


def test_the_typed_gpu_sample_selects_its_gpu_type(shared_dir: Path) -> None:
    path = shared_dir / "samples" / "sbatch" / "csc-run-ddp-gpu4.sh"
    sub = Submission([str(path)], {}, "/w", "u", "h", NOW)
    objs = build_objects(build_request(sub, path.read_text(), path.name), 7)
    assert job(objs)["spec"]["template"]["spec"]["nodeSelector"] == {"slurm.kubehpc.io/gpu-type": "v100"}


def test_the_eval_array_sample_is_throttled_and_records_its_mail_option(shared_dir: Path) -> None:
    path = shared_dir / "samples" / "sbatch" / "bigscience-eval-array-step-throttle.slurm"
    sub = Submission([str(path)], {}, "/w", "u", "h", NOW)
    req = build_request(sub, path.read_text(), path.name)
    assert req.array is not None and (req.array.count, req.array.throttle) == (17, 26)
    assert {r.option for r in req.recorded} == {"hint", "mail-type"}
    assert req.output == "std-eval-%A_%a.out"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_sample_submits_with_dry_run_o_yaml_on_the_command_line(shared_dir: Path, name: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    path = shared_dir / "samples" / "sbatch" / name
    code = main(["sbatch", "--dry-run", "-o", "yaml", str(path)], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    docs = list(yaml.safe_load_all(out.getvalue()))
    pods, cpu, _, gpus, limit = EXPECTED[name]
    job_doc = next(d for d in docs if d["kind"] == "Job")
    assert job_doc["spec"]["completions"] == pods
    assert job_doc["spec"].get("activeDeadlineSeconds") == limit
    res = job_doc["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert (res["cpu"], res.get("nvidia.com/gpu")) == (cpu, gpus)
    # Whatever kubehpc does not honour is said on stderr, never silently dropped.
    assert all(
        line.startswith(("sbatch: warning: ", "sbatch: note: ")) for line in err.getvalue().splitlines()
    )
